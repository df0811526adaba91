"""Time to target with censoring (netfl/trace/survival.py): Kaplan-Meier and log-rank
against hand-computed values, and netfl compare's figures, tables and tests end to end."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import netfl
from netfl.cli import main
from netfl.trace import plots, survival
from netfl.trace.compare import by_configuration, per_run


def _table(rows: list[tuple[str, int, float, float]]) -> pd.DataFrame:
    """(configuration, seed, time to target or NaN, end of the run)."""
    frame = pd.DataFrame(rows, columns=["configuration", "seed", "time_to_target_s", "sim_time_s"])
    for metric in ("final_accuracy", "rounds", "fairness_jain", "staleness_mean"):
        frame[metric] = 0.5
    frame["uplink_busy_fraction"] = 0.5
    frame["rate_ul_achieved_mean_bps"] = 1e6
    frame["status"] = "completed"
    return frame


def test_a_run_that_misses_the_target_is_censored_at_its_end():
    data = survival.survival_data(_table([("a", 0, 120.0, 500.0), ("a", 1, math.nan, 500.0)]))
    assert data["duration_s"].tolist() == [120.0, 500.0]
    assert data["reached"].tolist() == [True, False]


def test_kaplan_meier_matches_the_product_limit_by_hand():
    # Times 1, 2+, 3, 4 (2 censored): S = 3/4 after 1; 3/4 x 1/2 = 3/8 after 3; 0 after 4.
    curve = survival.reach_curve("a", np.array([1.0, 2.0, 3.0, 4.0]), np.array([1, 0, 1, 1]))
    assert curve.time_s.tolist() == [1.0, 3.0, 4.0]
    assert curve.fraction == pytest.approx([1 / 4, 5 / 8, 1.0])
    assert (curve.reached, curve.n, curve.end_s) == (3, 4, 4.0)
    assert curve.median_s == 3.0  # the first time S(t) <= 1/2 (at least half reached)
    assert curve.label == "a (3/4 reached)"
    finite = np.isfinite(curve.lower)
    assert np.all(curve.lower[finite] <= curve.fraction[finite])
    assert np.all(curve.fraction[finite] <= curve.upper[finite])


def test_censoring_changes_the_answer_a_mean_over_reached_runs_gives():
    """The issue's example: 3 of 6 seeds reaching the target early look faster by their
    mean than 5 of 6 reaching it a little later; Kaplan-Meier does not drop the others."""
    fast = [("fast", s, t, 2400.0) for s, t in enumerate([900, 1000, 1100])]
    fast += [("fast", s, math.nan, 2400.0) for s in (3, 4, 5)]
    slow = [("slow", s, t, 2400.0) for s, t in enumerate([1200, 1250, 1300, 1350, 1400])]
    slow += [("slow", 5, math.nan, 2400.0)]
    table = _table(fast + slow)
    grouped = by_configuration(table)
    assert (
        grouped.loc["fast", "time_to_target_s_mean"] < grouped.loc["slow", "time_to_target_s_mean"]
    )
    assert grouped.loc["fast", "reached"] == "3/6"
    # The median is the first time at least half reached it (S(t) <= 1/2, where the drawn
    # curve meets 0.5): 1100 s for the fast seeds (3 of 6), 1300 s for the slow ones (at
    # 1300 s exactly half had); statsmodels' strict rule gave never and 1350 s (issue 34).
    assert grouped.loc["fast", "time_to_target_km_median_s"] == 1100.0
    assert grouped.loc["slow", "time_to_target_km_median_s"] == 1300.0
    curves = {c.configuration: c for c in survival.reach_curves(table)}
    assert curves["fast"].fraction[-1] == pytest.approx(0.5)
    assert curves["slow"].fraction[-1] == pytest.approx(5 / 6)


def test_logrank_matches_the_statistic_by_hand():
    """A = {1, 2}, B = {3, 4}, all events. At t = 1: n = 4, n_A = 2, E_A = 1/2, V = 1/4; at
    t = 2: n = 3, n_A = 1, E_A = 1/3, V = 2/9; later A has left. chi2 = (2 - 5/6)^2 /
    (17/36). By seed (s0: 1 vs 3, s1: 2 vs 4), each stratum gives O - E = 1/2, V = 1/4:
    chi2 = 1 / (1/2) = 2."""
    table = _table([("A", 0, 1.0, 9.0), ("A", 1, 2.0, 9.0), ("B", 0, 3.0, 9.0), ("B", 1, 4.0, 9.0)])
    row = survival.logrank(table).iloc[0]
    chi2 = (2 - 5 / 6) ** 2 / (1 / 4 + 2 / 9)
    assert (row["configuration"], row["baseline"]) == ("B", "A")
    assert row["chi2"] == pytest.approx(chi2)
    assert row["p_value"] == pytest.approx(stats.chi2.sf(chi2, 1))
    assert row["chi2_by_seed"] == pytest.approx(2.0)
    assert row["p_value_by_seed"] == pytest.approx(stats.chi2.sf(2.0, 1))


def test_logrank_without_any_run_reaching_the_target_is_nan():
    table = _table([("A", 0, math.nan, 9.0), ("B", 0, math.nan, 9.0)])
    row = survival.logrank(table).iloc[0]
    assert math.isnan(row["p_value"]) and math.isnan(row["p_value_by_seed"])
    assert (row["reached"], row["baseline_reached"]) == ("0/1", "0/1")


def test_every_time_to_target_bar_says_how_many_seeds_reached():
    table = _table([("a", 0, 100.0, 500.0), ("a", 1, math.nan, 500.0), ("b", 0, 80.0, 500.0)])
    fig = plots.time_to_accuracy_bars(by_configuration(table))
    texts = [t.get_text() for t in fig.axes[0].texts]
    # One run reached it in each: no CI drawn (fewer than MIN_BAND_SEEDS), and it says so.
    assert texts == ["1/2 reached (no CI)", "1/1 reached (no CI)"]


def test_the_reached_fraction_figure_draws_a_curve_and_band_per_configuration():
    table = _table([("a", 0, 100.0, 500.0), ("a", 1, math.nan, 500.0), ("b", 0, 80.0, 500.0)])
    fig = survival.reached_fraction(table, 0.8)
    ax = fig.axes[0]
    steps = [line for line in ax.lines if line.get_drawstyle() == "steps-post"]
    assert [line.get_label() for line in steps] == ["a (1/2 reached)", "b (1/1 reached)"]
    x, y = steps[0].get_data()
    assert x.tolist() == [0.0, 100.0, 500.0] and y.tolist() == [0.0, 0.5, 0.5]
    assert "0.8" in ax.get_title()


def test_compare_reports_censored_time_to_target(digits_sweep, tmp_path, capsys):
    runs = netfl.load_runs(digits_sweep)
    best = sorted(float(r.rounds["accuracy"].max()) for r in runs)
    target = (best[0] + best[-1]) / 2  # some runs reach it, some do not
    assert best[0] < target < best[-1]
    out = tmp_path / "cmp"
    assert main(["compare", str(digits_sweep), "--out", str(out), "--target", str(target)]) == 0
    capsys.readouterr()
    table = pd.read_csv(out / "comparison.csv", index_col=0)
    expected = by_configuration(per_run(runs, target))
    assert table["reached"].tolist() == expected["reached"].tolist()
    assert {"time_to_target_km_median_s", "time_to_target_km_low_s"} <= set(table.columns)
    tests = pd.read_csv(out / "time_to_target_logrank.csv")
    assert len(tests) == 1 and {"p_value", "p_value_by_seed"} <= set(tests.columns)
    assert (out / "reached_target.png").is_file() and (out / "time_to_target.png").is_file()
    page = (out / "report.html").read_text()
    assert "Kaplan-Meier" in page and "log-rank" in page.lower()


@pytest.mark.parametrize(
    ("median", "low", "high", "text"),
    [
        (1805.4, 971.5, math.inf, "1805 [972, ∞)"),
        (1987.0, 1320.0, 2252.5, "1987 [1320, 2252]"),
        (math.nan, math.nan, math.nan, "-"),
    ],
)
def test_a_median_reads_with_its_interval(median, low, high, text):
    empty = np.array([])
    curve = survival.ReachCurve("a", 8, 6, empty, empty, empty, empty, 2400.0, median, low, high)
    assert curve.median_text() == text
