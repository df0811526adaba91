"""``netfl report`` and ``netfl compare``: self-contained HTML reports with their figures.

A report folder holds ``report.html`` (every figure embedded as a base64 PNG, so the file
can be mailed or archived alone), the same figures as PNG files, and the tables as CSV. A
report folder is never overwritten silently: an existing non-empty folder is refused
unless ``force``, and even then only if it holds a ``report.html`` (the rules of
:mod:`netfl.rundir`).
"""

from __future__ import annotations

import base64
import html
import io
import math
import warnings
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from channel_models.nr import TddPattern
from netfl._version import __version__
from netfl.errors import MissingDataError, NetflError
from netfl.map.geometry import fluid_flow_crossings_per_m
from netfl.rundir import prepare_output_dir, write_bytes, write_text
from netfl.trace import compare, learning_plots, local_work, metrics, plots
from netfl.trace.phases import PHASES
from netfl.trace.run import STRATEGY_FILE, Run, load_runs
from netfl.trace.runs import Runs

REPORT_FILE = "report.html"
MAX_SCORE_FIGURES = 6
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f4f4f4; } td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; } .warn { background: #fff3cd; padding: 0.5em 1em; }
pre { background: #f8f8f8; padding: 1em; overflow-x: auto; font-size: 0.8em; }
"""


def prepare_report_dir(path: Path, force: bool) -> Path:
    def owned(folder: Path) -> bool:
        return (folder / REPORT_FILE).is_file()

    return prepare_output_dir(path, force, "report", owned, REPORT_FILE)


class _Page:
    """Collects HTML sections and writes figures as PNG files beside the page."""

    def __init__(self, folder: Path, title: str) -> None:
        self.folder, self.title = folder, title
        self.parts: list[str] = []
        self.files: list[Path] = []

    def heading(self, text: str) -> None:
        self.parts.append(f"<h2>{html.escape(text)}</h2>")

    def text(self, text: str, css: str = "") -> None:
        klass = f' class="{css}"' if css else ""
        self.parts.append(f"<p{klass}>{html.escape(text)}</p>")

    def table(self, frame: pd.DataFrame, name: str | None = None, index: bool = True) -> None:
        self.parts.append(frame.to_html(index=index, float_format=lambda v: f"{v:.4g}", na_rep="-"))
        if name is not None:
            path = self.folder / f"{name}.csv"
            write_text(path, _flat(frame, index).to_csv(index=False))
            self.files.append(path)

    def figure(self, name: str, make: Callable[[], Figure]) -> None:
        try:
            fig = make()
        except MissingDataError as exc:  # a figure that cannot be drawn says why
            self.text(f"{name}: {exc}")
            return
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=100)
        png = buffer.getvalue()
        path = self.folder / f"{name}.png"
        write_bytes(path, png)
        self.files.append(path)
        encoded = base64.b64encode(png).decode("ascii")
        self.parts.append(f'<img alt="{html.escape(name)}" src="data:image/png;base64,{encoded}">')

    def write(self) -> Path:
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        page = (
            f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>"
            f"{html.escape(self.title)}</title><style>{_STYLE}</style></head><body>"
            f"<h1>{html.escape(self.title)}</h1><p>netfl {__version__}, {stamp}</p>"
            + "\n".join(self.parts)
            + "</body></html>\n"
        )
        path = self.folder / REPORT_FILE
        write_text(path, page)
        return path


def run_summary(run: Run, last_k: int = compare.LAST_K) -> pd.DataFrame:
    """The key figures of one run as a two-column table (``quantity``, ``value``): the
    summary's, the last ``last_k`` evaluations' mean accuracy and its spread beside the
    final one, and the achieved uplink rate beside the nominal ones (:data:`NOTES`)."""
    s = run.summary
    keys = ["name", "seed", "status", "error", "rounds", "sim_time_s", "wall_time_s",
            "n_clients", "final_accuracy", "target_accuracy", "time_to_target_s",
            "rounds_to_target", "model_size_bits", "rate_ul_mean_bps", "rate_ul_max_bps",
            "rate_dl_mean_bps", "device", "netfl_version"]  # fmt: skip
    rows = [(k, s[k]) for k in keys if k in s.index]
    mean, sd = metrics.last_evaluations(run.rounds, last_k)
    last_mean, last_sd = compare.last_k_columns(last_k)
    _insert_after(rows, "final_accuracy", [(last_mean, mean), (last_sd, sd)])
    achieved = float(run.upload_rates_bps().mean())
    _insert_after(rows, "rate_dl_mean_bps", [("rate_ul_achieved_mean_bps", achieved)])
    rows.append(("selection", (run.scenario_dict.get("selection") or {}).get("name")))
    rows += radio_rows(run.scenario_dict.get("radio") or {})
    rows.append(("fairness_jain (selection counts)", run.fairness()))
    if compare.has_client_losses(run):
        rows.append(("loss_jain (clients' losses, last evaluation)", run.loss_fairness().iloc[-1]))
    return pd.DataFrame(rows, columns=["quantity", "value"])


#: What a summary quantity means, where its name does not say it (shown beside it).
NOTES = {
    "rate_ul_mean_bps": "nominal: mean over clients of the rate at placement, alone on the link",
    "rate_ul_max_bps": "nominal, at placement",
    "rate_dl_mean_bps": "nominal, at placement",
    "rate_ul_achieved_mean_bps": "achieved: mean over the completed FL uploads of bits/duration",
}


def _insert_after(rows: list[tuple[str, object]], key: str, new: list[tuple[str, object]]) -> None:
    """Insert ``new`` after the row ``key`` (at the end if there is none)."""
    keys = [k for k, _ in rows]
    at = keys.index(key) + 1 if key in keys else len(rows)
    rows[at:at] = new


def readable_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary for people: each value with its unit and a few digits (3.62 Mbit/s), and
    what a quantity means where its name does not say it (:data:`NOTES`)."""
    keys = summary["quantity"].astype(str)
    shown = [_show(v, k) for k, v in zip(keys, summary["value"], strict=True)]
    last = [k for k in keys if k.startswith("accuracy_last")]
    notes = {**NOTES, **{k: _last_k_note(k) for k in last}}
    names = [f"{k} ({notes[k]})" if k in notes else k for k in keys]
    return pd.DataFrame({"quantity": names, "value": shown})


def _last_k_note(key: str) -> str:
    k = key.removeprefix("accuracy_last").removesuffix("_sd")
    what = "standard deviation" if key.endswith("_sd") else "mean"
    return f"{what} of the accuracy over the last {k} evaluations"


def radio_rows(radio: dict[str, Any]) -> list[tuple[str, object]]:
    """The radio model, and for NR its numerology, duplexing and TDD pattern with shares."""
    rows: list[tuple[str, object]] = [("radio model", radio.get("model", "lte"))]
    if radio.get("model") != "nr":
        return rows
    mu = int(radio.get("numerology", 1))
    rows.append(("numerology", f"mu = {mu} ({15 * 2**mu} kHz SCS, {1 / 2**mu:g} ms slots)"))
    rows.append(("duplex", radio.get("duplex", "tdd")))
    if radio.get("duplex", "tdd") == "tdd":
        pattern = TddPattern.parse(
            radio.get("tdd_pattern", "DDDSU"), radio.get("tdd_special_slot", "10:2:2")
        )
        special = ":".join(str(n) for n in pattern.special)
        rows.append(
            (
                "TDD pattern",
                f"{pattern.slots} (S = {special} DL:guard:UL symbols; UL share"
                f" {pattern.share('ul'):.3f}, DL share {pattern.share('dl'):.3f})",
            )
        )
    return rows


def _flat(frame: pd.DataFrame, index: bool) -> pd.DataFrame:
    """One header line for CSV readers: MultiIndex columns joined (``compute_s_mean``), the
    index as ordinary columns."""
    flat = frame.copy()
    if isinstance(flat.columns, pd.MultiIndex):
        flat.columns = ["_".join(str(p) for p in col if str(p)) for col in flat.columns]
    return flat.reset_index() if index else flat


#: Readable units for the summary's quantities, by the key's unit suffix.
_SCALES = (
    ("_bps", ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s"), (1.0, "bit/s"))),
    ("_bits", ((8e9, "GB"), (8e6, "MB"), (8e3, "kB"), (1.0, "bit"))),
    ("_s", ((1.0, "s"),)),
)


def _show(value: object, key: str = "") -> str:
    """A summary value with its unit and 3-4 significant digits: 3.62 Mbit/s, not 3.62e+06."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return "-"
    for suffix, units in _SCALES:
        if key.endswith(suffix):
            factor, unit = next(((f, u) for f, u in units if abs(value) >= f), units[-1])
            return f"{value / factor:,.3g} {unit}" if factor > 1 else f"{value:,.4g} {unit}"
    return f"{value:,.4g}" if isinstance(value, float) else str(value)


def load_table(run: Run) -> pd.DataFrame:
    """The run's load plan (:func:`netfl.planning.load_plan`), a row per direction: the
    background load expected where the cells settle and in the worst case, what the run
    realised in the cells that carried FL (``summary.json``'s
    ``rb_utilisation_<ul|dl>_background``; NaN where not recorded), and the FL room as
    fractions of capacity, in bit/s and in model transfers a second (empty for the
    fixed-rate radio)."""
    from netfl.planning import load_plan

    summary = run.summary
    rows = [
        {
            "direction": row.direction,
            "cells": row.cells,
            "rbs": row.rb_count,
            "capacity_bps": row.capacity_bps,
            "background_fraction": row.background_fraction,
            "worst_case_fraction": row.worst_case_fraction,
            "realised_background_fraction": _realised(summary, row.direction),
            "background_sources": ", ".join(row.keys),
            "fl_room_fraction": row.room_fraction,
            "fl_room_bps": row.room_bps,
            "model_transfers_per_s": row.transfers_per_s,
        }
        for row in load_plan(run.scenario)
    ]
    return pd.DataFrame(rows)


def _realised(summary: pd.Series, direction: str) -> float:
    value = summary.get(f"rb_utilisation_{direction[0]}l_background")
    return math.nan if value is None or pd.isna(value) else float(value)


def phase_statistics(run: Run) -> pd.DataFrame:
    """Mean, max and count of each phase's duration over all selected clients, by outcome."""
    phases = run.phases()
    columns = [f"{p}_s" for p in PHASES]
    if phases.empty:
        return pd.DataFrame()
    stats = phases.groupby("outcome", observed=True)[columns].agg(["mean", "max"])
    stats.insert(0, ("clients", "count"), phases.groupby("outcome", observed=True).size())
    return stats


def write_report(run_dir: str | Path, out: str | Path | None = None, force: bool = False) -> Path:
    """Write the report of one run (default folder ``RUN_DIR/report``); return report.html."""
    run = Run(run_dir)
    folder = prepare_report_dir(Path(out) if out else run.path / "report", force)
    page = _Page(folder, f"netfl run {run.id}")
    page.heading("Summary")
    summary = run_summary(run)
    page.table(readable_summary(summary), index=False)
    write_text(folder / "summary.csv", summary.to_csv(index=False))
    page.files.append(folder / "summary.csv")
    page.heading("Accuracy")
    page.figure("accuracy_vs_time", lambda: plots.accuracy_vs_time(run))
    page.figure("accuracy_vs_round", lambda: plots.accuracy_vs_round(run))
    if compare.has_client_losses(run):
        page.heading("Client losses (learning.fairness_loss)")
        page.figure("global_loss", lambda: learning_plots.global_loss(run))
        page.figure("global_loss_vs_time", lambda: learning_plots.global_loss(run, x="time"))
        page.figure("loss_fairness", lambda: learning_plots.loss_fairness(run))
    page.heading("Time")
    page.figure("round_times", lambda: plots.round_times(run))
    _staleness(page, [run])
    page.figure("gantt", lambda: plots.gantt(run))
    page.table(phase_statistics(run), "phases")
    if local_work.has_local_work(run):
        page.heading("Local work (fl.partial_work)")
        page.text(
            "Local SGD steps asked of and done by each selected client (rounds.parquet's"
            " steps_planned and steps_done; per client and round in local_work.csv)."
        )
        page.table(local_work.work_summary(run), index=False)
        page.figure("work_done", lambda: local_work.work_done_figure(run))
        write_text(folder / "local_work.csv", local_work.local_work(run).to_csv(index=False))
        page.files.append(folder / "local_work.csv")
    radio = run.scenario_dict.get("radio") or {}
    if radio.get("record_rb_allocations"):
        page.figure("rb_occupancy", lambda: plots.rb_occupancy(run))
    else:
        page.text(
            "Resource-block occupancy: not recorded (radio.record_rb_allocations is off;"
            " set it to true to draw this panel)."
        )
    page.heading("Selection")
    page.figure("selection_heatmap", lambda: plots.selection_heatmap(run))
    page.figure("pull_counts", lambda: plots.pull_counts(run))
    page.figure("distinct_selected", lambda: learning_plots.distinct_selected(run))
    page.figure("rate_cdf", lambda: plots.rate_cdf(run))
    page.heading("Radio")
    try:
        load = load_table(run)
    except NetflError as exc:  # e.g. a plug-in channel model this machine cannot import
        load = pd.DataFrame()
        page.text(f"Load: not computed ({exc})")
    if len(load):
        page.text(
            "Background load offered to each direction over its capacity (for users dropped"
            " in the cell), and the room it leaves for FL transfers (netfl/planning.py)."
        )
        page.table(load, "load", index=False)
    page.figure("layout", lambda: plots.layout(run))
    if "n_handovers" in run.clients:
        page.text(_mobility_text(run))
    page.figure("sinr_cdf", lambda: plots.sinr_cdf(run))
    if (run.path / STRATEGY_FILE).exists():
        page.heading("Strategy")
        names = sorted(set(run.strategy["score"].astype(str))) if "score" in run.strategy else []
        for name in names[:MAX_SCORE_FIGURES]:
            page.figure(f"score_{name}", partial(plots.score_convergence, run, name))
    page.heading("Scenario")
    text = (run.path / "scenario.resolved.yaml").read_text(encoding="utf-8")
    page.parts.append(
        f"<details><summary>resolved scenario</summary><pre>{html.escape(text)}</pre></details>"
    )
    return page.write()


def _time_to_target(page: _Page, table: pd.DataFrame, grouped: pd.DataFrame, target: float) -> None:
    """The time-to-target section: bars with "k/n reached", the Kaplan-Meier fraction of
    seeds that reached the target against time, and the log-rank tests."""
    from netfl.trace import survival

    page.heading("Time to target (runs that did not reach it are censored)")
    if len(grouped) > 1:
        page.figure("time_to_target", lambda: plots.time_to_accuracy_bars(grouped))
    page.figure("reached_target", lambda: survival.reached_fraction(table, target))
    tests = survival.logrank(table)
    if len(tests):
        page.text(
            "Log-rank tests against the first configuration (Mantel 1966): p_value over all"
            " runs, p_value_by_seed stratified by seed (runs compared within a seed: the"
            " paired design). Both keep the runs that never reached the target as censored."
        )
        page.table(tests, "time_to_target_logrank", index=False)


def _staleness(page: _Page, runs: Iterable[Run]) -> None:
    """The staleness histogram where some run is asynchronous; for synchronous runs (every
    update at staleness 0 by construction) a line that says so instead."""
    runs = list(runs)
    if any(map(plots.is_asynchronous, runs)):
        page.figure("staleness_histogram", partial(plots.staleness_histogram, runs))
    else:
        page.text(
            "Staleness: not drawn; the protocol is synchronous, so every update is aggregated"
            " in the round it was made for (staleness 0)."
        )


def write_comparison(
    specs: Iterable[str | Path],
    out: str | Path,
    *,
    target: float | None = None,
    force: bool = False,
    last_k: int = compare.LAST_K,
) -> tuple[Path, list[str]]:
    """Write one report comparing runs (run dirs, globs or sweep dirs); return it and warnings.

    ``last_k``: evaluations averaged beside the final accuracy (``accuracy_last<k>``)."""
    all_runs = Runs([r for spec in specs for r in load_runs(spec)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", compare.ComparisonWarning)
        runs = Runs([r for r in all_runs if r.status == "completed"])
        diverged = [r for r in all_runs if r.status == "diverged"]
        if diverged:
            shown = ", ".join(
                f"{r.id} (round {r.summary.get('diverged_round')})" for r in diverged[:5]
            )
            message = (
                f"diverged runs (their model or loss became non-finite), not averaged in:"
                f" {shown}{', ...' if len(diverged) > 5 else ''}"
            )
            warnings.warn(message, compare.ComparisonWarning, stacklevel=2)
        skipped = [r.id for r in all_runs if r.status not in ("completed", "diverged")]
        if skipped:
            shown = ", ".join(skipped[:5])
            message = f"left out {len(skipped)} runs that did not complete: {shown}"
            warnings.warn(message, compare.ComparisonWarning, stacklevel=2)
        if not len(runs):
            raise MissingDataError("no completed run to compare")
        compare.check_datasets(runs)
        chosen = compare.common_target(runs, target)
    messages = [str(w.message) for w in caught if issubclass(w.category, compare.ComparisonWarning)]
    folder = prepare_report_dir(Path(out), force)
    page = _Page(folder, f"netfl comparison of {len(runs)} runs")
    for message in messages:
        page.text(f"warning: {message}", "warn")
    table = compare.per_run(runs, chosen, last_k)
    grouped = compare.by_configuration(table)
    page.heading("By configuration (mean and 95% CI half-width over seeds)")
    target_text = "not set" if chosen is None else f"{chosen:g}"
    page.text(f"Target accuracy: {target_text}. time_to_target_s is averaged over the runs "
              "that reached it (column reached); time_to_target_km_median_s is the "
              "Kaplan-Meier median, which counts the others as censored at their end: the "
              "first time at which at least half of the seeds had reached the target, where "
              "the reached_target curve meets 0.5.")  # fmt: skip
    page.text(f"final_accuracy is each run's last evaluation; accuracy_last{last_k} the mean "
              f"of its last {last_k} evaluations and accuracy_last{last_k}_sd their standard "
              "deviation (how much the last rounds swing). uplink_busy_fraction: the share "
              "of simulated time with at least one FL upload on the air. "
              "rate_ul_achieved_mean_bps: the mean over completed FL uploads of bits over "
              "duration (the rate at placement is the nominal rate_ul_mean_bps of "
              "summary.json).")  # fmt: skip
    page.table(grouped, "comparison")
    if chosen is not None and grouped["time_to_target_s_mean"].notna().any():
        _time_to_target(page, table, grouped, chosen)
    pairs = compare.paired(runs, table)
    if len(pairs):
        page.heading("Paired differences (common random numbers)")
        page.text(compare.CRN_NOTE + " Time to target is differenced over the pairs where both"
                  " runs reached it (n_pairs); the log-rank test by seed above keeps the"
                  " others.")  # fmt: skip
        page.table(pairs, "paired", index=False)
    page.heading("Figures")
    for name in ("accuracy_vs_time", "accuracy_vs_round", "round_times"):
        page.figure(name, partial(getattr(plots, name), runs))
    _staleness(page, runs)
    for name in ("pull_counts", "rate_cdf"):
        page.figure(name, partial(getattr(plots, name), runs))
    if all(compare.has_client_losses(r) for r in runs):
        page.figure("global_loss", partial(learning_plots.global_loss, runs))
        page.figure("global_loss_vs_time", partial(learning_plots.global_loss, runs, x="time"))
        page.figure("loss_fairness", partial(learning_plots.loss_fairness, runs))
    page.heading("Runs")
    page.table(table, "runs", index=False)
    return page.write(), messages


def _mobility_text(run: Run) -> str:
    """The handover rate of the moving devices (``clients.parquet`` counters)."""
    clients, hours = run.clients, float(run.summary["sim_time_s"]) / 3600.0
    moving = clients[clients["group"].isin(_moving_groups(run))]
    n = len(moving)
    handovers = int(moving["n_handovers"].sum())
    rate = handovers / (n * hours) if n and hours > 0 else float("nan")
    return (
        f"Mobility: {n} moving devices made {handovers} handovers ({rate:.1f} per device-hour"
        f"{_fluid_flow_text(run, moving, rate, n * hours)}),"
        f" {int(moving['n_ping_pongs'].sum())} of them ping-pongs, and"
        f" {int(moving['n_radio_link_failures'].sum())} radio link failures"
        " (the layout: their trajectories coloured by serving cell, x: handovers)."
    )


def _fluid_flow_text(run: Run, moving: pd.DataFrame, rate: float, device_hours: float) -> str:
    """The fluid-flow reference beside a measured handover rate: the cell boundaries the
    devices' distance would cross with uniform directions and no shadowing, hysteresis or
    time-to-trigger (:func:`netfl.map.geometry.fluid_flow_crossings_per_m`); a road's
    vehicles cross at a rate that depends on its heading."""
    if "travelled_m" not in moving or not device_hours > 0:
        return ""
    cell = run.scenario.cell
    per_m = fluid_flow_crossings_per_m(cell.radius_m, cell.sectors)
    reference = float(moving["travelled_m"].sum()) * per_m / device_hours
    ratio = f", {rate / reference:.2f}x" if reference > 0 else ""
    return f"; fluid-flow reference {reference:.1f}{ratio}"


def _moving_groups(run: Run) -> set[str]:
    import yaml

    scenario = yaml.safe_load((run.path / "scenario.resolved.yaml").read_text(encoding="utf-8"))
    groups = scenario.get("devices", {}).get("groups", [])
    return {
        str(g.get("name")) for g in groups if (g.get("mobility") or {}).get("model") != "static"
    }
