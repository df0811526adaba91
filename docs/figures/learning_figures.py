"""Figures and tables of docs/reproductions.md, "Learning-aware selection".

Run the three sweeps, then this script on their folders::

    netfl sweep examples/ucb_cs_synthetic.yaml --jobs 2 --out sweeps/ucb-cs-synthetic
    netfl sweep examples/gpfl_digits.yaml --jobs 2 --out sweeps/gpfl-digits
    netfl sweep examples/nccb_clustered.yaml --jobs 2 --out sweeps/nccb-clustered
    python docs/figures/learning_figures.py sweeps docs/figures > docs/figures/learning_tables.md

It writes ``ucb_cs_synthetic.png``, ``gpfl_digits.png``, ``gpfl_digits_coverage.png`` and
``nccb_clustered.png`` into the output folder and prints the tables (Markdown) that the
write-up quotes (``learning_tables.md``). Every number is a mean over the seeds of a
configuration, with the half width of its 95% Student-t confidence interval; times to a
target also as the Kaplan-Meier median with its 95% interval, which counts the seeds that
never got there as censored at their run's end.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from netfl.recorder.sweep_index import is_sweep_directory
from netfl.trace import survival
from netfl.trace.metrics import mean_ci, rounds_to_accuracy, step_at, time_to_accuracy
from netfl.trace.run import Run, load_runs

#: Table I of Cho et al. 2020: final Jain index of the clients' losses, m = 1, 2, 3.
PAPER_JAIN = {
    "random": (0.43, 0.29, 0.66),
    "pow_d": (0.75, 0.89, 0.91),
    "ucb_cs": (0.61, 0.61, 0.65),
    "rpow_d": (0.32, 0.52, 0.39),
}
LOSS_LEVEL = 0.5
NAMES = {"random": "rand", "pow_d": "pow-d", "rpow_d": "rpow-d", "ucb_cs": "ucb-cs"}


def completed(folder: Path) -> list[Run]:
    """The completed runs of a sweep directory, or of a folder of run directories."""
    runs = load_runs(folder) if is_sweep_directory(folder) else load_runs(str(folder / "*"))
    return [r for r in runs if r.status == "completed"]


def strategy(run: Run) -> str:
    selection = run.scenario_dict["selection"]
    params = selection.get("params") or {}
    if selection["name"] == "nccb":
        return f"nccb k={params.get('threshold')}"
    return str(selection["name"])


def show(values: list[float] | np.ndarray, digits: int = 2) -> str:
    mean, half = mean_ci(values)
    if np.isnan(mean):
        return "-"
    return f"{mean:.{digits}f}" if np.isnan(half) else f"{mean:.{digits}f} ± {half:.{digits}f}"


def band(ax: Axes, x: np.ndarray, matrix: np.ndarray, label: str, step: bool = False) -> None:
    """Mean over the runs (rows) where every run has a value, with its 25-75% band."""
    keep = np.isfinite(matrix).all(axis=0)
    x, matrix = x[keep], matrix[:, keep]
    mean = matrix.mean(axis=0)
    low, high = np.nanpercentile(matrix, [25, 75], axis=0) if len(matrix) > 2 else (mean, mean)
    kind = "steps-post" if step else "default"
    (line,) = ax.plot(x, mean, label=label, drawstyle=kind, lw=1.2)
    ax.fill_between(
        x, low, high, alpha=0.15, color=line.get_color(), lw=0, step="post" if step else None
    )


def on_time_grid(
    runs: list[Run], series: Callable[[Run], pd.Series], grid: np.ndarray
) -> np.ndarray:
    """Per-round values as step functions of simulated time (latest evaluation before t),
    NaN after the run's end (so a mean over runs stops where the first run stopped)."""
    rows = []
    for run in runs:
        values = series(run)
        ends = run.rounds.set_index("round")["t_end_s"].reindex(values.index).to_numpy(float)
        row = step_at(ends, values.to_numpy(float), grid)
        rows.append(np.where(grid <= ends[-1], row, np.nan))
    return np.vstack(rows)


def by_round(runs: list[Run], series: Callable[[Run], pd.Series]) -> np.ndarray:
    """(runs, rounds) matrix: column r holds the latest value at or before round r (rounds
    not evaluated repeat the previous evaluation; NaN before the first)."""
    values = [series(r).sort_index() for r in runs]
    rounds = np.arange(max(int(v.index.max()) for v in values) + 1)
    return np.vstack([v.reindex(rounds).ffill().to_numpy(float) for v in values])


def column(matrix: np.ndarray, index: int) -> np.ndarray:
    """Column ``index`` of a by-round matrix, NaN where the runs are shorter."""
    return matrix[:, index] if index < matrix.shape[1] else np.full(len(matrix), np.nan)


def poll_time_s(run: Run) -> float:
    """Simulated time the run spent in polls: per round, first poll event to last answer."""
    timeline = run.timeline
    polls = timeline[timeline["kind"].astype(str).str.startswith("poll_")]
    if polls.empty:
        return 0.0
    spans = polls.groupby("round")["t_s"].agg(["min", "max"])
    return float((spans["max"] - spans["min"]).sum())


# -- UCB-CS -------------------------------------------------------------------------------------


def ucb_cs(folder: Path, out: Path) -> None:
    runs = completed(folder)
    groups: dict[tuple[int, str], list[Run]] = {}
    for run in runs:
        groups.setdefault((run.scenario.fl.clients_per_round, strategy(run)), []).append(run)
    ms = sorted({m for m, _ in groups})
    fig = Figure(figsize=(13, 7), layout="constrained")
    axes = fig.subplots(2, len(ms), squeeze=False)
    end = max(float(r.rounds["t_end_s"].max()) for r in runs)
    grid = np.linspace(0, end, 600)
    for j, m in enumerate(ms):
        for name in NAMES:
            group = groups.get((m, name), [])
            if not group:
                continue
            losses = by_round(group, Run.global_loss)
            band(axes[0, j], np.arange(1, losses.shape[1] + 1), losses, NAMES[name])
            band(axes[1, j], grid, on_time_grid(group, Run.global_loss, grid), NAMES[name], True)
        axes[0, j].set(title=f"m = {m}", xlabel="round", ylabel="global loss F(w)", yscale="log")
        axes[1, j].set(xlabel="simulated time (s)", ylabel="global loss F(w)", yscale="log")
        for ax in axes[:, j]:
            ax.grid(alpha=0.3)
    axes[0, 0].legend()
    fig.suptitle(
        "Synthetic(1,1), K = 30, logistic regression: global loss (mean over seeds, band:"
        " 25-75% of seeds)"
    )
    fig.savefig(out / "ucb_cs_synthetic.png", dpi=90)
    print("\n### UCB-CS: per m, strategy (n seeds)\n")
    print("| m | strategy | Jain J(w) final | paper | F(w) at 100 | F(w) at 300 | F(w) final |"
          f" rounds to F(w) <= {LOSS_LEVEL} | time to F(w) <= {LOSS_LEVEL} (s) |"
          f" censored median time to F(w) <= {LOSS_LEVEL} (s) |"
          " simulated time (s) | poll time (s) | polls' bits (Mbit) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for m in ms:
        for name in NAMES:
            group = groups.get((m, name), [])
            if not group:
                continue
            loss = by_round(group, Run.global_loss)
            jain = [float(r.loss_fairness().iloc[-1]) for r in group]
            sim = [float(r.rounds["t_end_s"].iloc[-1]) for r in group]
            polls = [poll_time_s(r) for r in group]
            bits = [poll_bits(r) / 1e6 for r in group]
            reach = [first_below(r, LOSS_LEVEL) for r in group]
            print(
                f"| {m} | {NAMES[name]} (n={len(group)}) | {show(jain)} | {PAPER_JAIN[name][m - 1]}"
                f" | {show(column(loss, 99), 3)} | {show(column(loss, 299), 3)}"
                f" | {show(loss[:, -20:].mean(axis=1), 3)} | {show([r for r, _ in reach], 0)}"
                f" ({sum(np.isfinite(r) for r, _ in reach)}/{len(group)})"
                f" | {show([t for _, t in reach], 0)}"
                f" | {censored_median([t for _, t in reach], group)}"
                f" | {show(sim, 0)} | {show(polls, 0)}"
                f" | {show(bits, 1)} |"
            )


def censored_median(times: list[float], group: list[Run]) -> str:
    """The Kaplan-Meier median of ``times`` (NaN: the run never got there, censored at its
    end) with its 95% interval (netfl.trace.survival)."""
    reached = np.isfinite(times)
    ends = [float(r.rounds["t_end_s"].iloc[-1]) for r in group]
    durations = np.where(reached, np.asarray(times, dtype=float), ends)
    return survival.reach_curve("", durations, reached).median_text()


def first_below(run: Run, level: float) -> tuple[float, float]:
    """(rounds, simulated s) until the global loss first falls to ``level``; NaN if never."""
    loss = run.global_loss()
    hit = loss.index[loss.to_numpy() <= level]
    if not len(hit):
        return np.nan, np.nan
    return float(hit[0] + 1), float(run.rounds.set_index("round").at[hit[0], "t_end_s"])


def poll_bits(run: Run) -> float:
    """Bits moved by polls (model downloads and answers)."""
    timeline = run.timeline
    ends = timeline["kind"].astype(str).isin(["poll_download_end", "poll_upload_end"])
    return float(np.nansum(timeline.loc[ends, "bits"].to_numpy(float)))


# -- GPFL ---------------------------------------------------------------------------------------


def partition_label(run: Run) -> str:
    partition = run.scenario_dict["learning"]["partition"]
    if partition["kind"] == "shards":
        return f"{partition['shards_per_client']}SPC"
    return f"Dir({partition['alpha']})"


def gpfl(folder: Path, out: Path, target: float) -> None:
    runs = completed(folder)
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        groups.setdefault((partition_label(run), strategy(run)), []).append(run)
    parts = ["1SPC", "2SPC", "Dir(0.2)"]
    names = ["gpfl", "pow_d", "random"]
    fig = Figure(figsize=(13, 7), layout="constrained")
    axes = fig.subplots(2, 3)
    cover = Figure(figsize=(13, 3.6), layout="constrained")
    cover_axes = cover.subplots(1, 3)
    print(f"\n### GPFL on digits (target accuracy {target})\n")
    print("| partition | strategy | accuracy, last 10 rounds | rounds to target |"
          " time to target (s) | censored median time to target (s) | first round (s) |"
          " other rounds (s) | poll time (s) | rounds until all clients seen |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for j, part in enumerate(parts):
        end = max(
            float(r.rounds["t_end_s"].max()) for (p, _), g in groups.items() if p == part for r in g
        )
        grid = np.linspace(0, end, 600)
        for name in names:
            group = groups.get((part, name), [])
            if not group:
                continue
            accuracy = by_round(group, lambda r: r.rounds.set_index("round")["accuracy"])
            band(axes[0, j], np.arange(1, accuracy.shape[1] + 1), accuracy, name)
            curve = on_time_grid(group, lambda r: r.rounds.set_index("round")["accuracy"], grid)
            band(axes[1, j], grid, curve, name, step=True)
            seen = by_round(group, Run.distinct_selected)
            band(cover_axes[j], np.arange(1, seen.shape[1] + 1), seen, name)
            gpfl_row(part, name, group, accuracy, seen, target)
        axes[0, j].set(title=part, xlabel="round", ylabel="test accuracy")
        axes[1, j].set(xlabel="simulated time (s)", ylabel="test accuracy")
        cover_axes[j].set(title=part, xlabel="round", ylabel="clients selected at least once")
        for ax in (*axes[:, j], cover_axes[j]):
            ax.grid(alpha=0.3)
    axes[0, 0].legend()
    cover_axes[0].legend()
    fig.suptitle("GPFL vs pow-d vs random on digits, 50 phones (mean over seeds, band: 25-75%)")
    fig.savefig(out / "gpfl_digits.png", dpi=90)
    cover.savefig(out / "gpfl_digits_coverage.png", dpi=90)


def gpfl_row(
    part: str, name: str, group: list[Run], accuracy: np.ndarray, seen: np.ndarray, target: float
) -> None:
    durations = [r.rounds["t_end_s"] - r.rounds["t_start_s"] for r in group]
    reached = [rounds_to_accuracy(r.rounds, target) for r in group]
    times = [time_to_accuracy(r.rounds, target) for r in group]
    all_seen = [
        float(np.argmax(row >= len(r.clients)) + 1) if (row >= len(r.clients)).any() else np.nan
        for r, row in zip(group, seen, strict=True)
    ]
    print(
        f"| {part} | {name} (n={len(group)}) | {show(accuracy[:, -10:].mean(axis=1), 3)}"
        f" | {show(reached, 1)} ({int(np.isfinite(reached).sum())}/{len(group)})"
        f" | {show(times, 0)} | {censored_median(times, group)}"
        f" | {show([float(d.iloc[0]) for d in durations], 1)}"
        f" | {show([float(d.iloc[1:].mean()) for d in durations], 1)}"
        f" | {show([poll_time_s(r) for r in group], 0)} | {show(all_seen, 1)} |"
    )


# -- NCCB ---------------------------------------------------------------------------------------


def one_cluster_share(run: Run) -> float:
    """Share of rounds whose selected clients all come from one data cluster."""
    cluster = run.clients.set_index("client")["data_cluster"]
    same = [len(set(cluster[list(s)])) == 1 for s in run.rounds["selected"] if len(s) > 1]
    return float(np.mean(same)) if same else np.nan


def nccb(folder: Path, out: Path, target: float) -> None:
    runs = completed(folder)
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(strategy(run), []).append(run)
    fig = Figure(figsize=(13, 4), layout="constrained")
    left, right = fig.subplots(1, 2)
    end = max(float(r.rounds["t_end_s"].max()) for r in runs)
    grid = np.linspace(0, end, 600)
    levels = (0.7, 0.8, target)
    print("\n### NCCB on clustered digits\n")
    print("| strategy | " + " | ".join(f"rounds to {a:g}" for a in levels) + " |"
          " accuracy at round 10 | at round 30 | final | rounds with one cluster only |"
          " clusters per round |")  # fmt: skip
    print("|---|" + "---|" * (len(levels) + 5))
    for name, group in groups.items():
        accuracy = by_round(group, lambda r: r.rounds.set_index("round")["accuracy"])
        band(left, np.arange(1, accuracy.shape[1] + 1), accuracy, name)
        curve = on_time_grid(group, lambda r: r.rounds.set_index("round")["accuracy"], grid)
        band(right, grid, curve, name, step=True)
        reach = []
        for level in levels:
            hits = [rounds_to_accuracy(r.rounds, level) for r in group]
            reach.append(f"{show(hits, 1)} ({int(np.isfinite(hits).sum())}/{len(group)})")
        per_round = [clusters_per_round(r) for r in group]
        print(
            f"| {name} (n={len(group)}) | "
            + " | ".join(reach)
            + f" | {show(column(accuracy, 9), 3)} | {show(column(accuracy, 29), 3)}"
            f" | {show(accuracy[:, -1], 3)} | {show([one_cluster_share(r) for r in group])}"
            f" | {show(per_round)} |"
        )
    left.set(xlabel="round", ylabel="test accuracy")
    right.set(xlabel="simulated time (s)", ylabel="test accuracy")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.axhline(target, color="k", lw=0.6, ls=":")
    left.legend()
    fig.suptitle(
        "50 phones in 5 data clusters (2 digits each): accuracy (mean over seeds, band: 25-75%)"
    )
    fig.savefig(out / "nccb_clustered.png", dpi=90)


def clusters_per_round(run: Run) -> float:
    cluster = run.clients.set_index("client")["data_cluster"]
    return float(np.mean([len(set(cluster[list(s)])) for s in run.rounds["selected"] if len(s)]))


def main(sweeps: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for folder, make in (
        ("ucb-cs-synthetic", lambda f: ucb_cs(f, out)),
        ("gpfl-digits", lambda f: gpfl(f, out, target=0.8)),
        ("nccb-clustered", lambda f: nccb(f, out, target=0.85)),
    ):
        if (sweeps / folder).is_dir():
            make(sweeps / folder)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
