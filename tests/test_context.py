"""On-device data contexts: LSH (eq. (5)) and SimHash (eqs. (6)-(7)) of 004."""

from __future__ import annotations

import math

import numpy as np
import pytest

from netfl.selection.context import (
    QuantisedLSH,
    class_means,
    client_contexts,
    hyperplane_bits,
    image_context,
    random_hyperplanes,
    simhash,
    token_hash_bits,
)


def test_class_means_and_zero_rows_for_absent_classes():
    x = np.array([[1.0, 2.0], [3.0, 4.0], [10.0, 0.0]])
    y = np.array([0, 0, 2])
    assert class_means(x, y, 3).tolist() == [[2.0, 3.0], [0.0, 0.0], [10.0, 0.0]]


def test_lsh_is_deterministic_for_a_seed_and_shared_by_clients():
    a = QuantisedLSH.create(12, 4, 0.5, np.random.default_rng(1), projection_dim=8)
    b = QuantisedLSH.create(12, 4, 0.5, np.random.default_rng(1), projection_dim=8)
    v = np.random.default_rng(2).normal(size=12)
    assert a(v).tolist() == b(v).tolist()
    assert a(np.stack([v, v])).tolist() == [a(v).tolist()] * 2
    assert a(v).dtype == np.int64 and a(v).shape == (4,)


def test_eq_5_codes_by_hand():
    # Identity projection, indices (0, 2), offsets (0.1, 0.3), eta 0.5.
    lsh = QuantisedLSH(np.eye(3), np.array([0, 2]), np.array([0.1, 0.3]), 0.5)
    v = np.array([1.0, 7.0, -0.4])
    assert lsh(v).tolist() == [math.floor((1.0 - 0.1) / 0.5), math.floor((-0.4 - 0.3) / 0.5)]


@pytest.mark.parametrize("gap", [0.1, 0.35, 0.8, 1.5])
def test_collision_probability_of_quantised_coordinates(gap):
    # With b uniform in [0, eta), two values a gap apart share a bucket with probability
    # max(0, 1 - gap / eta). Every coordinate below is the same value with its own b.
    n, eta = 20000, 1.0
    lsh = QuantisedLSH.create(1, n, eta, np.random.default_rng(3), projection_dim=n)
    lsh = QuantisedLSH(np.ones((n, 1)), lsh.indices, lsh.offsets, eta)
    same = (lsh(np.array([0.3])) == lsh(np.array([0.3 + gap]))).mean()
    assert same == pytest.approx(max(0.0, 1 - gap / eta), abs=0.015)


@pytest.mark.parametrize("theta", [math.pi / 6, math.pi / 2, 2 * math.pi / 3])
def test_random_hyperplane_bits_agree_with_probability_one_minus_theta_over_pi(theta):
    rng = np.random.default_rng(4)
    dim = 10
    basis, _ = np.linalg.qr(rng.normal(size=(dim, 2)))
    u = basis[:, 0]
    v = math.cos(theta) * basis[:, 0] + math.sin(theta) * basis[:, 1]
    planes = random_hyperplanes(dim, 20000, rng)
    agree = (hyperplane_bits(u, planes) == hyperplane_bits(v, planes)).mean()
    assert agree == pytest.approx(1 - theta / math.pi, abs=0.015)


def test_simhash_of_one_token_is_its_hash():
    # Eq. (6) gives +w where the hash bit is 1 and -w where it is 0; eq. (7)'s sign
    # gives the hash back.
    assert simhash(["cat"], 32).tolist() == token_hash_bits("cat", 32).tolist()


def test_simhash_weights_by_eq_6():
    a, b = token_hash_bits("mat", 64), token_hash_bits("sat", 64)
    # The heavier token decides every bit where the two hashes disagree.
    assert simhash(["mat", "mat", "sat"], 64).tolist() == a.tolist()
    assert simhash(["mat", "sat"], 64, weights={"sat": 5.0}).tolist() == b.tolist()
    # Equal weights: disagreeing bits sum to 0, which eq. (7) maps to 0: bitwise AND.
    assert simhash(["mat", "sat"], 64).tolist() == (a & b).tolist()


def test_simhash_is_order_free_and_keeps_near_duplicates_close():
    rng = np.random.default_rng(5)
    vocabulary = [f"word{i}" for i in range(500)]
    text = list(rng.choice(vocabulary, 300))
    edited = text[:-15] + list(rng.choice(vocabulary, 15))
    other = list(rng.choice(vocabulary, 300))
    base = simhash(text)
    assert simhash(text[::-1]).tolist() == base.tolist()
    near = int((simhash(edited) != base).sum())
    far = int((simhash(other) != base).sum())
    assert near < far / 2


def test_image_contexts_are_closer_the_more_labels_clients_share():
    from sklearn.datasets import load_digits

    digits = load_digits()
    x, y = digits.data / 16.0, digits.target
    rng = np.random.default_rng(6)
    low = rng.permutation(np.flatnonzero(y < 2))
    mid = np.flatnonzero((y >= 2) & (y < 4))
    high = np.flatnonzero(y > 7)
    # Client 1 has other samples of client 0's labels; client 2 shares half the labels;
    # client 3 none.
    clients = [low[:60], low[60:120], np.concatenate([low[120:150], mid[:30]]), high[:60]]
    hasher = QuantisedLSH.create(10 * 64, 16, 0.05, np.random.default_rng(7), projection_dim=32)
    contexts = client_contexts(x, y, clients, 10, hasher)
    assert contexts.shape == (4, 16)
    assert contexts[0].tolist() == image_context(x[low[:60]], y[low[:60]], 10, hasher).tolist()
    same, half, different = (np.linalg.norm(contexts[0] - contexts[i]) for i in (1, 2, 3))
    assert same < half / 2 and half < different and same < different / 3
    # The summary is scale-free: the same pixels in [0, 16] give the same context.
    assert image_context(16 * x[low[:60]], y[low[:60]], 10, hasher).tolist() == (
        contexts[0].tolist()
    )


def test_bad_hasher_parameters():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="n_hashes"):
        QuantisedLSH.create(4, 5, 1.0, rng, projection_dim=4)
    with pytest.raises(ValueError, match="eta"):
        QuantisedLSH.create(4, 2, 0.0, rng)
    with pytest.raises(ValueError, match="positive"):
        simhash(["a"], 8, weights={"a": -1.0})


def test_every_feature_a_run_reports_is_a_declared_feature():
    # Issue 13: feature keys are declared once (netfl.features.Feature); runs with the
    # optional producers on (oracle exchange times, a loss poll, an update poll) report
    # no other key.
    from netfl.features import Feature
    from tests.protocol_helpers import group, run, scenario

    seen: set[str] = set()
    for poller in ("Poller", "UpdatePoller"):
        data = scenario(
            [group("a", 6, compute_sps=50.0, n_samples=20)],
            fl={"rounds": 2, "clients_per_round": 2, "oracle_exchange_time": True},
            selection={"name": f"tests.protocol_helpers:{poller}"},
        )
        if poller == "UpdatePoller":
            data["learning"] = {"dataset": "digits", "model": "digits_mlp", "batch_size": 10}
        world = run(data)
        for ctx in world.strategy.contexts:
            seen |= set(ctx.features)
    assert {"mu", "polled", "loss", "update_vector", "expected_exchange_time_s"} <= seen
    assert seen <= set(Feature), seen - set(Feature)
