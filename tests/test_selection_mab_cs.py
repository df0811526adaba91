"""Naive and Element-wise MAB-CS against eqs. (3)-(7) of Yoshida et al. 2020."""

from __future__ import annotations

import math

import numpy as np
import pytest

from netfl.selection.mab_cs import ElementwiseMABCS, NaiveMABCS, ucb_bonus
from netfl.selection.tinc import observed_increments
from tests.selection_helpers import ctx, feedback, info, ready, selection_error


def test_ucb_bonus_of_eq_3():
    bonus = ucb_bonus(np.array([0, 1, 4]), 5.0)
    assert bonus[0] == math.inf
    assert bonus[1] == pytest.approx(math.sqrt(math.log(5) / 2))
    assert bonus[2] == pytest.approx(math.sqrt(math.log(5) / 8))


def test_observed_increments_follow_the_selection_order():
    # Client 0 (2, 3) from the empty schedule: 3 + 2 + 3 = 8 (t = 8, T^d = 3); client 1
    # (5, 1): t - T^d = 5, so 0 + max(5 - 5, 0) + 1 = 1.
    assert observed_increments(np.array([2.0, 5.0]), np.array([3.0, 1.0])).tolist() == [8.0, 1.0]
    # The other order gives other payoffs: (5, 1) first costs 7, then (2, 3) costs 2 + 0 + 3.
    assert observed_increments(np.array([5.0, 2.0]), np.array([1.0, 3.0])).tolist() == [7.0, 5.0]


def test_naive_scores_after_one_round():
    strategy = ready(NaiveMABCS(alpha=10.0), info(3, budget=2))
    strategy.observe(feedback([0, 1], update=[2.0, 5.0], upload=[3.0, 1.0]))
    # N = [1, 1, 0], sum N = 2; means of T_inc: 8 and 1 (see above).
    bonus = math.sqrt(math.log(2) / 2)
    chosen = strategy.select(ctx([0, 1, 2], 2, round_=1))
    assert chosen == [2, 1]  # the never-selected client first (infinite bonus)
    ucb = strategy.scores()["ucb"]
    assert ucb[0] == pytest.approx(-8 / 10 + bonus)
    assert ucb[1] == pytest.approx(-1 / 10 + bonus)
    assert 2 not in ucb  # infinite scores are not recorded


def test_naive_sample_mean_over_selections():
    strategy = ready(NaiveMABCS(alpha=1.0), info(2, budget=1))
    strategy.observe(feedback([0], update=[1.0], upload=[1.0]))  # T_inc = 1 + 1 + 1 = 3
    strategy.observe(feedback([0], update=[4.0], upload=[2.0]))  # T_inc = 2 + 4 + 2 = 8
    strategy.observe(feedback([1], update=[0.0], upload=[1.0]))  # T_inc = 2
    scores = strategy.ucb_scores(np.array([0, 1]))
    assert scores[0] == pytest.approx(-5.5 + math.sqrt(math.log(3) / 4))
    assert scores[1] == pytest.approx(-2.0 + math.sqrt(math.log(3) / 2))


def test_unobserved_times_are_charged_the_round_time():
    strategy = ready(NaiveMABCS(alpha=1.0), info(2, budget=1))
    # Client 0 updated in 2 s but its upload never arrived; the round lasted 30 s.
    strategy.observe(feedback([0], update=[2.0], upload=[np.nan], round_time_s=30.0))
    assert strategy.sum_increment_s[0] == 30.0 + 2.0 + 30.0
    assert strategy.n_selected.tolist() == [1, 0]


def _elementwise_after_two_rounds(beta: float = 1.0) -> ElementwiseMABCS:
    strategy = ready(ElementwiseMABCS(beta=beta), info(4, budget=3))
    strategy.observe(feedback([0], update=[2.0], upload=[3.0]))
    strategy.observe(feedback([0, 1], update=[4.0, 1.0], upload=[3.0, 6.0]))
    return strategy


def test_elementwise_optimistic_times_of_eqs_5_6():
    strategy = _elementwise_after_two_rounds(beta=2.0)
    tau_update, tau_upload = strategy.optimistic_times(np.array([0, 1, 2]))
    # N = [2, 1, 0, 0], sum N = 3; means: client 0 (3, 3), client 1 (1, 6).
    b0, b1 = math.sqrt(math.log(3) / 4), math.sqrt(math.log(3) / 2)
    assert tau_update[:2] == pytest.approx([3 / 2 - b0, 1 / 2 - b1])
    assert tau_upload[:2] == pytest.approx([3 / 2 - b0, 6 / 2 - b1])
    assert tau_update[2] == -math.inf and tau_upload[2] == -math.inf


def test_elementwise_schedules_fresh_clients_first_then_by_eq_7():
    strategy = _elementwise_after_two_rounds(beta=1.0)
    b0, b1 = math.sqrt(math.log(3) / 4), math.sqrt(math.log(3) / 2)
    tau0, tau1_ud, tau1_ul = 3 - b0, 1 - b1, 6 - b1
    # After the fresh client 2 (zero times), from t = 0, T^d = 0:
    # T'_inc(0) = 3 tau0 = 7.43 < T'_inc(1) = 2 tau1_ul + tau1_ud = 10.78, so 0 then 1.
    assert 3 * tau0 < 2 * tau1_ul + tau1_ud
    assert strategy.select(ctx([0, 1, 2], 3, round_=2)) == [2, 0, 1]
    assert strategy.select(ctx([0, 1, 2], 2, round_=2)) == [2, 0]
    ucb = strategy.scores()["ucb"]
    assert ucb[0] == pytest.approx(-3 * tau0)
    assert ucb[1] == pytest.approx(-(2 * tau1_ul + tau1_ud))


def test_elementwise_learns_the_faster_client():
    """Two arms with fixed times: after exploration the faster one is preferred."""
    strategy = ready(ElementwiseMABCS(beta=5.0), info(2, budget=1))
    times = {0: (10.0, 10.0), 1: (2.0, 2.0)}
    picks = []
    for r in range(60):
        (c,) = strategy.select(ctx([0, 1], 1, round_=r))
        strategy.observe(feedback([c], round_=r, update=[times[c][0]], upload=[times[c][1]]))
        picks.append(c)
    assert picks[-20:].count(1) >= 18


@pytest.mark.parametrize(
    ("name", "params", "key"),
    [
        ("mab_cs_naive", {"alpha": 0}, "selection.params.alpha"),
        ("mab_cs_naive", {"alpha": "big"}, "selection.params.alpha"),
        ("mab_cs_elementwise", {"beta": -50}, "selection.params.beta"),
        ("mab_cs_elementwise", {"alpha": 1000}, "selection.params.alpha"),
    ],
)
def test_bad_params_name_the_key(tiny, name, params, key):
    assert selection_error(tiny, name, params).problems[0].key == key
