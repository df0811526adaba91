"""What the figures of :mod:`netfl.trace.plots` and :mod:`netfl.trace.learning_plots` share.

Runs grouped by configuration (:func:`groups`), a configuration's runs drawn as their mean
with a band (:func:`draw_mean`: the 95% Student-t confidence interval of the mean, plus or
minus one standard deviation, or none), the title, grid and legend (:func:`finish`), and a
figure that says why there is nothing to draw (:func:`message`).

A band is drawn only where at least :data:`MIN_BAND_SEEDS` seeds give a value: the 95%
interval of the mean of two seeds is 12.7 times as wide as the gap between them (Student's
t with one degree of freedom) and covers most plots; that of three seeds is 5.0 sample
standard deviations wide.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Literal

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from netfl.trace.run import Run
from netfl.trace.runs import Runs

RunsLike = Run | Runs | Sequence[Run]
#: The fewest seeds (finite values at an x) over which a band is drawn.
MIN_BAND_SEEDS = 3


def as_runs(runs: RunsLike) -> Runs:
    if isinstance(runs, Runs):
        return runs
    return Runs([runs] if isinstance(runs, Run) else runs)


def groups(runs: RunsLike) -> list[tuple[str, list[Run]]]:
    """Runs grouped by configuration, in first-seen order.

    A single run's label is empty: its report already names it, so its legends do not
    repeat the name (matplotlib leaves empty labels out of legends; see :func:`labelled`).
    """
    all_runs = as_runs(runs)
    labels = all_runs.configuration().to_numpy() if len(all_runs) > 1 else ["run"]
    grouped: dict[str, list[Run]] = {}
    for label, run in zip(labels, all_runs, strict=True):
        grouped.setdefault(str(label), []).append(run)
    if len(grouped) == 1 and len(all_runs) == 1:
        return [("", list(all_runs))]
    return list(grouped.items())


def labelled(label: str, *details: str) -> str:
    """A legend label: the configuration's, then details, joined by ", "; a single run's
    (empty) label gives the details alone."""
    return ", ".join(part for part in (label, *details) if part)


def mean_band(matrix: np.ndarray, band: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Column-wise mean and band over the rows (runs); NaN entries are left out, and the
    band is NaN (not drawn) where fewer than :data:`MIN_BAND_SEEDS` rows have a value."""
    from scipy import stats

    n = np.sum(np.isfinite(matrix), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(matrix, axis=0) / np.where(n > 0, n, np.nan)
        sd = np.sqrt(np.nansum((matrix - mean) ** 2, axis=0) / np.where(n > 1, n - 1, np.nan))
        if band == "ci":
            half = stats.t.ppf(0.975, np.maximum(n - 1, 1)) * sd / np.sqrt(n)
        elif band == "sd":
            half = sd
        else:
            half = np.full_like(mean, np.nan)
    half = np.where(n >= MIN_BAND_SEEDS, half, np.nan)
    return mean, mean - half, mean + half


def draw_mean(
    ax: Axes,
    x: np.ndarray,
    matrix: np.ndarray,
    label: str,
    band: str | None,
    step: bool,
    clip: tuple[float, float] | None = None,
) -> None:
    """One line: the mean of ``matrix``'s rows (runs) against ``x``, with its band (where
    :data:`MIN_BAND_SEEDS` rows or more have a value)."""
    mean, low, high = mean_band(matrix, band)
    if clip is not None:  # a CI of a mean may leave the support; the plot does not
        low, high = np.clip(low, *clip), np.clip(high, *clip)
    where: Literal["post"] | None = "post" if step else None
    drawstyle = "steps-post" if step else "default"
    suffix = f" (n={len(matrix)})" if len(matrix) > 1 else ""
    (line,) = ax.plot(x, mean, drawstyle=drawstyle, label=label + suffix)
    if len(matrix) >= MIN_BAND_SEEDS and band is not None:
        ax.fill_between(x, low, high, step=where, alpha=0.2, color=line.get_color(), lw=0)


def finish(fig: Figure, ax: Axes, title: str, legend: bool = True) -> Figure:
    ax.set_title(title)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if legend and handles:
        wrapped = [textwrap.fill(label, 90) for label in labels]
        if sum(label.count("\n") + 1 for label in wrapped) <= 6:
            ax.legend(handles, wrapped, fontsize="small")
        else:  # long configuration labels: below the axes, growing the figure
            width, height = fig.get_size_inches()
            fig.set_size_inches(width, height + 0.18 * sum(w.count("\n") + 1 for w in wrapped))
            fig.legend(handles, wrapped, loc="outside lower center", fontsize="x-small")
    return fig


def message(title: str, text: str) -> Figure:
    """A figure that says why there is nothing to draw."""
    fig = Figure(figsize=(7, 2.5), layout="constrained")
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, fontsize="small")
    return fig
