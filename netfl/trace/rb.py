"""Resource-block (RB) occupancy over time, from the timeline's RB allocation events.

The reader expects these timeline rows (documented in :data:`netfl.recorder.timeline.KINDS`)
and ignores everything else:

- ``kind == "rb_allocation"``: a flow's allocation changed; from ``t_s`` on it holds
  ``n_rb`` resource blocks (0 releases them). A flow is identified by ``client`` (-1 for
  background traffic), plus the optional columns ``flow`` (an id telling concurrent flows
  of one client, or several background flows, apart) and ``direction`` (``"ul"`` or
  ``"dl"``; ``"ul"`` when absent).
- Optional column ``n_rb_total`` on those rows: the cell's RBs in that direction, which
  turns RBs in use into a utilisation (it may also be passed as ``n_rb_total=``).

A run whose radio model allocates no RBs (the placeholder ``fixed`` model) has no such
rows; the functions then raise :class:`MissingDataError` saying so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from netfl.errors import MissingDataError

RB_KIND = "rb_allocation"


def rb_events(timeline: pd.DataFrame) -> pd.DataFrame:
    """The ``rb_allocation`` rows, with ``flow`` and ``direction`` filled in; may be empty."""
    rows = timeline[timeline["kind"].astype(str) == RB_KIND]
    if "n_rb" not in timeline.columns:
        return rows.iloc[0:0].assign(flow=[], direction=[], n_rb=[])
    rows = rows.copy()
    rows["flow"] = rows["flow"] if "flow" in rows.columns else rows["client"]
    rows["direction"] = rows["direction"].astype(str) if "direction" in rows.columns else "ul"
    return rows


def rb_usage(timeline: pd.DataFrame, n_rb_total: float | None = None) -> pd.DataFrame:
    """RBs in use over time: a step function per direction.

    Returns one row per change: ``t_s``, ``direction``, ``n_rb_used`` (held from ``t_s``
    until the next row of that direction), ``n_rb_total`` and ``utilisation``
    (= used / total; NaN when the total is unknown).

    Raises
    ------
    MissingDataError
        The timeline has no ``rb_allocation`` events (no RB-level radio model in the run).
    """
    events = rb_events(timeline)
    if events.empty:
        kinds = sorted(set(timeline["kind"].astype(str)))
        raise MissingDataError(
            f"the timeline has no '{RB_KIND}' events (kinds present: {', '.join(kinds)}):"
            " the RB log is off (radio.record_rb_allocations: true records it) or the"
            " run's radio does not allocate resource blocks (radio.model: fixed)"
        )
    events = events.sort_values("t_s", kind="stable")
    held = events["n_rb"].astype(float)
    # Each row sets a flow's holding; the change in the cell's total is the difference.
    delta = held - held.groupby([events["direction"], events["flow"], events["client"]]).shift(
        1, fill_value=0.0
    )
    frames = []
    for direction, part in events.assign(delta=delta).groupby("direction", sort=True):
        used = part.groupby("t_s", sort=True)["delta"].sum().cumsum()
        total = n_rb_total
        if total is None and "n_rb_total" in part.columns:
            known = part["n_rb_total"].dropna()
            total = float(known.iloc[-1]) if len(known) else None
        frame = pd.DataFrame({"t_s": used.index.to_numpy(float), "n_rb_used": used.to_numpy()})
        frame.insert(1, "direction", str(direction))
        frame["n_rb_total"] = np.nan if total is None else float(total)
        frame["utilisation"] = frame["n_rb_used"] / frame["n_rb_total"]
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def time_average(
    usage: pd.DataFrame, column: str, t_end_s: float, t_start_s: float = 0.0
) -> pd.Series:
    """Time average of a step column of :func:`rb_usage` over [t_start_s, t_end_s], per direction.

    Before a direction's first event nothing is in use (the column counts as 0).
    """
    out = {}
    for direction, part in usage.groupby("direction", sort=True):
        t = np.concatenate([[t_start_s], part["t_s"].to_numpy(float), [t_end_s]])
        values = np.concatenate([[0.0], part[column].to_numpy(float)])
        widths = np.diff(np.clip(t, t_start_s, t_end_s))
        span = t_end_s - t_start_s
        out[str(direction)] = float(np.sum(widths * values) / span) if span > 0 else np.nan
    return pd.Series(out, name=column)
