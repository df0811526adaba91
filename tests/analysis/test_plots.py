"""Figures: what each one draws, checked on its artists (no pixels)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

import netfl
from netfl.trace import plots
from netfl.trace.drawing import MIN_BAND_SEEDS


@pytest.fixture(scope="module")
def runs(digits_sweep):
    return netfl.load_runs(digits_sweep)


def _data_lines(ax):
    """The curves drawn from the runs (not the target-accuracy reference lines)."""
    return [line for line in ax.lines if not str(line.get_label()).startswith("target")]


def _texts(fig: Figure) -> str:
    return " ".join(t.get_text() for ax in fig.axes for t in ax.texts)


def test_accuracy_vs_time_draws_one_mean_per_configuration_and_no_band_of_two_seeds(runs):
    fig = plots.accuracy_vs_time(runs)
    ax = fig.axes[0]
    assert len(_data_lines(ax)) == 2
    # Two seeds a configuration: fewer than MIN_BAND_SEEDS, so no band (issue 34).
    assert MIN_BAND_SEEDS > 2
    assert sum(isinstance(c, PolyCollection) for c in ax.collections) == 0
    labels = [line.get_label() for line in _data_lines(ax)]
    assert all(label.endswith("(n=2)") for label in labels)
    # The mean curve of a configuration is the mean of its runs' step functions.
    group = [r for r, c in zip(runs, runs.configuration(), strict=True) if c == labels[0][:-6]]
    x, y = ax.lines[0].get_data()
    i = len(x) // 2
    expected = np.mean([r.accuracy_at(x[i])[0] for r in group])
    assert y[i] == pytest.approx(expected)


def test_one_run_is_one_line_without_band(runs):
    fig = plots.accuracy_vs_round(runs[0])
    ax = fig.axes[0]
    assert len(_data_lines(ax)) == 1 and not ax.collections
    assert ax.lines[0].get_ydata().tolist() == runs[0].rounds["accuracy"].tolist()
    # Rounds are numbered from 0 on the plots as in rounds.parquet (issue 18).
    assert ax.lines[0].get_xdata().tolist() == runs[0].rounds["round"].tolist()


def test_round_times_are_cumulative(runs):
    fig = plots.round_times(runs[0])
    left, right = fig.axes[:2]
    rounds = runs[0].rounds
    assert left.lines[0].get_ydata().tolist() == rounds["t_end_s"].tolist()
    assert right.lines[0].get_ydata() == pytest.approx(rounds["t_end_s"] - rounds["t_start_s"])


def test_gantt_has_one_bar_per_phase_interval(timing_sweep):
    run = netfl.load_runs(timing_sweep)[0]
    fig = plots.gantt(run, rounds=[0, 1])
    ax = fig.axes[0]
    intervals = run.phase_intervals()
    n_bars = sum(len(c.patches) for c in ax.containers)
    assert n_bars == int(intervals["round"].isin([0, 1]).sum())
    assert len(ax.get_yticks()) == int(run.rounds["n_selected"].iloc[:2].sum())


def test_rb_occupancy_without_rb_events_says_so(runs):
    fig = plots.rb_occupancy(runs[0])
    assert "no 'rb_allocation' events" in _texts(fig)


def test_selection_heatmap_matches_the_rounds(runs):
    run = runs[0]
    image = plots.selection_heatmap(run).axes[0].images[0].get_array()
    for j, row in enumerate(run.rounds.itertuples()):
        assert set(np.flatnonzero(image[:, j] >= 1)) == set(row.selected)
        assert set(np.flatnonzero(image[:, j] == 2)) == set(row.completed)


def test_pull_counts_and_rate_cdf(runs):
    fig = plots.pull_counts(runs)
    heights = [p.get_height() for p in fig.axes[0].containers[0].patches]
    assert sum(heights) == pytest.approx(4 * 3)  # mean over 2 seeds of 4 rounds x 3 clients
    fig = plots.rate_cdf(runs)
    cdf = fig.axes[0].lines
    assert len(cdf) == 2 and cdf[0].get_ydata()[-1] == 1.0
    # The two configurations share seeds, hence drops and rates: the repeat is dashed and
    # the title says why the curves coincide (issue 18).
    same = np.array_equal(cdf[0].get_xdata(), cdf[1].get_xdata())
    assert (cdf[1].get_linestyle() == "--") == same
    assert ("coincide" in fig.axes[0].get_title()) == same


def test_strategy_figures_take_the_documented_long_format():
    rounds, clients = np.arange(5), np.arange(3)
    frame = pd.DataFrame(
        {
            "round": np.repeat(rounds, 3),
            "client": np.tile(clients, 5),
            "score": "backlog",
            "value": np.arange(15.0),
        }
    )
    fig = plots.backlogs(frame)
    assert len(fig.axes[0].lines) == 3 + 1  # one per client + the mean
    assert fig.axes[0].lines[-1].get_ydata().tolist() == [1, 4, 7, 10, 13]
    assert len(plots.score_convergence(frame).axes[0].lines) == 4  # the only score
    two = pd.concat([frame, frame.assign(score="ucb")])
    assert "a score name is needed; the strategy recorded: backlog, ucb" in _texts(
        plots.score_convergence(two)
    )
    assert "no score 'z'" in _texts(plots.score_convergence(two, "z"))
    assert "missing ['score', 'value']" in _texts(plots.backlogs(frame[["round", "client"]]))


def test_figures_save_with_agg(tmp_path, runs):
    for make in (plots.accuracy_vs_time, plots.round_times, plots.pull_counts):
        make(runs).savefig(tmp_path / "f.png")
        assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"


def _legend_texts(fig: Figure) -> list[str]:
    legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    return [t.get_text() for legend in legends if legend is not None for t in legend.texts]


def test_a_single_runs_legends_do_not_repeat_its_name(runs):
    # Issue 18: the report names the run; its legends said it again in every figure.
    run = runs[0]
    for figure in (
        plots.accuracy_vs_round(run),
        plots.accuracy_vs_time(run),
        plots.pull_counts(run),
        plots.rate_cdf(run),
    ):
        assert not any(run.id in text for text in _legend_texts(figure))
    assert _legend_texts(plots.pull_counts(run))[0].startswith("Jain ")
    # Several configurations keep their labels.
    assert len(_legend_texts(plots.pull_counts(runs))) == 2


def test_time_to_target_bars_never_reach_below_zero():
    # Issue 18: a mean of 100 s with a CI half-width of 300 s drew a bar to -200 s.
    table = pd.DataFrame(
        {"time_to_target_s_mean": [100.0, 500.0], "time_to_target_s_ci95": [300.0, 50.0]},
        index=["a", "b"],
    )
    fig = plots.time_to_accuracy_bars(table)
    from matplotlib.container import ErrorbarContainer

    (errors,) = [c for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)]
    segments = errors.lines[2][0].get_segments()
    lows = [min(seg[0][0], seg[1][0]) for seg in segments]
    highs = [max(seg[0][0], seg[1][0]) for seg in segments]
    assert lows == pytest.approx([0.0, 450.0])
    assert highs == pytest.approx([400.0, 550.0])
