"""Local work under ``fl.partial_work``: the SGD steps each client was asked for and did.

``rounds.parquet`` holds, aligned with ``selected``, ``steps_planned`` (the full local
update) and ``steps_done`` (the whole steps the device finished before it stopped to
upload; 0 if it never got its update ready). :func:`local_work` flattens them to one row
per (round, client); :func:`work_done_figure` draws how much of the asked work the
aggregated updates carry, for ``netfl report`` and notebooks.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from netfl.errors import MissingDataError
from netfl.recorder.tables import STEP_COLUMNS
from netfl.trace.drawing import RunsLike, finish, groups, labelled
from netfl.trace.run import Run


def has_local_work(run: Run) -> bool:
    """Whether the run recorded steps (it ran with ``fl.partial_work``)."""
    return all(name in run.rounds.columns for name in STEP_COLUMNS)


def local_work(run: Run) -> pd.DataFrame:
    """One row per selected client and round: ``round``, ``client``, ``steps_planned``,
    ``steps_done``, ``aggregated`` (its update arrived) and ``share`` (done / planned)."""
    if not has_local_work(run):
        raise MissingDataError(f"{run.id}: no steps recorded (the run had fl.partial_work off)")
    rounds = run.rounds
    rows = rounds[["round", "selected", "completed", *STEP_COLUMNS]].explode(
        ["selected", *STEP_COLUMNS]
    )
    rows = rows.dropna(subset=["selected"])
    aggregated = [
        int(c) in set(np.asarray(done).tolist())
        for c, done in zip(rows["selected"], rows["completed"], strict=True)
    ]
    table = pd.DataFrame(
        {
            "round": rows["round"].to_numpy(dtype=np.int64),
            "client": rows["selected"].to_numpy(dtype=np.int64),
            "steps_planned": rows["steps_planned"].to_numpy(dtype=np.int64),
            "steps_done": rows["steps_done"].to_numpy(dtype=np.int64),
            "aggregated": np.asarray(aggregated, dtype=bool),
        }
    )
    table["share"] = table["steps_done"] / table["steps_planned"].where(table["steps_planned"] > 0)
    return table


def work_summary(run: Run) -> pd.DataFrame:
    """Counts of the selected clients' updates: full, partial (aggregated or lost) and
    none, with the mean share of the asked steps the aggregated ones carry."""
    table = local_work(run)
    full = table["steps_done"] >= table["steps_planned"]
    none = table["steps_done"] == 0
    partial = ~full & ~none
    rows = [
        ("full updates aggregated", int((full & table["aggregated"]).sum())),
        ("partial updates aggregated", int((partial & table["aggregated"]).sum())),
        (
            "partial updates lost (upload missed the deadline)",
            int((partial & ~table["aggregated"]).sum()),
        ),
        ("full updates lost", int((full & ~table["aggregated"]).sum())),
        ("clients with no step done in time", int(none.sum())),
        (
            "mean share of the asked steps, aggregated updates",
            float(table.loc[table["aggregated"], "share"].mean()),
        ),
    ]
    return pd.DataFrame(rows, columns=["quantity", "value"])


def work_done_figure(runs: RunsLike) -> Figure:
    """Histogram of steps done / steps planned of the aggregated updates, pooled over each
    configuration's runs (1: full updates; below 1: partial work)."""
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    grouped = [(label, [r for r in group if has_local_work(r)]) for label, group in groups(runs)]
    edges = np.linspace(0, 1, 11)
    drawn = False
    for label, group in grouped:
        if not group:
            continue
        tables = [local_work(r) for r in group]
        shares = np.concatenate([t.loc[t["aggregated"], "share"].to_numpy() for t in tables])
        if not len(shares):
            continue
        counts, _ = np.histogram(np.clip(shares, 0, 1), bins=edges)
        partial = float(np.mean(shares < 1))
        ax.step(
            edges[1:],
            counts / len(shares),
            where="pre",
            label=labelled(label, f"{partial:.0%} partial"),
        )
        drawn = True
    if not drawn:
        raise MissingDataError("no aggregated update with recorded steps")
    ax.set(
        xlabel="steps done / steps planned (aggregated updates)",
        ylabel="share of updates",
        xlim=(0, 1),
    )
    return finish(fig, ax, "Local work of the aggregated updates (fl.partial_work)")
