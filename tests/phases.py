"""Reconstruct each client's phases in each round from the timeline (test helper).

Checks that the timeline alone determines every phase the server measured. One row per
(round, client, exchange), where ``exchange`` is ``update`` (the round's distribution,
update and upload) or ``poll`` (a strategy's poll, kinds ``poll_*``). Phase durations are
differences of event times (see :mod:`netfl.recorder.timeline`); a phase the client never
reached is NaN, a cold start it did not need is 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from netfl.fl.exchange import STEPS

_STEPS = STEPS
_LEAVES = {"drop": "dropped", "deadline_miss": "deadline_miss", "cancel": "cancelled"}

#: Columns of :func:`client_phases`, in order.
PHASE_COLUMNS = (
    "round",
    "client",
    "exchange",
    "start_s",
    "end_s",
    "download_s",
    "cold_start_s",
    "queue_wait_s",
    "compute_s",
    "upload_wait_s",
    "upload_s",
    "status",
)


def client_phases(timeline: pd.DataFrame) -> pd.DataFrame:
    """Per-client phase durations; ``timeline`` as read from ``timeline.parquet``.

    ``start_s`` is the client's ``download_start`` and ``end_s`` its ``upload_end`` or the
    time it left; ``status`` is ``completed``, ``dropped``, ``deadline_miss``,
    ``cancelled``, or ``pending`` (the run stopped first).
    """
    kind = timeline["kind"].astype(str)
    is_poll = kind.str.startswith("poll_")
    step = kind.str.removeprefix("poll_")
    keep = (timeline["client"] >= 0) & (step.isin(_STEPS) | kind.isin(list(_LEAVES)))
    events = pd.DataFrame(
        {
            "round": timeline["round"][keep],
            "client": timeline["client"][keep],
            "exchange": np.where(is_poll[keep], "poll", "update"),
            "step": step[keep],
            "t_s": timeline["t_s"][keep],
        }
    )
    events = _attribute_leaves(events)
    wide = events.pivot_table(
        index=["round", "client", "exchange"], columns="step", values="t_s", aggfunc="first"
    )
    wide = wide.reindex(columns=[*_STEPS, *_LEAVES], fill_value=np.nan)
    ready = wide["cold_start_end"].fillna(wide["download_end"])
    left = wide[list(_LEAVES)]
    out = pd.DataFrame(
        {
            "start_s": wide["download_start"],
            "end_s": wide["upload_end"].fillna(left.min(axis=1)),
            "download_s": wide["download_end"] - wide["download_start"],
            "cold_start_s": (wide["cold_start_end"] - wide["cold_start_start"]).where(
                wide["cold_start_start"].notna(),
                np.where(wide["compute_start"].notna(), 0.0, np.nan),
            ),
            "queue_wait_s": wide["compute_start"] - ready,
            "compute_s": wide["compute_end"] - wide["compute_start"],
            "upload_wait_s": wide["upload_start"] - wide["compute_end"],
            "upload_s": wide["upload_end"] - wide["upload_start"],
            "status": _status(wide),
        }
    ).reset_index()
    return out[list(PHASE_COLUMNS)].sort_values(["round", "exchange", "start_s", "client"])


def _attribute_leaves(events: pd.DataFrame) -> pd.DataFrame:
    """A leave event belongs to the exchange the client was last in within its round."""
    events = events.sort_values("t_s", kind="stable")
    leaves = events["step"].isin(list(_LEAVES))
    last = (
        events[~leaves]
        .groupby(["round", "client"])["exchange"]
        .last()
        .rename("last_exchange")
        .reset_index()
    )
    events = events.merge(last, on=["round", "client"], how="left")
    events.loc[events["step"].isin(list(_LEAVES)), "exchange"] = events["last_exchange"]
    return events.drop(columns="last_exchange").dropna(subset=["exchange"])


def _status(wide: pd.DataFrame) -> pd.Series:
    status = pd.Series("pending", index=wide.index, dtype=object)
    for kind, name in _LEAVES.items():
        status[wide[kind].notna()] = name
    status[wide["upload_end"].notna()] = "completed"
    return status
