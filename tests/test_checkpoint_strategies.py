"""Every registered strategy survives a checkpoint: pickled mid-run, the copy goes on
exactly as the original does (same selections, same scores), so ``--resume`` works with
any of them."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from netfl.registry import strategies
from netfl.selection.base import PopulationInfo, Strategy, make_strategy
from netfl.selection.check import _context, _feedback, _poll

REGISTERED = sorted(strategies().entries())
N_CLIENTS, BUDGET = 30, 5


def _rounds(strategy: Strategy, rng: np.random.Generator, first: int, last: int) -> list:
    """Drive ``strategy`` through rounds first..last-1 with synthetic inputs from ``rng``."""
    info = strategy.info
    history = {
        "update": np.zeros(N_CLIENTS),
        "upload": np.zeros(N_CLIENTS),
        "last_round": np.full(N_CLIENTS, -10),
    }
    seen = []
    for round_ in range(first, last):
        n_cand = int(rng.integers(BUDGET, N_CLIENTS + 1))
        ctx = _poll(strategy, _context(rng, info, round_, n_cand, history), rng)
        chosen = [int(c) for c in strategy.select(ctx)]
        seen.append((chosen, {k: dict(v) for k, v in strategy.scores().items()}))
        selected = np.asarray(chosen, dtype=np.int64)
        strategy.observe(_feedback(rng, round_, selected, nobody_reported=False))
        history["last_round"][selected] = round_
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
    _rounds(strategy, np.random.default_rng(2), 0, 6)
    copy = pickle.loads(pickle.dumps(strategy))
    original = _rounds(strategy, np.random.default_rng(3), 6, 12)
    # repr: exact floats, and NaN scores compare equal.
    assert repr(_rounds(copy, np.random.default_rng(3), 6, 12)) == repr(original)
