"""NCCB (Algorithm 1 of Cao et al. 2022) and its k-LinUCB baseline."""

from __future__ import annotations

import math

import numpy as np
import pytest

from netfl.selection.contextual import utility_rewards
from netfl.selection.k_linucb import KLinUCB
from netfl.selection.nccb import NCCB
from netfl.selection.signals import MissingSignalError
from tests.selection_helpers import ctx, feedback, info, ready, selection_error

N_CLUSTERS, PER_CLUSTER = 4, 5


def _clustered_contexts(seed: int = 0) -> np.ndarray:
    """Clients 0-4 near axis 0, 5-9 near axis 1, ...: four clear clusters in 6 dims."""
    rng = np.random.default_rng(seed)
    axes = np.repeat(np.arange(N_CLUSTERS), PER_CLUSTER)
    return np.eye(6)[axes] * 5.0 + rng.normal(scale=0.2, size=(len(axes), 6))


def _ready(strategy, n, budget):
    return ready(strategy, info(n, budget, [10] * n))


def _contexts(n, budget, contexts, round_=0):
    return ctx(range(n), budget, round_=round_, features={"context": contexts})


def _report(round_, selected, losses, std=None):
    std = np.zeros(len(selected)) if std is None else np.asarray(std, float)
    done = np.isfinite(losses)
    signals = {"local_loss_std": std}
    return feedback(selected, round_=round_, loss=losses, completed=done, signals=signals)


def _play(strategy, contexts, rounds, loss_of, start=0):
    """Run rounds with every client a candidate; yield (selection, counters before)."""
    n = len(contexts)
    for r in range(start, start + rounds):
        counters = getattr(strategy, "counters", np.zeros(0)).copy()
        chosen = strategy.select(_contexts(n, strategy.info.budget, contexts, r))
        yield chosen, counters
        losses = [loss_of(c) for c in chosen]
        strategy.observe(_report(r, chosen, losses))


def test_clusters_are_found_from_the_contexts():
    contexts = _clustered_contexts()
    strategy = _ready(NCCB(clusters=4), 20, 2)
    strategy.select(_contexts(20, 2, contexts))
    labels = strategy.cluster_of.reshape(N_CLUSTERS, PER_CLUSTER)
    assert all(len(set(row)) == 1 for row in labels.tolist())
    assert len(set(labels[:, 0].tolist())) == N_CLUSTERS


def test_one_client_per_unexplored_cluster_then_ucb_for_the_rest():
    contexts = _clustered_contexts()
    strategy = _ready(NCCB(clusters=4, threshold=1), 20, 3)
    phases = set()
    for chosen, counters in _play(strategy, contexts, 12, loss_of=lambda c: 1.0):
        clusters = strategy.cluster_of[chosen]
        unexplored = np.flatnonzero(counters <= 1)
        n_explore = min(3, len(unexplored))
        # Lines 7-12: the first min(m, |C_un|) picks come one from each of as many
        # distinct unexplored clusters; UCB picks the rest from anywhere (lines 13-20).
        assert len(set(clusters[:n_explore].tolist())) == n_explore
        assert set(clusters[:n_explore].tolist()) <= set(unexplored.tolist())
        phases.add(n_explore)
    assert phases >= {3, 0}  # went from pure cluster exploration to pure UCB
    assert (strategy.counters > 1).all()


def test_ucb_fills_the_rest_of_the_budget_with_the_largest_bounds():
    contexts = _clustered_contexts()
    strategy = _ready(NCCB(clusters=4, threshold=0), 20, 3)
    list(_play(strategy, contexts, 1, loss_of=lambda c: 1.0))  # three clusters explored
    unexplored = int(np.flatnonzero(strategy.counters == 0)[0])
    chosen = strategy.select(_contexts(20, 3, contexts, round_=1))
    assert strategy.cluster_of[chosen[0]] == unexplored
    unit = contexts / np.linalg.norm(contexts, axis=1, keepdims=True)
    assert strategy.estimator is not None
    bounds = strategy.estimator.bound(unit)
    bounds[chosen[0]] = -np.inf
    assert chosen[1:] == np.argsort(-bounds)[:2].tolist()


@pytest.mark.parametrize("make", [lambda: NCCB(clusters=4, threshold=2), KLinUCB])
def test_learns_to_prefer_the_cluster_with_the_largest_utility(make):
    contexts = _clustered_contexts()
    strategy = _ready(make(), 20, 2)

    def loss(client):  # cluster of clients 10-14 has three times the loss
        return 3.0 if 10 <= client < 15 else 1.0

    picks = [c for chosen, _ in _play(strategy, contexts, 40, loss) for c in chosen]
    late = np.array(picks[-40:])
    assert np.mean((late >= 10) & (late < 15)) > 0.8


def test_utility_of_eq_2():
    fb = _report(0, [0, 2, 1], [2.0, np.nan, 1.0], [1.5, np.nan, 0.0])
    clients, rewards = utility_rewards(fb, np.array([30, 10, 20]), "test")
    assert clients.tolist() == [0, 1]
    # |D_i| sqrt(mean^2 + std^2) / mean |D|: 30 * 2.5 / 20 and 10 * 1 / 20.
    assert rewards == pytest.approx([30 * 2.5 / 20, 10 * 1.0 / 20])


def test_k_linucb_is_closed_form_ridge_with_a_confidence_bound():
    rng = np.random.default_rng(1)
    contexts = rng.normal(size=(8, 3))
    unit = contexts / np.linalg.norm(contexts, axis=1, keepdims=True)
    strategy = _ready(KLinUCB(alpha=0.7, reg=2.0), 8, 3)
    observed = []
    for r in range(4):
        chosen = strategy.select(_contexts(8, 3, contexts, r))
        losses = rng.uniform(0.5, 2.0, len(chosen))
        strategy.observe(_report(r, chosen, losses))
        observed += list(zip(chosen, losses, strict=True))
    x = unit[[c for c, _ in observed]]
    r = np.array([loss for _, loss in observed])  # equal sizes, no spread: reward = loss
    # Ridge by augmented least squares: [X; sqrt(lambda) I] theta = [r; 0].
    theta = np.linalg.lstsq(
        np.vstack([x, math.sqrt(2.0) * np.eye(3)]), np.concatenate([r, np.zeros(3)]), rcond=None
    )[0]
    assert strategy.theta() == pytest.approx(theta)
    a_inv = np.linalg.inv(2.0 * np.eye(3) + x.T @ x)
    bounds = unit @ theta + 0.7 * np.sqrt(np.einsum("nd,de,ne->n", unit, a_inv, unit))
    assert strategy.bounds(unit) == pytest.approx(bounds)
    chosen = strategy.select(_contexts(8, 3, contexts, 4))
    assert chosen == np.argsort(-bounds)[:3].tolist()


@pytest.mark.parametrize("cls", [NCCB, KLinUCB])
def test_contexts_are_required(cls):
    strategy = _ready(cls(), 3, 2)
    with pytest.raises(MissingSignalError, match="'context'"):
        strategy.select(ctx(range(3), 2))


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [
        ("nccb", "width", 7),
        ("nccb", "threshold", -1),
        ("nccb", "clusters", 0),
        ("nccb", "reg", 0.0),
        ("k_linucb", "alpha", -1.0),
        ("k_linucb", "reg", 0.0),
    ],
)
def test_parameter_errors_name_the_key(tiny, name, key, value):
    error = selection_error(tiny, name, {key: value})
    assert error.problems[0].key == f"selection.params.{key}"
