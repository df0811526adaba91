"""Every registered strategy survives a checkpoint: pickled mid-run, the copy goes on
exactly as the original does (same selections, same scores), so ``--resume`` works with
any of them."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from netfl.registry import strategies
from netfl.selection.base import PopulationInfo, Strategy, make_strategy
from netfl.selection.check import SyntheticRounds

REGISTERED = sorted(strategies().entries())
N_CLIENTS, BUDGET = 30, 5


def _rounds(driver: SyntheticRounds, strategy: Strategy, first: int, last: int) -> list:
    """Drive ``strategy`` through rounds first..last-1; its selections and scores."""
    seen = []
    for round_ in range(first, last):
        n_candidates = int(driver.rng.integers(BUDGET, N_CLIENTS + 1))
        chosen = [int(c) for c in strategy.select(driver.context(strategy, round_, n_candidates))]
        seen.append((chosen, {k: dict(v) for k, v in strategy.scores().items()}))
        strategy.observe(driver.feedback(round_, np.asarray(chosen, dtype=np.int64)))
    return seen


@pytest.mark.parametrize("name", REGISTERED)
def test_a_pickled_strategy_continues_like_the_original(name):
    strategy = make_strategy(strategies().load(name), {})
    info = PopulationInfo(
        n_clients=N_CLIENTS,
        budget=BUDGET,
        n_samples=np.random.default_rng(0).integers(20, 500, N_CLIENTS),
        rounds=12,
        model_size_bits=20e6,
    )
    strategy.setup(info, np.random.default_rng(1))
    driver = SyntheticRounds(info, np.random.default_rng(2))
    _rounds(driver, strategy, 0, 6)
    copy, copy_driver = pickle.loads(pickle.dumps((strategy, driver)))
    original = _rounds(driver, strategy, 6, 12)
    # repr: exact floats, and NaN scores compare equal.
    assert repr(_rounds(copy_driver, copy, 6, 12)) == repr(original)
