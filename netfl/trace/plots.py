"""Figures of runs, for ``netfl report``/``netfl compare`` and notebooks.

Every function takes runs (a :class:`~netfl.trace.run.Run`, a :class:`~netfl.trace.runs.Runs`
or a list of runs) or a DataFrame and returns a :class:`matplotlib.figure.Figure`. Figures
are made without pyplot (no global state, safe with the Agg backend and in threads); in a
notebook, ``%matplotlib inline`` displays them, and ``fig.savefig(path)`` writes them.

Runs of one configuration (same parameters except the seed, see
:meth:`Runs.configuration <netfl.trace.runs.Runs.configuration>`) are drawn as their mean
with a band: the 95% Student-t confidence interval of the mean (``band="ci"``), plus or
minus one standard deviation (``"sd"``), or none (``None``).

Strategy records (:func:`backlogs`, :func:`score_convergence`) are read from a run's
``strategy.parquet`` or from any DataFrame in its long format (``netfl/recorder/strategy.py``):
one row per (round, score, client) with the columns ``round``, ``client``, ``score`` (the
name the strategy gave it) and ``value``, e.g. RBCS-F's virtual-queue backlogs
``Z_{t,n}`` (score ``backlog``, eq. (6) of Huang et al. 2021) or UCB indices
(``ucb``).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from netfl.config.fl import ASYNC_PROTOCOLS
from netfl.errors import MissingDataError
from netfl.trace import metrics
from netfl.trace.drawing import (
    MIN_BAND_SEEDS,
    RunsLike,
    as_runs,
    draw_mean,
    finish,
    groups,
    labelled,
    mean_band,
    message,
)
from netfl.trace.map_plot import layout
from netfl.trace.phases import PHASES
from netfl.trace.run import Run

PHASE_COLOURS = dict(
    zip(PHASES, ("#4C72B0", "#CCCCCC", "#55A868", "#EEDD88", "#C44E52"), strict=True)
)


def accuracy_vs_time(runs: RunsLike, band: str | None = "ci", points: int = 400) -> Figure:
    """Test accuracy against simulated time, one curve (mean over seeds) per configuration.

    A run's accuracy at time t is that of its latest evaluation (a step function); after its
    last round it keeps its final accuracy (the model no longer changes), so runs of one
    configuration that end at different times still average over all seeds. Bands are
    clipped to [0, 1].
    """
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    for label, group in groups(runs):
        end = max(float(r.rounds["t_end_s"].max()) for r in group)
        grid = np.linspace(0.0, end, points)
        matrix = np.vstack([r.accuracy_at(grid) for r in group])
        draw_mean(ax, grid, matrix, label, band, step=True, clip=(0.0, 1.0))
    _target_lines(ax, runs)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("test accuracy")
    return finish(fig, ax, "Accuracy vs simulated time")


def is_asynchronous(run: Run) -> bool:
    """Whether the run's protocol (``fl.protocol``) is asynchronous
    (:data:`netfl.config.fl.ASYNC_PROTOCOLS`): only then can an update be stale; a
    synchronous round aggregates the updates made for it (staleness 0)."""
    fl = run.scenario_dict.get("fl") or {}
    return isinstance(fl, dict) and fl.get("protocol") in ASYNC_PROTOCOLS


def staleness_histogram(runs: RunsLike) -> Figure:
    """Share of the aggregated updates by staleness (global versions between a client's
    download and the aggregation), pooled over each configuration's runs.

    Only asynchronous configurations (:func:`is_asynchronous`) are drawn: a
    synchronous one is at 0 by construction, and a bar of it beside stale ones would read
    as a staleness; the figure names those it leaves out, and says so alone when every
    configuration is synchronous.
    """
    title = "Staleness of the aggregated updates"
    grouped = groups(runs)
    stale = [(label, group) for label, group in grouped if any(map(is_asynchronous, group))]
    drawn = {label for label, _ in stale}
    synchronous = [label for label, _ in grouped if label not in drawn]
    if not stale:
        return message(title, "synchronous protocol: every update is aggregated in its own"
                       " round (staleness 0)")  # fmt: skip
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    pooled = [np.concatenate([r.staleness().to_numpy() for r in group]) for _, group in stale]
    everything = np.concatenate(pooled)
    # The tail beyond the 99.5th percentile goes into the last bar (labelled ">=").
    top = int(np.ceil(np.percentile(everything, 99.5))) if len(everything) else 0
    width = 0.8 / len(stale)
    for k, ((label, _), values) in enumerate(zip(stale, pooled, strict=True)):
        if not len(values):
            continue
        share = np.bincount(np.minimum(values, top), minlength=top + 1) / len(values)
        mean = f"mean {values.mean():.2f}"
        ax.bar(np.arange(top + 1) + k * width, share, width=width, label=labelled(label, mean))
    tail = f" (last bar: {top} or more)" if len(everything) and everything.max() > top else ""
    ax.set(xlabel=f"staleness (global versions){tail}", ylabel="share of updates")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if synchronous:
        fig.supxlabel(
            textwrap.fill(
                "Not drawn, synchronous (staleness 0 by construction): " + "; ".join(synchronous),
                110,
            ),
            fontsize="small",
        )
    return finish(fig, ax, title)


def _target_lines(ax: Axes, runs: RunsLike) -> None:
    """A dashed line at each target accuracy the runs were given (learning.target_accuracy)."""
    targets = set()
    for run in as_runs(runs):
        learning = run.scenario_dict.get("learning") or {}
        target = learning.get("target_accuracy") if isinstance(learning, dict) else None
        if isinstance(target, int | float) and 0 < target <= 1:
            targets.add(float(target))
    for target in sorted(targets):
        ax.axhline(target, color="0.4", ls="--", lw=0.8, label=f"target {target:.0%}")


def _by_round(group: list[Run], column: str) -> tuple[np.ndarray, np.ndarray]:
    n_rounds = max(len(r.rounds) for r in group)
    matrix = np.full((len(group), n_rounds), np.nan)
    for i, r in enumerate(group):
        values = r.rounds.sort_values("round")[column].to_numpy(float)
        matrix[i, : len(values)] = values
    return np.arange(n_rounds), matrix  # the round index, 0-based as in rounds.parquet


def accuracy_vs_round(runs: RunsLike, band: str | None = "ci") -> Figure:
    """Test accuracy after each round, one curve (mean over seeds) per configuration."""
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    for label, group in groups(runs):
        x, matrix = _by_round(group, "accuracy")
        keep = np.any(np.isfinite(matrix), axis=0)
        draw_mean(ax, x[keep], matrix[:, keep], label, band, step=False, clip=(0.0, 1.0))
    _target_lines(ax, runs)
    ax.set_xlabel("round")
    ax.set_ylabel("test accuracy")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return finish(fig, ax, "Accuracy vs round")


def round_times(runs: RunsLike, band: str | None = "ci") -> Figure:
    """Cumulative simulated time at the end of each round (left) and each round's duration
    (right), one curve per configuration.

    Left: every seed counts at every round. A seed that stopped before a round (its time
    budget spent) holds its stop time there (:func:`netfl.trace.metrics.carried_round_ends`),
    a lower bound of when it would have got there; so the mean over the seeds never
    decreases, and the band (95% CI, or one standard deviation) is clipped to
    ``[0, the latest stop]``: no seed is observed outside it. The curve is solid while
    every seed reached the round and dotted from the first round some seed did not reach.
    Right: the mean duration over the seeds that ran the round.
    """
    fig = Figure(figsize=(10, 4.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    for label, group in groups(runs):
        ends = [_round_column(r, "t_end_s") for r in group]
        stops = [_stop_s(r) for r in group]
        matrix, reached = metrics.carried_round_ends(ends, stops)
        x = np.arange(matrix.shape[1])
        _draw_carried(left, x, matrix, reached, label, band, max(stops, default=0.0))
        x_all, finished = _by_round(group, "t_end_s")
        _, starts = _by_round(group, "t_start_s")
        draw_mean(right, x_all, finished - starts, label, band, step=False, clip=(0.0, math.inf))
    left.set(xlabel="round", ylabel="cumulative simulated time (s)")
    right.set(xlabel="round", ylabel="round duration (s)")
    for ax in (left, right):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.supxlabel(
        "Left: a seed that stopped before a round counts at its stop time (a lower bound);"
        " dotted from the first round not every seed reached.",
        fontsize="small",
    )
    finish(fig, right, "Round duration", legend=False)
    return finish(fig, left, "Cumulative time per round")


def _round_column(run: Run, column: str) -> np.ndarray:
    """A column of the run's finished rounds, in round order."""
    rounds = run.rounds.sort_values("round")
    values = rounds[column].to_numpy(float)
    return values[np.isfinite(rounds["t_end_s"].to_numpy(float))]


def _stop_s(run: Run) -> float:
    """When the run stopped: ``summary.json``'s ``sim_time_s``, else its last round's end."""
    ends = _round_column(run, "t_end_s")
    last = float(ends[-1]) if len(ends) else 0.0
    stop = float(run.summary.get("sim_time_s", math.nan))
    return max(stop, last) if math.isfinite(stop) else last


def _draw_carried(
    ax: Axes,
    x: np.ndarray,
    matrix: np.ndarray,
    reached: np.ndarray,
    label: str,
    band: str | None,
    top_s: float,
) -> None:
    """The mean of carried round ends: solid while every run reached the round, dotted
    after; the band clipped to ``[0, top_s]``."""
    mean, low, high = mean_band(matrix, band)
    low, high = np.clip(low, 0.0, top_s), np.clip(high, 0.0, top_s)
    complete = reached == len(matrix)
    cut = int(np.argmin(complete)) if not complete.all() else len(x)
    suffix = f" (n={len(matrix)})" if len(matrix) > 1 else ""
    (line,) = ax.plot(x[:cut], mean[:cut], label=label + suffix)
    if cut < len(x):  # from the last complete round on, dotted
        start = max(cut - 1, 0)
        ax.plot(x[start:], mean[start:], ls=":", color=line.get_color())
    if band is not None:
        ax.fill_between(x, low, high, alpha=0.2, color=line.get_color(), lw=0)


def _gantt_rounds(
    phases: pd.DataFrame, rounds: int | Sequence[int] | None, max_rows: int
) -> list[int]:
    if isinstance(rounds, int):
        return [rounds]
    if rounds is not None:
        return list(rounds)
    per_round = phases.groupby("round").size()
    keep = per_round.index[per_round.cumsum() <= max_rows].tolist()
    return keep or per_round.index[:1].tolist()


def gantt(run: Run, rounds: int | Sequence[int] | None = None, max_rows: int = 30) -> Figure:
    """Per-client phases (download, wait, compute, upload wait, upload) of some rounds.

    One bar per (round, client), in simulated time; a cross marks a round cut by the
    deadline or a drop. By default, the first rounds that fit in ``max_rows`` bars.
    """
    phases = run.phases()
    if phases.empty:
        return message("Client phases", f"{run.id}: no client took part in any round")
    chosen = _gantt_rounds(phases, rounds, max_rows)
    intervals = run.phase_intervals()
    rows = phases[phases["round"].isin(chosen)].sort_values(["round", "client"])
    fig = Figure(figsize=(10, 1.5 + 0.25 * len(rows)), layout="constrained")
    ax = fig.add_subplot()
    y_of = {(r, c): i for i, (r, c) in enumerate(zip(rows["round"], rows["client"], strict=True))}
    for phase, colour in PHASE_COLOURS.items():
        part = intervals[(intervals["phase"] == phase) & intervals["round"].isin(chosen)]
        ys = [y_of[(r, c)] for r, c in zip(part["round"], part["client"], strict=True)]
        ax.barh(
            ys,
            part["end_s"] - part["start_s"],
            left=part["start_s"],
            height=0.7,
            color=colour,
            label=phase,
        )
    cut = rows[rows["outcome"].isin(["deadline_miss", "drop"])]
    ax.plot(
        cut["end_s"],
        [y_of[(r, c)] for r, c in zip(cut["round"], cut["client"], strict=True)],
        "kx",
        label="cut (deadline/drop)",
    )
    ends = run.rounds.set_index("round")["t_end_s"].reindex(chosen)
    for t in ends.dropna():
        ax.axvline(t, color="k", lw=0.6, ls=":")
    ax.set_yticks(range(len(rows)), [f"r{r} c{c}" for r, c in y_of], fontsize="x-small")
    ax.invert_yaxis()
    ax.set_xlabel("simulated time (s)")
    return finish(fig, ax, f"Client phases, rounds {chosen[0]}-{chosen[-1]} ({run.id})")


def rb_occupancy(run: Run, n_rb_total: float | None = None) -> Figure:
    """Resource blocks in use over time, per direction (from ``rb_allocation`` events)."""
    try:
        usage = run.rb_usage(n_rb_total)
    except MissingDataError as exc:
        return message("Resource-block occupancy", str(exc))
    fig = Figure(figsize=(10, 3.5), layout="constrained")
    ax = fig.add_subplot()
    for direction, part in usage.groupby("direction"):
        ax.step(part["t_s"], part["n_rb_used"], where="post", label=f"{direction} RBs in use")
        total = part["n_rb_total"].iloc[-1]
        if np.isfinite(total):
            ax.axhline(total, ls="--", lw=0.8, color="k")
    ax.set(xlabel="simulated time (s)", ylabel="resource blocks")
    return finish(fig, ax, f"Resource-block occupancy ({run.id})")


def selection_heatmap(run: Run) -> Figure:
    """Clients x rounds: not selected, selected but cut, selected and arrived."""
    rounds = run.rounds.sort_values("round")
    n_clients = len(run.clients)
    grid = np.zeros((n_clients, len(rounds)))
    for j, (selected, completed) in enumerate(
        zip(rounds["selected"], rounds["completed"], strict=True)
    ):
        grid[np.asarray(selected, dtype=int), j] = 1
        grid[np.asarray(completed, dtype=int), j] = 2
    fig = Figure(figsize=(10, 1.5 + 0.12 * n_clients), layout="constrained")
    ax = fig.add_subplot()
    cmap = ListedColormap(["#F4F4F4", "#E0A040", "#2E7D32"])
    image = ax.imshow(grid, aspect="auto", interpolation="nearest", cmap=cmap, vmin=-0.5, vmax=2.5)
    bar = fig.colorbar(image, ax=ax, ticks=[0, 1, 2])
    bar.ax.set_yticklabels(["not selected", "selected, cut", "arrived"])
    ax.set(xlabel="round", ylabel="client")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    return finish(fig, ax, f"Selections ({run.id})", legend=False)


def pull_counts(runs: RunsLike) -> Figure:
    """Times each client was selected (mean over seeds per configuration), with Jain's index."""
    fig = Figure(figsize=(10, 4), layout="constrained")
    ax = fig.add_subplot()
    grouped = groups(runs)
    width = 0.8 / len(grouped)
    for k, (label, group) in enumerate(grouped):
        counts = pd.concat([r.selection_counts() for r in group], axis=1).mean(axis=1)
        fairness = np.mean([r.fairness() for r in group])
        ax.bar(
            counts.index + k * width,
            counts.to_numpy(),
            width=width,
            label=labelled(label, f"Jain {fairness:.3f}"),
        )
    ax.set(xlabel="client", ylabel="times selected")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return finish(fig, ax, "Pull counts")


def rate_cdf(runs: RunsLike, column: str = "rate_ul_bps") -> Figure:
    """Empirical CDF of the clients' rates (Mbit/s), pooled over each configuration's runs."""
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    drawn: list[np.ndarray] = []
    styles = ["-", "--", ":", "-."]
    for label, group in groups(runs):
        rates = np.sort(np.concatenate([r.clients[column].to_numpy(float) for r in group])) / 1e6
        rates = rates[np.isfinite(rates)]
        # Runs with the same seeds share the drop, so their rate CDFs coincide: dash the
        # repeats so that every configuration stays visible, and say so in the title.
        same = sum(np.array_equal(rates, other) for other in drawn)
        ax.step(
            rates,
            np.arange(1, len(rates) + 1) / len(rates),
            styles[same % len(styles)],
            where="post",
            label=label,
        )
        drawn.append(rates)
    ax.set(xlabel=f"{column.removesuffix('_bps')} (Mbit/s)", ylabel="fraction of clients")
    repeated = len(drawn) - len({tuple(r.tolist()) for r in drawn})
    title = "Client rates (CDF)"
    if repeated:
        title += ": curves of runs with the same seeds coincide (dashed)"
    return finish(fig, ax, title)


def sinr_cdf(runs: RunsLike) -> Figure:
    """Empirical CDFs of the clients' nominal downlink and uplink SINR (dB)."""
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    drawn = False
    for label, group in groups(runs):
        for column, style in (("sinr_dl_db", "-"), ("sinr_ul_db", "--")):
            if not all(column in r.clients for r in group):
                continue
            values = np.sort(np.concatenate([r.clients[column].to_numpy(float) for r in group]))
            values = values[np.isfinite(values)]
            if values.size == 0:
                continue
            name = "downlink" if column == "sinr_dl_db" else "uplink"
            ax.step(
                values,
                np.arange(1, values.size + 1) / values.size,
                style,
                where="post",
                label=labelled(label, name),
            )
            drawn = True
    if not drawn:
        return message("SINR (CDF)", "this run's radio reports no SINR (radio.model: fixed)")
    ax.set(xlabel="nominal SINR (dB)", ylabel="fraction of clients")
    return finish(fig, ax, "Client SINR (CDF): downlink solid, uplink dashed")


def _score_matrix(data: Run | pd.DataFrame, score: str | None) -> tuple[pd.DataFrame, str]:
    frame = data.strategy if isinstance(data, Run) else data
    missing = {"round", "client", "score", "value"} - set(frame.columns)
    if missing:
        raise MissingDataError(
            "strategy records need the columns round, client, score and value"
            f" (netfl/recorder/strategy.py); missing {sorted(missing)}"
        )
    names = sorted(set(frame["score"].astype(str)))
    if score is None and len(names) == 1:
        score = names[0]
    if score is None or score not in names:
        asked = "a score name is needed" if score is None else f"no score {score!r}"
        raise MissingDataError(f"{asked}; the strategy recorded: {', '.join(names) or 'none'}")
    return metrics.score_matrix(frame, score), score


def _per_client_lines(data: Run | pd.DataFrame, score: str | None, title: str) -> Figure:
    try:
        wide, score = _score_matrix(data, score)
    except MissingDataError as exc:
        return message(title, str(exc))
    fig = Figure(figsize=(8, 4), layout="constrained")
    ax = fig.add_subplot()
    if wide.shape[1] <= 50:
        ax.plot(wide.index, wide.to_numpy(), lw=0.7, alpha=0.5)
    else:
        low, high = np.nanpercentile(wide.to_numpy(), [10, 90], axis=1)
        ax.fill_between(wide.index, low, high, alpha=0.2, label="10-90% of clients")
    ax.plot(wide.index, wide.mean(axis=1), color="k", lw=2, label="mean over clients")
    ax.set(xlabel="round", ylabel=score)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return finish(fig, ax, f"{title}: {score}")


def backlogs(data: Run | pd.DataFrame, score: str = "backlog") -> Figure:
    """RBCS-F virtual-queue backlogs per client over rounds (eq. (6), Huang et al. 2021)."""
    return _per_client_lines(data, score, "Virtual-queue backlogs")


def backlog_means(runs: RunsLike, score: str = "backlog", band: str | None = "ci") -> Figure:
    """Mean backlog over the clients per round, one curve (mean over seeds) per configuration.

    Compares RBCS-F's queues across settings (Huang et al. 2021 Fig. 2: larger V
    converges more slowly to a higher backlog); runs whose strategy records no ``score``
    (random, FedCS) are left out.
    """
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    for label, group in groups(runs):
        means = []
        for run in group:
            frame = run.strategy
            if "score" in frame.columns and (frame["score"].astype(str) == score).any():
                means.append(metrics.score_matrix(frame, score).mean(axis=1))
        if means:
            wide = pd.concat(means, axis=1).sort_index()
            draw_mean(ax, wide.index.to_numpy() + 1, wide.to_numpy().T, label, band, step=False)
    if not ax.lines:
        return message("Mean virtual-queue backlog", f"no run recorded the score {score!r}")
    ax.set(xlabel="round", ylabel=f"mean {score} over clients")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return finish(fig, ax, f"Mean {score} over clients")


def score_convergence(data: Run | pd.DataFrame, score: str | None = None) -> Figure:
    """A strategy's per-client score over rounds (e.g. MAB-CS or Oort ``ucb``, FedCS ``t_inc``).

    ``score`` may be left out when the strategy records a single score.
    """
    return _per_client_lines(data, score, "Strategy scores")


def time_to_accuracy_bars(table: pd.DataFrame) -> Figure:
    """Mean time to target accuracy per configuration with its 95% CI (a compare table),
    over the runs that reached the target; every bar says how many did ("k/n reached",
    the table's ``reached`` column, where it has one), so a configuration that often fails
    does not pass for a fast one (the censored view:
    :func:`netfl.trace.survival.reached_fraction`). The CI is drawn only over
    :data:`~netfl.trace.drawing.MIN_BAND_SEEDS` runs that reached it or more."""
    lines = sum(len(textwrap.wrap(str(label), 45)) for label in table.index)
    fig = Figure(figsize=(8, 1.8 + 0.2 * max(2 * len(table), lines)), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(table))
    mean = table["time_to_target_s_mean"].to_numpy(float)
    half = table["time_to_target_s_ci95"].to_numpy(float)
    counts = list(table["reached"]) if "reached" in table else [None] * len(table)
    reached = np.array([_reached_count(c) for c in counts], dtype=float)
    half = np.where(np.isnan(reached) | (reached >= MIN_BAND_SEEDS), half, np.nan)
    # A time is never negative: the interval's lower arm stops at 0 (asymmetric bars).
    lower = np.minimum(half, np.maximum(mean, 0.0))
    ax.barh(y, np.nan_to_num(mean), xerr=np.vstack([lower, half]), capsize=3)
    reach = np.nan_to_num(mean + np.nan_to_num(half))
    for row, (end, count) in enumerate(zip(reach, counts, strict=True)):
        if count is None:
            continue
        few = np.isnan(half[row]) and np.isfinite(mean[row])
        ax.annotate(
            f"{count} reached" + (" (no CI)" if few else ""),
            (end, row),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize="small",
        )
    ax.margins(x=0.25)
    # Long configuration labels wrap, so that the bars and their labels keep the width.
    ax.set_yticks(y, [textwrap.fill(str(label), 45) for label in table.index], fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("simulated time to the target (s)")
    fig.supxlabel(
        f"Mean and 95% CI over the runs that reached the target (no CI with fewer than"
        f" {MIN_BAND_SEEDS}); the censored view: reached_target.",
        fontsize="small",
    )
    return finish(fig, ax, "Time to target accuracy", legend=False)


def _reached_count(text: object) -> float:
    """k of a "k/n" reached count (NaN if there is none)."""
    head = str(text).partition("/")[0]
    return float(head) if head.isdigit() else math.nan


__all__ = [
    "accuracy_vs_round",
    "accuracy_vs_time",
    "backlog_means",
    "backlogs",
    "gantt",
    "layout",
    "pull_counts",
    "rate_cdf",
    "rb_occupancy",
    "round_times",
    "score_convergence",
    "selection_heatmap",
    "time_to_accuracy_bars",
]
