"""Oort's training selector against the formulas of SymbioticLab/Oort ``oort/oort.py``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from netfl.scenario import scenario_from_data
from netfl.selection.oort import Oort, statistical_utility, system_penalty, temporal_uncertainty
from tests.selection_helpers import ctx, feedback, info, ready, selection_error


def test_statistical_utility_is_size_times_root_mean_square_loss():
    # 10 samples of mean loss 1 (no spread): 10; 40 samples, mean 0.5, std 0.5:
    # mean of squares = 0.25 + 0.25, so 40 sqrt(0.5).
    utility = statistical_utility(np.array([10, 40]), np.array([1.0, 0.5]), np.array([0.0, 0.5]))
    assert utility == pytest.approx([10.0, 40 * math.sqrt(0.5)])
    assert statistical_utility(np.array([40]), np.array([0.5])) == pytest.approx([20.0])


def test_system_penalty_only_for_clients_slower_than_t():
    penalty = system_penalty(np.array([5.0, 10.0, 20.0, np.nan]), 10.0, 2.0)
    assert penalty.tolist() == [1.0, 1.0, 0.25, 1.0]
    assert system_penalty(np.array([40.0]), math.inf, 2.0).tolist() == [1.0]


def test_temporal_uncertainty():
    bonus = temporal_uncertainty(10, np.array([1, 5]))
    assert bonus == pytest.approx(
        [math.sqrt(0.1 * math.log(10)), math.sqrt(0.1 * math.log(10) / 5)]
    )


def _explored(n=6, **params) -> Oort:
    """Every client tried once in round 0, with utilities 10 * (client + 1)."""
    strategy = ready(Oort(**params), info(n, budget=n, n_samples=[10] * n))
    strategy.observe(
        feedback(
            list(range(n)),
            loss=[c + 1.0 for c in range(n)],
            exchange=[5.0] * (n - 1) + [50.0],
            round_time_s=50.0,
        )
    )
    return strategy


def test_utility_of_explored_clients_matches_the_reference_formula():
    strategy = _explored(round_penalty=2.0, round_threshold=50.0, clip_bound=1.0)
    reward = 10.0 * np.arange(1, 7)
    assert strategy.reward == pytest.approx(reward)
    preferred = strategy.preferred_duration_s()
    assert preferred == 5.0  # the 50th percentile of five 5 s and one 50 s
    ids = np.arange(6)
    score = strategy.utilities(ids, ids, current=3, preferred_s=preferred)
    low = reward.min() * 0.999
    expected = (reward - low) / (reward.max() - low) + math.sqrt(0.1 * math.log(3) / 1)
    expected[5] *= (5.0 / 50.0) ** 2
    assert score == pytest.approx(expected)


def test_first_round_explores_by_data_size():
    picks = np.zeros(5)
    for seed in range(200):
        strategy = ready(Oort(), info(5, budget=2, n_samples=[1000, 10, 10, 10, 10]), seed)
        picks[strategy.select(ctx(range(5), 2))] += 1
    # Client 0 is missed only if both draws miss it: (40 / 1040) x (30 / 1030) = 0.1%
    # per seed; none of these seeds does.
    assert picks[0] == 200
    assert picks.sum() == 400


def _exploit_counts(**params) -> np.ndarray:
    counts = np.zeros(6)
    for seed in range(100):
        strategy = _explored(exploration_factor=0.0, exploration_min=0.0, **params)
        strategy.rng = np.random.default_rng(seed)
        counts[strategy.select(ctx(range(6), 2, round_=1))] += 1
    return counts


def test_exploitation_samples_above_the_cut_off_by_utility():
    counts = _exploit_counts(round_threshold=50.0)
    # Scores (normalised utility + 0.263): 0.26, 0.46, 0.66, 0.86, 1.06 and 1.26 / 100 for
    # the slow client 5. The cut-off is 0.7 x the third score (0.66): clients 2-4 remain.
    assert counts[[0, 1, 5]].tolist() == [0, 0, 0]
    assert counts[4] > counts[2] > 0
    # Without the system penalty the slow client (largest utility) is exploited too.
    assert _exploit_counts(round_penalty=0.0)[5] > 0


def test_stragglers_get_the_mean_utility_and_the_round_time():
    strategy = ready(Oort(), info(3, budget=3, n_samples=[10, 10, 10]))
    strategy.observe(
        feedback(
            [0, 1, 2],
            loss=[1.0, 3.0, np.nan],
            exchange=[4.0, 6.0, np.nan],
            completed=[True, True, False],
            round_time_s=30.0,
        )
    )
    assert strategy.reward.tolist() == [10.0, 30.0, 20.0]
    assert strategy.duration_s.tolist() == [4.0, 6.0, 30.0]
    assert strategy.count.tolist() == [1, 1, 1]


def test_blacklist_excludes_over_selected_clients():
    strategy = _explored(n=6, blacklist_rounds=0, blacklist_max_len=0.5)
    strategy.count[:] = [3, 2, 0, 0, 0, 0]
    for r in range(20):
        chosen = strategy.select(ctx(range(6), 3, round_=1 + r))
        assert not {0, 1} & set(chosen)
    # Only when nobody else is left are blacklisted clients used.
    assert sorted(strategy.select(ctx([0, 1, 2], 3, round_=30))) == [0, 1, 2]


def test_pacer_follows_the_exploited_utility():
    strategy = _explored(n=4, pacer_step=2, pacer_delta=10.0, round_threshold=30.0)
    thresholds = []
    for r in range(6):
        chosen = strategy.select(ctx(range(4), 2, round_=r))
        strategy.observe(feedback(chosen, round_=r, loss=[1.0] * 2, exchange=[5.0] * 2))
        thresholds.append(strategy.round_threshold)
    # Round 1 exploits nothing yet (epsilon = 0.88 of 2 places), round 2 does: at round
    # 4 = 2 x pacer_step the exploited utility jumped from 0 (sharp: T percentile - 10);
    # at round 6 it is flat (utility 10 each round: + 10).
    assert thresholds == [30.0, 30.0, 30.0, 20.0, 20.0, 30.0]


def test_oort_needs_learning(tiny):
    tiny["selection"] = {"name": "oort"}
    scenario_from_data(tiny)
    tiny["learning"] = "none"
    tiny["fl"]["model_size_bits"] = 1e6
    error = selection_error(tiny, "oort")
    assert error.problems[0].key == "selection.name"
    assert "local_loss" in str(error)


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"exploration_factor": 1.5}, "selection.params.exploration_factor"),
        ({"round_penalty": -1}, "selection.params.round_penalty"),
        ({"pacer_step": 0}, "selection.params.pacer_step"),
        ({"blacklist_rounds": -2}, "selection.params.blacklist_rounds"),
        ({"alpha": 2}, "selection.params.alpha"),
    ],
)
def test_bad_params_name_the_key(tiny, params, key):
    assert selection_error(tiny, "oort", params).problems[0].key == key
