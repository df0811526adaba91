"""Per-client phases of each round, reconstructed from the timeline.

A selected client goes through five phases, each bounded by two documented timeline events
(:data:`netfl.recorder.timeline.KINDS`):

============  ===================================  =============================================
phase         from                                 to
============  ===================================  =============================================
download      ``download_start``                   ``download_end``
wait          ``download_end``                     ``compute_start`` (compute queue, cold start)
compute       ``compute_start``                    ``compute_end``
upload_wait   ``compute_end``                      ``upload_start`` (waiting for radio resources)
upload        ``upload_start``                     ``upload_end``
============  ===================================  =============================================

A client whose round was cut (``deadline_miss``, ``drop`` or ``cancel``) has its running
phase end at the cut and no later phase. Other event kinds and extra columns are ignored, so the
reconstruction keeps working as components add their own events.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Timeline kinds bounding the phases, in protocol order.
BOUNDARIES = (
    "download_start",
    "download_end",
    "compute_start",
    "compute_end",
    "upload_start",
    "upload_end",
)
#: Phase names; phase i runs from ``BOUNDARIES[i]`` to ``BOUNDARIES[i + 1]``.
PHASES = ("download", "wait", "compute", "upload_wait", "upload")
#: Kinds that end a client's round before its upload arrived.
CUT_KINDS = ("deadline_miss", "drop", "cancel")


def _first_times(timeline: pd.DataFrame, kinds: tuple[str, ...]) -> pd.DataFrame:
    """(round, client) x kind -> time of the first such event (NaN where absent)."""
    kind = timeline["kind"].astype(str)
    rows = timeline[kind.isin(kinds) & (timeline["client"] >= 0) & (timeline["round"] >= 0)]
    rows = rows.assign(kind=kind[rows.index])
    first = rows.groupby(["round", "client", "kind"], sort=True)["t_s"].min()
    table = first.unstack("kind")
    return table.reindex(columns=list(kinds))


def phase_table(timeline: pd.DataFrame) -> pd.DataFrame:
    """One row per (round, client) that was selected or started a phase.

    Columns: ``round``, ``client``, ``select_s`` and one ``<boundary>_s`` column per
    boundary event (simulated s, NaN if it did not happen), ``cut_s`` (time of the
    ``deadline_miss``/``drop``/``cancel``, NaN if none), ``end_s`` (when the client's round
    ended for it: upload arrival or cut), one ``<phase>_s`` duration per phase (NaN if the
    phase never started; a phase running at the cut ends at the cut), and ``outcome``:
    ``completed`` (upload arrived), ``deadline_miss``, ``drop``, ``cancel`` or
    ``unfinished`` (the run stopped first).
    """
    kinds = ("select", *BOUNDARIES, *CUT_KINDS)
    times = _first_times(timeline, kinds)
    bounds = times[list(BOUNDARIES)].to_numpy(float)
    cuts = times[list(CUT_KINDS)].to_numpy(float)
    cut_times = np.where(np.isnan(cuts), np.inf, cuts)
    first_cut = cut_times.argmin(axis=1)  # the earliest cut kind decides the outcome
    cut = cut_times[np.arange(len(cuts)), first_cut]
    cut[np.isinf(cut)] = np.nan
    arrived = bounds[:, -1]
    outcome = np.where(np.isfinite(arrived), "completed", "unfinished").astype(object)
    has_cut = ~np.isfinite(arrived) & np.isfinite(cut)
    outcome[has_cut] = np.asarray(CUT_KINDS, dtype=object)[first_cut[has_cut]]
    end = np.where(np.isfinite(arrived), arrived, cut)

    starts, stops = bounds[:, :-1], bounds[:, 1:]
    # A phase that started but did not end was cut; it lasts until the cut.
    stops = np.where(np.isnan(stops) & np.isfinite(starts), cut[:, None], stops)
    durations = stops - starts

    out = times.reset_index()
    out.columns.name = None
    out = out.rename(columns={k: f"{k}_s" for k in kinds})
    out = out.drop(columns=[f"{k}_s" for k in CUT_KINDS])
    out["cut_s"] = cut
    out["end_s"] = end
    for i, phase in enumerate(PHASES):
        out[f"{phase}_s"] = durations[:, i]
    out["outcome"] = pd.Categorical(outcome, categories=["completed", *CUT_KINDS, "unfinished"])
    out["round"] = out["round"].astype("int64")
    out["client"] = out["client"].astype("int64")
    return out


def phase_intervals(phases: pd.DataFrame) -> pd.DataFrame:
    """Long form of :func:`phase_table`: one row per (round, client, phase) that ran.

    Columns ``round``, ``client``, ``phase``, ``start_s``, ``end_s``, ``outcome`` -- what a
    Gantt chart draws.
    """
    frames = []
    for i, phase in enumerate(PHASES):
        start = phases[f"{BOUNDARIES[i]}_s"]
        duration = phases[f"{phase}_s"]
        ran = np.isfinite(start) & np.isfinite(duration)
        part = phases.loc[ran, ["round", "client", "outcome"]].copy()
        part["phase"] = phase
        part["start_s"] = start[ran]
        part["end_s"] = start[ran] + duration[ran]
        frames.append(part)
    columns = ["round", "client", "phase", "start_s", "end_s", "outcome"]
    if not frames:
        return pd.DataFrame(columns=columns)
    out = pd.concat(frames, ignore_index=True)[columns]
    out["phase"] = pd.Categorical(out["phase"], categories=list(PHASES))
    return out.sort_values(["round", "client", "start_s"], kind="stable").reset_index(drop=True)
