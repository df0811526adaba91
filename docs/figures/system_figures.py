"""Figures and tables of docs/reproductions.md's "System-aware selection" section.

Reads the sweep directories written by the example sweeps and writes PNGs and markdown
tables into this folder (or ``--out``)::

    netfl sweep examples/rbcs_f_numerical_sweep.yaml --jobs 2
    python docs/figures/system_figures.py rbcs_f sweeps/rbcs-f-numerical
    netfl sweep examples/mab_cs_eta_sweep.yaml --jobs 2
    python docs/figures/system_figures.py mab_cs sweeps/mab-cs-eta
    netfl sweep examples/compare_selection_sweep.yaml --jobs 2
    python docs/figures/system_figures.py compare sweeps/compare-selection
    netfl sweep examples/multicell_sweep.yaml --jobs 2
    python docs/figures/system_figures.py multicell sweeps/multicell
    netfl sweep examples/async_compare_sweep.yaml --jobs 2
    python docs/figures/system_figures.py async sweeps/async-compare

Everything is drawn with :mod:`netfl.trace.plots` and tabulated with
:mod:`netfl.trace.compare`; this script only shortens the legend labels and lays out the
MAB-CS paper's T_FedCS - T_* (Yoshida et al. 2020 eq. (12)).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

import netfl
from netfl.trace import compare, metrics, plots, survival
from netfl.trace.run import Run
from netfl.trace.runs import Runs

HERE = Path(__file__).resolve().parent
NAMES = {
    "random": "random",
    "fedcs": "FedCS",
    "fedcs_extended": "Extended FedCS",
    "mab_cs_naive": "Naive MAB-CS",
    "mab_cs_elementwise": "Element-wise MAB-CS",
    "fedcs_deadline": "FedCS(3)",
    "rbcs_f": "RBCS-F",
}


def short_label(run: Run) -> str:
    """The strategy's name as the papers write it, with RBCS-F's V."""
    selection = run.scenario_dict["selection"]
    name = NAMES.get(selection["name"], selection["name"])
    if selection["name"] == "rbcs_f":
        name += f" (V={selection['params'].get('V', 100):g})"
    return name


def relabel(fig: Figure, runs: Runs, label: Callable[[Run], str] = short_label) -> Figure:
    """Replace the configuration labels of ``fig``'s curves by ``label(run)``."""
    configuration = runs.configuration()
    mapping = {configuration[i]: label(r) for i, r in zip(runs.ids, runs, strict=True)}
    for ax in fig.axes:
        for line in ax.get_lines():
            text = str(line.get_label())
            for long, short in sorted(mapping.items(), key=lambda kv: -len(kv[0])):
                if text.startswith(long):
                    line.set_label(short + text[len(long) :])
                    break
        for bars in ax.containers:  # bar charts (the staleness histogram)
            text = str(bars.get_label())
            for long, short in sorted(mapping.items(), key=lambda kv: -len(kv[0])):
                if text.startswith(long):
                    bars.set_label(short + text[len(long) :])
                    break
        if ax.get_legend() is not None or fig.legends:
            ax.legend(fontsize="small")
    for legend in list(fig.legends):
        legend.remove()
    return fig


def markdown(frame: pd.DataFrame) -> str:
    """A pipe table (no tabulate dependency)."""
    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(map(str, row)) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows]) + "\n"


def _pm(mean: float, half: float, digits: int = 0) -> str:
    if not math.isfinite(mean):
        return "-"
    if not math.isfinite(half):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {half:.{digits}f}"


def _save(fig: Figure, path: Path) -> None:
    fig.savefig(path, dpi=110)
    print(path)


def cell_label(run: Run) -> str:
    """The strategy and the radio: ``FedCS, 57 cells`` or ``FedCS, 1 cell``."""
    cell = run.scenario_dict["cell"]
    cells = cell.get("sites", 1) * cell.get("sectors", 1)
    return f"{short_label(run)}, {cells} cell{'s' if cells > 1 else ''}"


def protocol_label(run: Run) -> str:
    """The FL protocol and its sizes: ``FedBuff (10 training, K=5)``."""
    fl = run.scenario_dict["fl"]
    protocol = fl.get("protocol", "fedavg")
    if protocol == "fedbuff":
        return f"FedBuff ({fl['concurrency']} training, K={fl['buffer_size']})"
    if protocol == "fedasync":
        return f"FedAsync ({fl['concurrency']} training)"
    if protocol == "hierarchical":
        return f"HierFAVG (kappa1={fl['kappa1']}, kappa2={fl['kappa2']})"
    return f"FedAvg ({fl['clients_per_round']} a round)"


#: Extra columns of the asynchronous comparison: per-run metric -> (header, digits).
ASYNC_COLUMNS = {
    "staleness_mean": ("mean staleness (versions)", 2),
    "uplink_busy_fraction": ("uplink busy fraction", 3),
}


def _summary_table(
    runs: Runs,
    target: float | None,
    label: Callable[[Run], str] = short_label,
    extra: dict[str, tuple[str, int]] | None = None,
    per_run: dict[str, Callable[[Run], float]] | None = None,
) -> pd.DataFrame:
    """Per strategy (first-seen order): the compare metrics, mean ± 95% CI over seeds.

    Time to target is the mean over the runs that reached it; where some run did not, the
    table gains the Kaplan-Meier median with its 95% interval, which counts those runs as
    censored at their end (:mod:`netfl.trace.survival`).
    """
    table = compare.per_run(runs, target)
    for name, measure in (per_run or {}).items():
        table[name] = [measure(r) for r in runs]
    table["strategy"] = [label(r) for r in runs]
    table["configuration"] = table["strategy"]
    censored = target is not None and not np.isfinite(table["time_to_target_s"]).all()
    medians = {c.configuration: c for c in survival.reach_curves(table)} if censored else None
    rows = []
    for name, group in table.groupby("strategy", sort=False):
        row: dict[str, str | int] = {"strategy": str(name), "runs": len(group)}
        if target is not None:
            times = group["time_to_target_s"].to_numpy(float)
            reached = np.isfinite(times)
            row[f"time to {target:.0%} (s)"] = _pm(*metrics.mean_ci(times[reached]))
            row["reached"] = f"{int(reached.sum())}/{len(group)}"
            if medians is not None:
                row[f"censored median to {target:.0%} (s)"] = medians[str(name)].median_text()
            row["final accuracy"] = _pm(*metrics.mean_ci(group["final_accuracy"]), digits=3)
        row["total simulated time (s)"] = _pm(*metrics.mean_ci(group["sim_time_s"]))
        row["rounds"] = _pm(*metrics.mean_ci(group["rounds"]))
        row["Jain (selection counts)"] = _pm(*metrics.mean_ci(group["fairness_jain"]), digits=3)
        for metric, (header, digits) in (extra or {}).items():
            row[header] = _pm(*metrics.mean_ci(group[metric]), digits=digits)
        rows.append(row)
    return pd.DataFrame(rows)


def rbcs_f(runs: Runs, out: Path) -> None:
    """Huang et al. 2021 Figs. 2-3: cumulative time per round, mean backlog per V; the summary
    table."""
    _save(relabel(plots.round_times(runs), runs), out / "rbcs_f_cumulative_time.png")
    rbcs = Runs([r for r in runs if r.scenario_dict["selection"]["name"] == "rbcs_f"])
    _save(relabel(plots.backlog_means(rbcs), rbcs), out / "rbcs_f_backlogs.png")
    table = _summary_table(runs, None)
    backlog = {}
    for run in rbcs:
        final = metrics.backlogs(run.strategy).iloc[-1].mean()
        backlog.setdefault(short_label(run), []).append(final)
    table["mean backlog, last round"] = [
        _pm(*metrics.mean_ci(backlog[s]), digits=1) if s in backlog else "-"
        for s in table["strategy"]
    ]
    _write_table(table, out / "rbcs_f_numerical.md")


def mab_cs_differences(runs: Runs) -> pd.DataFrame:
    """Per (eta, strategy): T_FedCS - T_* (eq. (12) of Yoshida et al. 2020) and its ratio to
    T_FedCS, paired
    by seed (mean and 95% CI half-width over the seeds)."""
    rows = []
    for run in runs:
        eta = run.scenario_dict["radio"].get("fluctuation_eta")
        rows.append(
            {
                "eta": "none" if eta is None else f"{eta:g}",
                "strategy": short_label(run),
                "seed": run.scenario_dict["seed"],
                "time_s": float(run.summary["sim_time_s"]),
            }
        )
    frame = pd.DataFrame(rows)
    strategies = [s for s in dict.fromkeys(frame["strategy"]) if s != "FedCS"]
    wide = frame.pivot_table(index=["eta", "seed"], columns="strategy", values="time_s")
    out = []
    for eta in sorted(set(frame["eta"]), key=lambda e: -1.0 if e == "none" else float(e)):
        part = wide.xs(eta, level="eta")
        fedcs = part["FedCS"].to_numpy()
        for strategy in strategies:
            diff = fedcs - part[strategy].to_numpy()
            mean, half = metrics.mean_ci(diff)
            ratio, ratio_half = metrics.mean_ci(diff / fedcs)
            wins = int(np.sum(diff > 0))
            out.append(
                {
                    "eta": eta,
                    "strategy": strategy,
                    "T_FedCS (s)": float(np.mean(fedcs)),
                    "T_FedCS - T_* (s)": mean,
                    "ci95 (s)": half,
                    "ratio": ratio,
                    "ratio ci95": ratio_half,
                    "faster than FedCS": f"{wins}/{len(diff)}",
                }
            )
    return pd.DataFrame(out)


def mab_cs(runs: Runs, out: Path) -> None:
    """Yoshida et al. 2020 Figs. 1-2: T_FedCS - T_* and the reduction ratio against eta."""
    table = mab_cs_differences(runs)
    fig = Figure(figsize=(10, 4), layout="constrained")
    left, right = fig.subplots(1, 2)
    etas = list(dict.fromkeys(table["eta"]))
    x = np.arange(len(etas))
    for strategy, part in table.groupby("strategy", sort=False):
        part = part.set_index("eta").loc[etas]
        left.errorbar(x, part["T_FedCS - T_* (s)"], yerr=part["ci95 (s)"], marker="o",
                      capsize=3, label=strategy)  # fmt: skip
        right.errorbar(x, 100 * part["ratio"], yerr=100 * part["ratio ci95"], marker="o",
                       capsize=3, label=strategy)  # fmt: skip
    for ax, ylabel in ((left, "T_FedCS - T_* (s)"), (right, "reduction vs FedCS (%)")):
        ax.axhline(0, color="k", lw=0.8)
        ax.set_xticks(x, etas)
        ax.set(xlabel="fluctuation eta", ylabel=ylabel)
        ax.grid(alpha=0.3)
    left.legend(fontsize="small")
    left.set_title("Elapsed time saved against FedCS (eq. 12)")
    right.set_title("Ratio of reduction")
    _save(fig, out / "mab_cs_eta.png")
    shown = table.assign(
        **{
            "T_FedCS (s)": table["T_FedCS (s)"].map(lambda v: f"{v:.4g}"),
            "T_FedCS - T_* (s)": [
                _pm(m, h)
                for m, h in zip(table["T_FedCS - T_* (s)"], table["ci95 (s)"], strict=True)
            ],
            "ratio": [
                f"{100 * m:+.2f}% ± {100 * h:.2f}%"
                for m, h in zip(table["ratio"], table["ratio ci95"], strict=True)
            ],
        }
    ).drop(columns=["ci95 (s)", "ratio ci95"])
    _write_table(shown, out / "mab_cs_eta.md")


def compare_selection(runs: Runs, out: Path) -> None:
    """The headline comparison: accuracy vs simulated time (mean, 95% CI band), the table."""
    target = compare.common_target(runs, None)
    _save(relabel(plots.accuracy_vs_time(runs), runs), out / "compare_selection.png")
    _write_table(_summary_table(runs, target), out / "compare_selection.md")


def multicell(runs: Runs, out: Path) -> None:
    """scenarios/multicell.yaml against one cell: accuracy vs simulated time, the table."""
    target = compare.common_target(runs, None)
    _save(relabel(plots.accuracy_vs_time(runs), runs, cell_label), out / "multicell.png")
    _write_table(_summary_table(runs, target, cell_label), out / "multicell.md")


def async_compare(runs: Runs, out: Path) -> None:
    """scenarios/async_compare.yaml: accuracy vs simulated time, staleness, the table."""
    target = compare.common_target(runs, None)
    figure = relabel(plots.accuracy_vs_time(runs), runs, protocol_label)
    _save(figure, out / "async_compare.png")
    staleness = relabel(plots.staleness_histogram(runs), runs, protocol_label)
    _save(staleness, out / "async_compare_staleness.png")
    table = _summary_table(runs, target, protocol_label, ASYNC_COLUMNS)
    _write_table(table.rename(columns={"strategy": "protocol"}), out / "async_compare.md")


def mobility_label(run: Run) -> str:
    """The strategy and whether the devices move: ``FedCS, moving`` or ``FedCS, static``."""
    groups = run.scenario_dict["devices"]["groups"]
    speeds = [(g.get("mobility") or {}).get("speed_mps", 0) for g in groups]
    moving = any(_positive(v) for v in speeds)
    return f"{short_label(run)}, {'moving' if moving else 'static'}"


def _positive(speed: object) -> bool:
    """A speed key as written or resolved (a number, or a distribution: ``constant`` with
    its ``value``, any other kind moves)."""
    if isinstance(speed, dict):
        return speed.get("dist") != "constant" or float(speed.get("value", 0)) != 0
    return float(speed or 0) != 0  # type: ignore[arg-type]


def _mean_round_s(run: Run) -> float:
    rounds = run.rounds
    return float((rounds["t_end_s"] - rounds["t_start_s"]).mean())


def _lost_to_rlf(run: Run) -> float:
    return float((run.timeline["kind"] == "radio_link_lost").sum())


def _handovers_per_device_hour(run: Run) -> float:
    hours = float(run.summary["sim_time_s"]) / 3600.0
    return float(run.clients["n_handovers"].sum()) / (len(run.clients) * hours)


MOBILITY_COLUMNS = {
    "mean_round_s": ("mean round (s)", 2),
    "lost_to_rlf": ("updates lost to RLF", 1),
    "handovers_per_device_hour": ("handovers per device-hour", 1),
}


def mobility(runs: Runs, out: Path) -> None:
    """scenarios/mobility.yaml moving against static: accuracy vs simulated time, the table
    with round time, updates lost to radio link failure and the handover rate."""
    target = compare.common_target(runs, None)
    _save(relabel(plots.accuracy_vs_time(runs), runs, mobility_label), out / "mobility.png")
    per_run = {
        "mean_round_s": _mean_round_s,
        "lost_to_rlf": _lost_to_rlf,
        "handovers_per_device_hour": _handovers_per_device_hour,
    }
    table = _summary_table(runs, target, mobility_label, MOBILITY_COLUMNS, per_run)
    _write_table(table, out / "mobility.md")


def _write_table(table: pd.DataFrame, path: Path) -> None:
    path.write_text(markdown(table), encoding="utf-8")
    print(path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "which", choices=["rbcs_f", "mab_cs", "compare", "multicell", "async", "mobility"]
    )
    parser.add_argument("sweep", help="the sweep directory (or run directories, a glob)")
    parser.add_argument("--out", default=str(HERE), help="folder for PNGs and tables")
    args = parser.parse_args(argv)
    runs = netfl.load_runs(args.sweep)
    draw = {
        "rbcs_f": rbcs_f,
        "mab_cs": mab_cs,
        "compare": compare_selection,
        "multicell": multicell,
        "async": async_compare,
        "mobility": mobility,
    }[args.which]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    draw(runs, out)


if __name__ == "__main__":
    main()
