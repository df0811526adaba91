"""pow-d and rpow-d (Cho et al. 2020 Sec. II-B; Cho, Wang, Joshi 2020)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from netfl.scenario import scenario_from_data
from netfl.selection.pow_d import PowD, RPowD
from netfl.selection.signals import MissingSignalError
from tests.selection_helpers import ctx, feedback, info, ready, selection_error


def _ready(strategy, sizes, budget):
    return ready(strategy, info(len(sizes), budget, sizes))


def context(strategy, candidates, round=0, **features):
    """A context whose candidates carry their population data sizes (p_k matters)."""
    candidates = np.asarray(candidates)
    sizes = strategy.info.n_samples[candidates]
    budget = strategy.info.budget
    return ctx(candidates, budget, round_=round, n_samples=sizes, features=features)


def _report(round_, selected, losses):
    return feedback(selected, round_=round_, loss=losses, completed=np.isfinite(losses))


def _polled_losses(candidates, polled, losses):
    """features["loss"] as the server fills it: NaN for candidates not polled."""
    return np.where(np.isin(candidates, polled), losses, np.nan)


def test_pow_d_selects_the_m_largest_polled_losses():
    strategy = _ready(PowD(d=4), [10] * 8, 2)
    candidates = np.arange(8)
    losses = np.array([0.5, 3.0, 0.1, 2.0, 9.0, 1.0, 0.7, 8.0])
    polled = strategy.choose_polled(context(strategy, candidates))
    assert len(polled) == 4 and len(set(polled)) == 4
    served = context(strategy, candidates, loss=_polled_losses(candidates, polled, losses))
    chosen = strategy.select(served)
    expected = sorted(polled, key=lambda c: -losses[c])[:2]
    assert chosen == expected


def test_pow_d_ignores_losses_of_clients_it_did_not_poll():
    strategy = _ready(PowD(d=2), [10] * 6, 1)
    candidates = np.arange(6)
    polled = strategy.choose_polled(context(strategy, candidates))
    losses = np.full(6, 100.0)
    losses[polled] = [1.0, 2.0]  # everyone else looks worse, but was not polled
    chosen = strategy.select(context(strategy, candidates, loss=losses))
    assert chosen == [polled[1]]


def test_pow_d_fills_the_budget_when_a_polled_client_does_not_answer():
    strategy = _ready(PowD(d=2), [10] * 5, 2)
    candidates = np.arange(5)
    polled = strategy.choose_polled(context(strategy, candidates))
    losses = _polled_losses(candidates, polled, np.full(5, 1.0))
    losses[polled[0]] = np.nan
    chosen = strategy.select(context(strategy, candidates, loss=losses))
    assert chosen == [polled[1], polled[0]]


def test_polled_set_follows_data_size_without_replacement():
    # p = (0.1, 0.2, 0.3, 0.4), d = 2: successive sampling without replacement gives
    # P(i in A) = p_i + sum_{j != i} p_j p_i / (1 - p_j).
    p = np.array([0.1, 0.2, 0.3, 0.4])
    inclusion = [p[i] + sum(p[j] * p[i] / (1 - p[j]) for j in range(4) if j != i) for i in range(4)]
    strategy = _ready(PowD(d=2), [10, 20, 30, 40], 1)
    counts = np.zeros(4)
    trials = 20000
    for r in range(trials):
        counts[strategy.choose_polled(context(strategy, range(4), round=r))] += 1
    assert counts / trials == pytest.approx(inclusion, abs=0.012)


def test_d_defaults_to_twice_m():
    strategy = _ready(PowD(), [10] * 10, 3)
    assert len(strategy.choose_polled(context(strategy, range(10)))) == 6
    assert len(strategy.choose_polled(context(strategy, range(4), round=1))) == 4


def test_d_defaults_to_twice_m_not_twice_the_over_selection_budget():
    # Issue 13: with over-selection the budget is ceil(m (1 + o)) = 5 for m = 3, o = 0.5;
    # the paper's d = 2m polls 6, not 2 x 5 = 10.
    strategy = _ready(PowD(), [10] * 12, 5)
    over = dataclasses.replace(context(strategy, range(12)), target=3)
    assert len(strategy.choose_polled(over)) == 6


def test_pow_d_without_polled_losses_is_a_clear_error():
    strategy = _ready(PowD(d=2), [10] * 3, 1)
    strategy.choose_polled(context(strategy, range(3)))
    with pytest.raises(MissingSignalError, match="'loss'"):
        strategy.select(context(strategy, range(3)))


@pytest.mark.parametrize("name", ["pow_d", "rpow_d"])
def test_d_smaller_than_m_names_the_key(tiny, name):
    error = selection_error(tiny, name, {"d": 2})  # tiny selects 3 per round
    assert error.problems[0].key == "selection.params.d"
    assert "at least m" in str(error)
    assert selection_error(tiny, name, {"d": 0}).problems[0].key == "selection.params.d"
    tiny["selection"] = {"name": name, "params": {"d": 3}}
    scenario_from_data(tiny)


def test_rpow_d_ranks_by_stale_loss_and_tries_unseen_clients_first():
    strategy = _ready(RPowD(d=4), [10] * 4, 2)
    strategy.observe(_report(0, [0, 1, 2], [0.5, 3.0, np.nan]))  # 2 did not report
    # d = 4 = all candidates: unseen 2 and 3 (+inf) come before 1 (3.0) and 0 (0.5).
    assert sorted(strategy.select(context(strategy, range(4)))) == [2, 3]
    strategy.observe(_report(1, [2, 3], [0.1, 0.2]))
    assert strategy.select(context(strategy, range(4), round=2)) == [1, 0]
    strategy.observe(_report(2, [1], [0.05]))  # the stale value is the latest report
    assert strategy.select(context(strategy, range(4), round=3)) == [0, 3]


def test_rpow_d_only_ranks_its_drawn_set():
    strategy = _ready(RPowD(d=1), [0, 10, 0], 1)
    strategy.observe(_report(0, [0, 1, 2], [9.0, 0.1, 9.0]))
    # Only client 1 has data, so the draw of d = 1 is always client 1.
    assert all(strategy.select(context(strategy, range(3), round=r)) == [1] for r in range(20))


def test_pow_d_with_no_candidates_polls_and_selects_nobody():
    strategy = _ready(PowD(d=2), [10] * 3, 1)
    empty = ctx([], 1)  # a server that polled nobody need not send "loss"
    assert list(strategy.choose_polled(empty)) == []
    assert strategy.select(empty) == []
