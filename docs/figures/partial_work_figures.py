"""Figures and tables of docs/reproductions.md's "Partial work and FedProx" section.

Reads the sweep directories of the two example sweeps and writes PNGs and markdown tables
into this folder (or ``--out``)::

    netfl sweep examples/fedprox_synthetic_sweep.yaml --jobs 2
    python docs/figures/partial_work_figures.py fedprox sweeps/fedprox-synthetic
    netfl sweep examples/partial_work_lte_sweep.yaml --jobs 2
    python docs/figures/partial_work_figures.py lte sweeps/partial-work-lte

``fedprox``: the FedProx paper's Fig. 1 setting (Li et al., MLSys 2020) on Synthetic(1,1):
training loss sum_k p_k F_k(w) and test accuracy by round for FedAvg (stragglers dropped),
FedProx mu = 0 (partial work) and FedProx mu = 1, at 0%, 50% and 90% stragglers, with paired
differences by seed, and the rounds until the training loss first falls to
:data:`LOSS_LEVEL` as a survival question (Kaplan-Meier median over the seeds, a seed that
never gets there censored at its last round; log-rank test stratified by seed between
methods, :mod:`netfl.trace.survival`). ``lte``: time to 85% accuracy on compare_selection's
loaded LTE network for FedAvg dropping late clients against partial work with FedNova, under
random and FedCS selection, with paired differences by seed.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from netfl.trace import metrics, survival
from netfl.trace.local_work import has_local_work, local_work
from netfl.trace.run import Run, load_runs

HERE = Path(__file__).resolve().parent
METHODS = ("FedAvg (drop stragglers)", "FedProx mu = 0 (partial work)", "FedProx mu = 1")
#: The training loss whose first reach is timed (in rounds): about where FedProx mu = 1
#: levels off (0.46) plus a margin the other methods cross only in some seeds.
LOSS_LEVEL = 0.6


def stragglers(run: Run) -> float:
    """The share of straggling devices the run's CPU-ratio distribution makes."""
    ratio = run.scenario_dict["devices"]["groups"][0]["available_cpu_ratio"]
    if not isinstance(ratio, dict) or ratio.get("dist") != "choice":
        return 0.0
    values, p = ratio["values"], ratio["p"]
    return round(1.0 - sum(q for v, q in zip(values, p, strict=True) if v >= 1.0), 6)


def fedprox_method(run: Run) -> str:
    scenario = run.scenario_dict
    if not scenario["fl"]["partial_work"]:
        return METHODS[0]
    return METHODS[1] if scenario["learning"]["prox_mu"] == 0 else METHODS[2]


def lte_method(run: Run) -> str:
    scenario = run.scenario_dict
    name = {"random": "random", "fedcs": "FedCS"}[scenario["selection"]["name"]]
    if scenario["fl"]["partial_work"]:
        return f"{name}: partial work + FedNova"
    return f"{name}: FedAvg, late clients dropped"


def by_round(runs: list[Run], series: Callable[[Run], pd.Series]) -> np.ndarray:
    """runs x rounds matrix of a per-round series."""
    rows = [series(r).sort_index().to_numpy(float) for r in runs]
    width = max(len(r) for r in rows)
    return np.array([np.pad(r, (0, width - len(r)), constant_values=np.nan) for r in rows])


def accuracy(run: Run) -> pd.Series:
    return run.rounds.set_index("round")["accuracy"]


def show(mean: float, half: float, digits: int = 3) -> str:
    if not np.isfinite(mean):
        return "-"
    return f"{mean:.{digits}f}" + (f" ± {half:.{digits}f}" if np.isfinite(half) else "")


def markdown(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *rows]) + "\n"


def _save(fig: Figure, path: Path) -> None:
    fig.savefig(path, dpi=110)
    print(path)


# -- FedProx Fig. 1 ---------------------------------------------------------------------


def fedprox(folder: Path, out: Path) -> None:
    runs = [r for r in load_runs(folder) if r.status == "completed"]
    levels = sorted({stragglers(r) for r in runs})
    fig = Figure(figsize=(13, 7), layout="constrained")
    axes = fig.subplots(2, len(levels), squeeze=False)
    rows = []
    for col, level in enumerate(levels):
        for method in METHODS:
            group = [r for r in runs if stragglers(r) == level and fedprox_method(r) == method]
            if not group:
                continue
            losses = by_round(group, lambda r: r.global_loss())
            accuracies = by_round(group, accuracy)
            x = np.arange(1, losses.shape[1] + 1)
            for ax, matrix in ((axes[0][col], losses), (axes[1][col], accuracies)):
                mean, low, high = (
                    np.nanmean(matrix, 0),
                    np.nanmin(matrix, 0),
                    np.nanmax(matrix, 0),
                )
                ax.plot(x, mean, label=method)
                ax.fill_between(x, low, high, alpha=0.2)
            rows.append(_fedprox_row(level, method, group, losses, accuracies))
        axes[0][col].set(title=f"{level:.0%} stragglers", ylabel="training loss", ylim=(0, 4))
        axes[1][col].set(xlabel="round", ylabel="test accuracy", ylim=(0, 1))
        for ax in axes[:, col]:
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize="small")
    fig.suptitle(
        "Synthetic(1,1), FedProx Fig. 1 setting (mean over seeds; band: min to max)", fontsize=11
    )
    _save(fig, out / "fedprox_synthetic.png")
    table = pd.DataFrame(rows)
    paired = _fedprox_paired(runs, levels)
    text = "Per configuration (mean ± 95% CI half-width over seeds):\n\n" + markdown(table)
    text += "\nPaired differences by seed (same stragglers, same data), mean ± 95% CI:\n\n"
    text += markdown(paired)
    (out / "fedprox_synthetic.md").write_text(text)
    print(text)


def _fedprox_row(
    level: float, method: str, group: list[Run], losses: np.ndarray, accuracies: np.ndarray
) -> dict[str, object]:
    final = np.nanmean(losses[:, -10:], axis=1)
    spread = np.nanstd(np.diff(losses[:, -50:], axis=1), axis=1)
    acc = np.nanmean(accuracies[:, -10:], axis=1)
    aggregated = [
        float(np.mean(r.rounds["n_completed"] / r.rounds["n_selected"].clip(lower=1)))
        for r in group
    ]
    share = [
        float(local_work(r).query("aggregated")["share"].mean()) if has_local_work(r) else 1.0
        for r in group
    ]
    rounds, reached = rounds_to_level(group)
    curve = survival.reach_curve(method, rounds, reached)
    return {
        "stragglers": f"{level:.0%}",
        "method": method,
        "seeds": len(group),
        f"rounds to loss {LOSS_LEVEL}, Kaplan-Meier median [95%]": curve.median_text(),
        "reached": f"{curve.reached}/{curve.n}",
        "training loss (last 10 rounds)": show(*metrics.mean_ci(final)),
        "round-to-round loss change, sd (last 50)": show(*metrics.mean_ci(spread)),
        "test accuracy (last 10 rounds)": show(*metrics.mean_ci(acc)),
        "updates aggregated / selected": f"{np.mean(aggregated):.2f}",
        "work share of aggregated updates": f"{np.mean(share):.2f}",
    }


def rounds_to_level(group: list[Run]) -> tuple[np.ndarray, np.ndarray]:
    """Per run: rounds until the training loss first falls to LOSS_LEVEL (else its number
    of rounds, censored), and whether it got there."""
    rounds, reached = [], []
    for run in group:
        loss = run.global_loss().sort_index()
        hit = np.flatnonzero(loss.to_numpy(float) <= LOSS_LEVEL)
        reached.append(len(hit) > 0)
        rounds.append(float(hit[0] + 1) if len(hit) else float(len(loss)))
    return np.array(rounds), np.array(reached)


def _logrank_by_seed(runs: list[Run], level: float, a: str, b: str) -> str:
    """p of the log-rank test of rounds to LOSS_LEVEL, b against a, stratified by seed."""
    rows = []
    for method in (a, b):
        group = [r for r in runs if _is(r, level, method)]
        rounds, reached = rounds_to_level(group)
        for run, n, hit in zip(group, rounds, reached, strict=True):
            rows.append((method, run.summary["seed"], n if hit else np.nan, n))
    table = pd.DataFrame(rows, columns=["configuration", "seed", "time_to_target_s", "sim_time_s"])
    tested = survival.logrank(table, baseline=a)
    p = float(tested["p_value_by_seed"].iloc[0]) if len(tested) else np.nan
    return "-" if not np.isfinite(p) else f"{p:.3f}"


def _fedprox_paired(runs: list[Run], levels: list[float]) -> pd.DataFrame:
    def final_loss(run: Run) -> float:
        return float(run.global_loss().sort_index().iloc[-10:].mean())

    rows = []
    pairs = ((METHODS[0], METHODS[1]), (METHODS[1], METHODS[2]), (METHODS[0], METHODS[2]))
    for level in levels:
        for a, b in pairs:
            first = {r.summary["seed"]: final_loss(r) for r in runs if _is(r, level, a)}
            second = {r.summary["seed"]: final_loss(r) for r in runs if _is(r, level, b)}
            seeds = sorted(set(first) & set(second))
            if not seeds:
                continue
            diff = np.array([first[s] - second[s] for s in seeds])
            rows.append(
                {
                    "stragglers": f"{level:.0%}",
                    "training loss of": a,
                    "minus that of": b,
                    "pairs": len(seeds),
                    "difference (last 10 rounds)": show(*metrics.mean_ci(diff)),
                    "pairs where the first is higher": int(np.sum(diff > 0)),
                    f"rounds to loss {LOSS_LEVEL}: log-rank p by seed": _logrank_by_seed(
                        runs, level, a, b
                    ),
                }
            )
    return pd.DataFrame(rows)


def _is(run: Run, level: float, method: str) -> bool:
    return stragglers(run) == level and fedprox_method(run) == method


# -- the loaded LTE network ----------------------------------------------------------------


def lte(folder: Path, out: Path, target: float = 0.85) -> None:
    runs = [r for r in load_runs(folder) if r.status == "completed"]
    labels = list(dict.fromkeys(lte_method(r) for r in sorted(runs, key=lte_method)))
    fig = Figure(figsize=(13, 4.5), layout="constrained")
    ax_acc, ax_bar = fig.subplots(1, 2, width_ratios=[2, 1])
    grid = np.linspace(0, max(float(r.summary["sim_time_s"]) for r in runs), 241)
    rows, times = [], {}
    for label in labels:
        group = [r for r in runs if lte_method(r) == label]
        matrix = np.array([r.accuracy_at(grid) for r in group], dtype=float)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # before the first evaluation
            ax_acc.plot(grid, np.nanmean(matrix, 0), label=label)
        reached = np.array([r.time_to_accuracy(target) for r in group], dtype=float)
        times[label] = {r.summary["seed"]: t for r, t in zip(group, reached, strict=True)}
        mean, half = metrics.mean_ci(reached[np.isfinite(reached)])
        ax_bar.barh(label, mean, xerr=half if np.isfinite(half) else 0)
        rows.append(_lte_row(label, group, reached, mean, half))
    ax_acc.axhline(target, ls="--", c="grey", lw=1)
    ax_acc.set(xlabel="simulated time (s)", ylabel="accuracy", ylim=(0, 1))
    ax_acc.legend(fontsize="small")
    ax_acc.grid(alpha=0.3)
    ax_bar.set(xlabel=f"time to {target:.0%} (s), mean ± 95% CI")
    deadline = runs[0].scenario_dict["fl"]["deadline_s"]
    fig.suptitle(f"compare_selection's loaded LTE network, {deadline:g} s deadline", fontsize=11)
    _save(fig, out / "partial_work_lte.png")
    text = f"Per configuration (time to {target:.0%}: mean ± 95% CI over the runs that"
    text += " reached it):\n\n"
    text += markdown(pd.DataFrame(rows))
    text += "\nPaired by seed (partial work + FedNova minus FedAvg dropping late clients):\n\n"
    text += markdown(_lte_paired(times))
    (out / "partial_work_lte.md").write_text(text)
    print(text)


def _lte_row(
    label: str, group: list[Run], reached: np.ndarray, mean: float, half: float
) -> dict[str, object]:
    rounds = pd.concat([r.rounds for r in group])
    row = {
        "configuration": label,
        "runs": len(group),
        "reached": int(np.isfinite(reached).sum()),
        "time to target (s)": show(mean, half, 0),
        "rounds": f"{np.mean([len(r.rounds) for r in group]):.0f}",
        "updates aggregated per round": f"{rounds['n_completed'].mean():.2f}",
        "deadline misses per round": f"{rounds['n_deadline_miss'].mean():.2f}",
        "final accuracy": show(*metrics.mean_ci([r.summary["final_accuracy"] for r in group])),
    }
    row["partial among aggregated"] = "-"
    row["partial updates lost per round"] = "-"
    row["clients with no step in time per round"] = "-"
    if all(has_local_work(r) for r in group):
        work = pd.concat([local_work(r) for r in group])
        partial = (work["steps_done"] > 0) & (work["steps_done"] < work["steps_planned"])
        n_rounds = len(rounds)
        row["partial among aggregated"] = f"{np.mean(partial[work['aggregated']]):.0%}"
        row["partial updates lost per round"] = (
            f"{(partial & ~work['aggregated']).sum() / n_rounds:.2f}"
        )
        row["clients with no step in time per round"] = (
            f"{(work['steps_done'] == 0).sum() / n_rounds:.2f}"
        )
    return row


def _lte_paired(times: dict[str, dict[int, float]]) -> pd.DataFrame:
    rows = []
    for name in ("random", "FedCS"):
        drop = times.get(f"{name}: FedAvg, late clients dropped", {})
        partial = times.get(f"{name}: partial work + FedNova", {})
        seeds = sorted(set(drop) & set(partial))
        both = [s for s in seeds if np.isfinite(drop[s]) and np.isfinite(partial[s])]
        diff = np.array([partial[s] - drop[s] for s in both])
        rows.append(
            {
                "selection": name,
                "seeds": len(seeds),
                "both reached": len(both),
                "only partial work reached": sum(
                    np.isfinite(partial[s]) and not np.isfinite(drop[s]) for s in seeds
                ),
                "only FedAvg reached": sum(
                    np.isfinite(drop[s]) and not np.isfinite(partial[s]) for s in seeds
                ),
                "difference (s)": show(*metrics.mean_ci(diff), 0) if len(diff) else "-",
                "seeds where partial work is faster": int(np.sum(diff < 0)),
            }
        )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("figure", choices=["fedprox", "lte"])
    parser.add_argument("sweep", type=Path, help="the sweep directory")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    {"fedprox": fedprox, "lte": lte}[args.figure](args.sweep, args.out)


if __name__ == "__main__":
    main()
