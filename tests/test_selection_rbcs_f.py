"""RBCS-F against Huang et al. 2021: queues (6), ridge LCB (17)-(19), Algorithms 1-2."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.selection.observations import MissingFeatureError
from netfl.selection.rbcs_f import RBCSF, divide_and_conquer, lemma1_alpha
from netfl.trace.metrics import jain_index
from tests.selection_helpers import ctx, feedback, info, ready, selection_error

BITS = 20e6


def _features(mu, bandwidth_hz, cold=None):
    out = {"mu": mu, "bandwidth_hz": bandwidth_hz}
    if cold is not None:
        out["cold_start"] = cold
    return out


def test_virtual_queues_follow_eq_6():
    strategy = ready(RBCSF(beta=0.3), info(2, budget=1, model_size_bits=BITS))
    expected = []
    z = np.zeros(2)
    for selected in ([0], [0], [1], []):
        x = np.isin([0, 1], selected).astype(float)
        z = np.maximum(z + 0.3 - x, 0.0)
        expected.append(z.copy())
        strategy.observe(feedback(selected))
        assert strategy.backlog == pytest.approx(z)
    assert np.allclose(expected, [[0.0, 0.3], [0.0, 0.6], [0.3, 0.0], [0.6, 0.3]])


def test_ridge_estimate_and_lcb_equal_the_closed_form():
    rng = np.random.default_rng(5)
    lam, alpha = 2.0, 0.4
    strategy = ready(
        RBCSF(ridge_lambda=lam, alpha=alpha, V=1.0), info(1, budget=1, model_size_bits=BITS)
    )
    rows, taus = [], []
    for r in range(6):
        mu, bw, cold = rng.uniform(0.5, 2), rng.uniform(2e6, 4e6), float(r % 2)
        assert strategy.select(ctx([0], 1, round_=r, features=_features([mu], [bw], [cold]))) == [0]
        tau = rng.uniform(1, 10)
        strategy.observe(feedback([0], round_=r, exchange=[tau]))
        rows.append([1 / mu, cold, BITS / bw])
        taus.append(tau)
    d, y = np.array(rows), np.array(taus)
    h = d.T @ d + lam * np.eye(3)
    theta = np.linalg.solve(h, d.T @ y)  # eq. (17)
    c = np.array([1 / 1.3, 1.0, BITS / 3.1e6])
    strategy.select(ctx([0], 1, round_=6, features=_features([1.3], [3.1e6], [1.0])))
    scores = strategy.scores()
    assert scores["tau_hat"][0] == pytest.approx(c @ theta)
    width = math.sqrt(c @ np.linalg.solve(h, c))
    assert scores["tau_bar"][0] == pytest.approx(max(c @ theta - alpha * width, 0.0))  # eq. (19)


def test_unobserved_exchange_time_adds_no_regression_sample():
    strategy = ready(RBCSF(), info(2, budget=2, model_size_bits=BITS))
    strategy.select(ctx([0, 1], 2, features=_features([1.0, 1.0], [3e6, 3e6])))
    strategy.observe(feedback([0, 1], exchange=[5.0, np.nan], completed=[True, False]))
    assert np.allclose(strategy.h[1], np.eye(3)) and not strategy.b[1].any()
    assert strategy.b[0].any()
    assert strategy.backlog.tolist() == [0.0, 0.0]  # both were selected: x = 1


def test_cold_start_is_one_for_clients_not_selected_last_round():
    strategy = ready(RBCSF(), info(3, budget=1, model_size_bits=BITS))
    strategy.observe(feedback([1]))
    contexts = strategy.contexts(ctx([0, 1, 2], 1, features=_features([2.0] * 3, [4e6] * 3)))
    assert contexts[:, 1].tolist() == [1.0, 0.0, 1.0]
    assert contexts[0].tolist() == pytest.approx([0.5, 1.0, 5.0])
    # A reported cold_start feature takes precedence.
    reported = _features([2.0] * 3, [4e6] * 3, [0.0, 1.0, 0.0])
    assert strategy.contexts(ctx([0, 1, 2], 1, features=reported))[:, 1].tolist() == [0, 1, 0]


def test_missing_context_feature_is_named():
    strategy = ready(RBCSF(), info(3, budget=1, model_size_bits=BITS))
    with pytest.raises(MissingFeatureError, match="'bandwidth_hz'"):
        strategy.select(ctx([0, 1], 1, features={"mu": [1.0, 1.0]}))


def test_model_size_comes_from_params_or_the_population():
    strategy = ready(RBCSF(model_size_bits=8e6), info(2, budget=1, model_size_bits=BITS))
    assert strategy.bits == 8e6
    with pytest.raises(ValueError, match="model size"):
        ready(RBCSF(), info(2, budget=1))


def test_lemma_1_alpha_schedule():
    strategy = RBCSF(
        alpha_schedule="lemma1", noise_r=0.5, theta_bound=2.0, context_bound=3.0, delta=0.05
    )
    strategy.ridge_lambda = 1.0
    expected = 0.5 * math.sqrt(3 * math.log((1 + 4 * 9 / 1.0) / 0.05)) + 1.0 * 2.0
    assert strategy.alpha_t(3) == pytest.approx(expected)  # round 3 is t = 4
    assert lemma1_alpha(4, 1.0, 0.5, 2.0, 3.0, 0.05) == pytest.approx(expected)
    assert RBCSF(alpha=0.1).alpha_t(7) == 0.1


def _objective(tau_bar, backlog, chosen, v):
    return v * max(tau_bar[list(chosen)]) - backlog[list(chosen)].sum()


@given(
    st.integers(1, 7).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 6).map(float), min_size=n, max_size=n),
            st.lists(st.integers(0, 5).map(lambda z: z / 2), min_size=n, max_size=n),
            st.integers(1, n),
            st.sampled_from([0.0, 0.5, 1.0, 10.0, 1000.0]),
        )
    )
)
@settings(max_examples=300, deadline=None)
def test_algorithm_1_is_optimal_for_p4(case):
    tau_list, z_list, k, v = case
    tau_bar, backlog = np.array(tau_list), np.array(z_list)
    picked = divide_and_conquer(tau_bar, backlog, k, v)
    assert len(set(picked.tolist())) == k
    best = min(
        _objective(tau_bar, backlog, subset, v)
        for subset in itertools.combinations(range(len(tau_bar)), k)
    )
    assert _objective(tau_bar, backlog, picked, v) == pytest.approx(best)


def test_m_caps_the_selection():
    strategy = ready(RBCSF(m=2), info(6, budget=4, model_size_bits=BITS))
    chosen = strategy.select(ctx(range(6), 4, features=_features([1.0] * 6, [3e6] * 6)))
    assert len(chosen) == 2


def _paper_round_times(v: float, rounds: int = 150, seed: int = 0):
    """003 Sec. 6.1 in miniature: 40 clients in the four classes of Table 1."""
    rng = np.random.default_rng(seed)
    n = 40
    tau_b = np.repeat([1.0, 2.0, 3.0, 4.0], 10)
    eta = np.log(1 + np.repeat([1000.0, 100.0, 10.0, 1.0], 10))
    theta = np.column_stack([tau_b, np.ones(n), 1 / eta])
    strategy = ready(
        RBCSF(V=v, beta=0.15, alpha=0.1), info(n, budget=8, model_size_bits=BITS), seed
    )
    last = np.zeros(n, dtype=bool)
    times, counts = [], np.zeros(n)
    for r in range(rounds):
        available = np.flatnonzero(rng.random(n) < 0.8)
        mu, bw = rng.uniform(0.5, 2.0, n), rng.uniform(2e6, 4e6, n)
        c = np.column_stack([1 / mu, (~last).astype(float), BITS / bw])
        mean = (c * theta).sum(axis=1)
        tau = mean + rng.uniform(-mean, mean)
        features = _features(mu[available], bw[available], (~last)[available].astype(float))
        chosen = np.array(strategy.select(ctx(available, 8, round_=r, features=features)), int)
        strategy.observe(feedback(chosen, round_=r, exchange=tau[chosen]))
        last = np.isin(np.arange(n), chosen)
        counts[chosen] += 1
        times.append(tau[chosen].max())
    return np.array(times), counts


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_larger_v_is_faster_and_less_fair(seed):
    """Figs. 3-4 of 003: larger V shortens rounds and concentrates the selection."""
    fast_times, fast_counts = _paper_round_times(v=100.0, seed=seed)
    fair_times, fair_counts = _paper_round_times(v=1.0, seed=seed)
    assert fast_times.mean() < fair_times.mean()
    assert jain_index(fair_counts) > jain_index(fast_counts)


def test_every_client_reaches_the_guaranteed_rate():
    """Theorem 4 of 003: stable queues, so each client's selection rate tends to beta."""
    _, counts = _paper_round_times(v=1.0, rounds=500)
    assert (counts / 500).min() >= 0.15 - 0.01


@pytest.mark.parametrize(
    ("params", "key", "message"),
    [
        ({"beta": 1.5}, "selection.params.beta", "less than or equal to 1"),
        ({"alpha": -0.1}, "selection.params.alpha", "greater than or equal to 0"),
        ({"ridge_lambda": 0}, "selection.params.ridge_lambda", "greater than 0"),
        ({"V": "high"}, "selection.params.V", "valid number"),
        ({"lambda": 1}, "selection.params.lambda", "not a parameter"),
        ({"m": 4}, "selection.params.m", "more than fl.clients_per_round (3)"),
        ({"m": 7}, "selection.params.m", "more than the population (6 devices)"),
    ],
)
def test_bad_params_name_the_key(tiny, params, key, message):
    error = selection_error(tiny, "rbcs_f", params)
    assert error.problems[0].key == key
    assert message in str(error)


def test_a_round_without_candidates_needs_no_features():
    strategy = ready(RBCSF(beta=0.5), info(2, budget=1, model_size_bits=BITS))
    assert strategy.select(ctx([], 1)) == []
    assert strategy.scores() == {"backlog": {0: 0.0, 1: 0.0}}
    strategy.observe(feedback([]))
    assert strategy.backlog.tolist() == [0.5, 0.5]
