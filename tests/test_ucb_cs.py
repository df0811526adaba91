"""UCB-CS against eqs. (4)-(7) and Algorithm 1 of Cho et al. 2020."""

from __future__ import annotations

import math

import numpy as np
import pytest

from netfl.selection.signals import MissingSignalError
from netfl.selection.ucb_cs import UCBCS
from tests.selection_helpers import ctx, feedback, info, ready, selection_error


def _ucb(sizes, gamma=0.7, seed=0) -> UCBCS:
    return ready(UCBCS(gamma=gamma), info(len(sizes), 2, sizes), seed)


def _report(round_, selected, losses, std=None):
    """Feedback with the losses; clients with a NaN loss did not report."""
    signals = {} if std is None else {"local_loss_std": np.asarray(std, float)}
    done = np.isfinite(losses)
    return feedback(selected, round_=round_, loss=losses, completed=done, signals=signals)


def _two_rounds(gamma: float) -> UCBCS:
    # p = (0.1, 0.2, 0.7). Round 0: clients 0, 1 report losses 2, 1 (std 0.3, 0.5);
    # round 1: clients 0, 2 report losses 1, 4 (std 0.2, 0.1).
    strategy = _ucb([10, 20, 70], gamma)
    strategy.observe(_report(0, [0, 1], [2.0, 1.0], [0.3, 0.5]))
    strategy.observe(_report(1, [0, 2], [1.0, 4.0], [0.2, 0.1]))
    return strategy


def test_indices_after_two_rounds_match_eqs_4_to_7():
    strategy = _two_rounds(gamma=0.5)
    # By hand, gamma = 0.5: L = (0.5*2 + 1, 0.5*1, 4) = (2, 0.5, 4);
    # N = (1.5, 0.5, 1); T = 0.5*1 + 1 = 1.5; sigma = max(0.2, 0.1) = 0.2 (latest round).
    u = 2 * 0.2**2 * math.log(1.5)
    expected = [
        0.1 * 2 / 1.5 + math.sqrt(u / 1.5),
        0.2 * 0.5 / 0.5 + math.sqrt(u / 0.5),
        0.7 * 4 / 1 + math.sqrt(u / 1),
    ]
    assert strategy.indices() == pytest.approx(expected, rel=1e-12)
    assert strategy.select(ctx([0, 1, 2], 2)) == [2, 1]
    assert strategy.select(ctx([0, 1], 2)) == [1, 0]


def test_gamma_one_is_plain_ucb_on_mean_loss():
    strategy = _two_rounds(gamma=1.0)
    # L = (3, 1, 4), N = (2, 1, 1), T = 2.
    u = 2 * 0.2**2 * math.log(2)
    expected = [0.1 * 3 / 2 + math.sqrt(u / 2), 0.2 + math.sqrt(u), 0.7 * 4 + math.sqrt(u)]
    assert strategy.indices() == pytest.approx(expected, rel=1e-12)


def test_gamma_zero_keeps_only_the_latest_round():
    strategy = _two_rounds(gamma=0.0)
    # Only round 1 counts: T = 1, log T = 0, so no exploration bonus; client 1 has N = 0.
    assert strategy.indices() == pytest.approx([0.1 * 1.0, math.inf, 0.7 * 4.0])


def test_unselected_clients_first_in_random_order():
    picks = np.zeros(5)
    for seed in range(600):
        strategy = _ucb([10] * 5, seed=seed)
        strategy.observe(_report(0, [0, 1], [5.0, 5.0], [1.0, 1.0]))
        chosen = strategy.select(ctx(range(5), 2))
        picks[chosen] += 1
    assert picks[:2].sum() == 0  # the two observed clients wait
    # Two of the three never-observed clients each round, uniformly: 2/3 each.
    assert picks[2:] / 600 == pytest.approx([2 / 3] * 3, abs=0.06)


def test_non_reporting_clients_add_nothing_and_sigma_survives_empty_rounds():
    strategy = _ucb([10, 10], 0.5)
    strategy.observe(_report(0, [0, 1], [2.0, np.nan], [0.4, np.nan]))
    assert strategy.discounted_count.tolist() == [1.0, 0.0]
    assert strategy.sigma == 0.4
    strategy.observe(_report(1, [1], [np.nan]))  # nobody reported: no std needed
    assert strategy.sigma == 0.4
    assert strategy.discounted_count.tolist() == [0.5, 0.0]
    assert strategy.discounted_rounds == pytest.approx(1.5)


def test_missing_loss_spread_is_a_clear_error():
    strategy = _ucb([10, 10])
    with pytest.raises(MissingSignalError, match="local_loss_std"):
        strategy.observe(_report(0, [0], [1.0]))


@pytest.mark.parametrize("gamma", [-0.1, 1.5])
def test_gamma_out_of_range_names_the_key(tiny, gamma):
    error = selection_error(tiny, "ucb_cs", {"gamma": gamma})
    assert error.problems[0].key == "selection.params.gamma"


def test_learning_none_is_refused(tiny):
    tiny["learning"] = None
    tiny["fl"]["model_size_bits"] = 1e6
    assert "needs learning signals" in str(selection_error(tiny, "ucb_cs"))


def test_exploration_grows_for_clients_left_out():
    # Eq. (7): N shrinks by gamma each round a client sits out, so U grows, and a
    # client with a low loss comes back (the text of Sec. III, not Algorithm 1 line 8).
    strategy = _ucb([10, 10], 0.7)
    strategy.observe(_report(0, [0, 1], [1.0, 0.2], [0.5, 0.5]))
    rounds_until_back = 0
    while strategy.select(ctx([0, 1], 1)) == [0]:
        strategy.observe(_report(rounds_until_back + 1, [0], [1.0], [0.5]))
        rounds_until_back += 1
        assert rounds_until_back < 20
    assert rounds_until_back >= 1
