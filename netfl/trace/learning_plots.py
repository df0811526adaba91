"""Figures of learning-aware selection: global loss, loss fairness, participation.

Same conventions as :mod:`netfl.trace.plots` (runs of one configuration drawn as their
mean over seeds with a band; figures made without pyplot):

- :func:`global_loss`: F(w) = sum_k p_k F_k(w) (eq. (1) of Cho et al. 2020)
  against rounds or simulated time (UCB-CS Fig. 1); needs ``learning.fairness_loss``;
- :func:`loss_fairness`: Jain's index of the clients' losses at each evaluation (eq. (3)
  of Cho et al. 2020; Table I gives its final value);
- :func:`distinct_selected`: clients selected at least once over rounds (GPFL Fig. 4,
  Na et al. 2024);
- :func:`selection_histogram`: how many clients were selected f times (GPFL Fig. 5).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from netfl.errors import MissingDataError
from netfl.trace.drawing import RunsLike, draw_mean, finish, groups, message
from netfl.trace.metrics import step_at
from netfl.trace.run import Run

Axis = Literal["round", "time"]


def _round_matrix(series: list[pd.Series]) -> tuple[np.ndarray, np.ndarray]:
    """Per-round values of several runs as a (runs, rounds) matrix, NaN where absent."""
    rounds = np.unique(np.concatenate([s.index.to_numpy(int) for s in series]))
    matrix = np.vstack([s.reindex(rounds).to_numpy(float) for s in series])
    return rounds + 1, matrix


def _time_matrix(runs: list[Run], series: list[pd.Series], points: int) -> tuple[np.ndarray, ...]:
    """Values as step functions of simulated time (the latest evaluation before t)."""
    ends = [r.rounds.set_index("round")["t_end_s"] for r in runs]
    grid = np.linspace(0.0, max(float(e.max()) for e in ends), points)
    rows = [
        step_at(end.reindex(values.index).to_numpy(float), values.to_numpy(float), grid)
        for values, end in zip(series, ends, strict=True)
    ]
    return grid, np.vstack(rows)


def _per_run_curves(
    runs: RunsLike, get: str, ylabel: str, title: str, x: Axis, band: str | None, points: int
) -> Figure:
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    try:
        for label, group in groups(runs):
            series = [getattr(r, get)() for r in group]
            if x == "time":
                grid, matrix = _time_matrix(group, series, points)
                draw_mean(ax, grid, matrix, label, band, step=True)
            else:
                grid, matrix = _round_matrix(series)
                draw_mean(ax, grid, matrix, label, band, step=False)
    except MissingDataError as exc:
        return message(title, str(exc))
    ax.set_xlabel("simulated time (s)" if x == "time" else "round")
    ax.set_ylabel(ylabel)
    if x == "round":
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return finish(fig, ax, title)


def global_loss(
    runs: RunsLike, x: Axis = "round", band: str | None = "ci", points: int = 400
) -> Figure:
    """The global objective F(w) = sum_k p_k F_k(w) after each evaluation (Cho et al. 2020 Fig.
    1)."""
    title = "Global loss vs " + ("simulated time" if x == "time" else "round")
    return _per_run_curves(runs, "global_loss", "global loss F(w)", title, x, band, points)


def loss_fairness(
    runs: RunsLike, x: Axis = "round", band: str | None = "ci", points: int = 400
) -> Figure:
    """Jain's index J(w) of the clients' losses after each evaluation (Cho et al. 2020 eq. (3))."""
    title = "Loss fairness vs " + ("simulated time" if x == "time" else "round")
    return _per_run_curves(runs, "loss_fairness", "Jain's index of F_k(w)", title, x, band, points)


def distinct_selected(runs: RunsLike, band: str | None = "ci") -> Figure:
    """Clients selected at least once after each round (Na et al. 2024 Fig. 4)."""
    return _per_run_curves(
        runs, "distinct_selected", "clients selected at least once", "Coverage", "round", band, 0
    )


def selection_histogram(runs: RunsLike) -> Figure:
    """Number of clients selected exactly f times, pooled over each configuration (Na et al. 2024
    Fig. 5)."""
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    for label, group in groups(runs):
        pooled = pd.concat([r.selection_histogram() for r in group], axis=1).fillna(0)
        mean = pooled.mean(axis=1)
        ax.step(mean.index, mean.to_numpy(), where="mid", label=label)
    ax.set(xlabel="times selected", ylabel="clients (mean over seeds)")
    return finish(fig, ax, "Selection frequency")


__all__ = ["distinct_selected", "global_loss", "loss_fairness", "selection_histogram"]
