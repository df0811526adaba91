"""The neural reward estimator of NCCB, eqs. (9)-(14) of Cao et al. 2022."""

from __future__ import annotations

import math

import numpy as np
import pytest

from netfl.selection.clustering import kmeans
from netfl.selection.neural_ucb import NeuralUCB


def _net(input_dim=4, width=8, depth=3, reg=0.5, gamma=2.0, seed=0) -> NeuralUCB:
    return NeuralUCB(input_dim, width, depth, reg, gamma, np.random.default_rng(seed))


def test_initialisation_of_eqs_11_12_outputs_zero_on_mirrored_inputs():
    # W_l = diag(W, W), W_L = (w, -w): an input (u, u) gives two equal halves that
    # cancel at the output.
    net = _net(input_dim=6, depth=3)
    u = np.random.default_rng(1).normal(size=(5, 3))
    assert net.predict(np.hstack([u, u])) == pytest.approx(np.zeros(5), abs=1e-12)
    assert net.predict(np.hstack([u, -u])) != pytest.approx(np.zeros(5), abs=1e-3)
    first, middle, last = net.weights
    assert np.all(first[:4, 3:] == 0) and np.all(first[4:, :3] == 0)
    assert np.array_equal(first[:4, :3], first[4:, 3:])
    assert np.array_equal(middle[:4, :4], middle[4:, 4:])
    assert np.array_equal(last[0, :4], -last[0, 4:])


def test_gradient_matches_finite_differences():
    net = _net(input_dim=5, width=12, depth=3)  # odd input: padded
    x = np.random.default_rng(2).normal(size=(3, 5))
    _, pre = net._forward(x)
    assert all(np.all(a != 0) for a in pre)  # away from ReLU kinks
    g = net.gradients(x)
    assert g.shape == (3, net.n_params)
    numeric = np.zeros_like(g)
    offset, h = 0, 1e-6
    for w in net.weights:
        for idx in np.ndindex(w.shape):
            w[idx] += h
            up = net.predict(x)
            w[idx] -= 2 * h
            down = net.predict(x)
            w[idx] += h
            numeric[:, offset] = (up - down) / (2 * h)
            offset += 1
    assert g == pytest.approx(numeric, abs=1e-6)


def test_bound_of_eq_13_and_design_update_of_eq_14():
    net = _net()
    x = np.random.default_rng(3).normal(size=(4, 4))
    g = net.gradients(x)
    # Z = lambda I at first: U = f + gamma sqrt(|g|^2 / (lambda w)).
    expected = net.predict(x) + 2.0 * np.sqrt((g**2).sum(axis=1) / (0.5 * 8))
    assert net.bound(x) == pytest.approx(expected)
    net.add_to_design(x[:2])
    z = 0.5 * np.eye(net.n_params) + g[:2].T @ g[:2] / 8
    assert net.z_inverse == pytest.approx(np.linalg.inv(z), abs=1e-9)
    width_term = np.einsum("np,pq,nq->n", g, np.linalg.inv(z), g) / 8
    assert net.bound(x) == pytest.approx(net.predict(x) + 2.0 * np.sqrt(width_term))
    # A later round adds to the same Z (theta unchanged, so the same gradients).
    net.add_to_design(x[2:3])
    z += np.outer(g[2], g[2]) / 8
    assert net.z_inverse == pytest.approx(np.linalg.inv(z), abs=1e-9)


def test_training_on_eq_10_fits_a_reward_function():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(200, 4))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    rewards = 1.0 + x[:, 0] - 0.5 * x[:, 1] ** 2
    net = _net(width=32, depth=2, reg=1e-4)
    before = net.loss(x, rewards)
    net.fit(x, rewards, steps=1000, lr=0.1)
    assert net.loss(x, rewards) < before / 20
    assert np.corrcoef(net.predict(x), rewards)[0, 1] > 0.95


def test_a_training_step_descends_the_gradient_of_eq_10():
    rng = np.random.default_rng(5)
    x, rewards = rng.normal(size=(20, 4)), rng.normal(size=20)
    net = _net(width=12, reg=0.3)
    net.fit(x, rewards, steps=5, lr=0.05)  # leave theta^0, so the penalty pulls too
    numeric, h = [], 1e-6
    for w in net.weights:
        grad = np.zeros_like(w)
        for idx in np.ndindex(w.shape):
            w[idx] += h
            up = net.loss(x, rewards)
            w[idx] -= 2 * h
            down = net.loss(x, rewards)
            w[idx] += h
            grad[idx] = (up - down) / (2 * h)
        numeric.append(grad)
    before = [w.copy() for w in net.weights]
    net.fit(x, rewards, steps=1, lr=0.01)
    for w, w_before, grad in zip(net.weights, before, numeric, strict=True):
        assert w - w_before == pytest.approx(-0.01 * grad, abs=1e-8)


def test_width_must_be_even():
    with pytest.raises(ValueError, match="even"):
        _net(width=7)


def test_kmeans_recovers_separated_blobs():
    rng = np.random.default_rng(6)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    truth = np.repeat(np.arange(3), 15)
    points = centres[truth] + rng.normal(scale=0.5, size=(45, 2))
    labels, centroids = kmeans(points, 3, np.random.default_rng(7))
    # Same partition up to renaming the clusters.
    pairs = {(int(a), int(b)) for a, b in zip(truth, labels, strict=True)}
    assert len(pairs) == 3 and len({b for _, b in pairs}) == 3
    assert sorted(map(tuple, np.round(centroids).tolist())) == sorted(map(tuple, centres.tolist()))


def test_kmeans_caps_clusters_at_distinct_points():
    points = np.array([[1.0, 1.0]] * 4 + [[2.0, 2.0]] * 3)
    labels, centroids = kmeans(points, 5, np.random.default_rng(0))
    assert len(centroids) == 2
    assert len(set(labels[:4].tolist())) == 1 and labels[0] != labels[-1]
    assert math.isfinite(float(centroids.sum()))


def test_kmeans_restarts_escape_the_local_optima_of_one_run():
    # Ten blobs on a line, in five close pairs: one k-means++ run sometimes seeds two
    # centres in one pair and none in another, and Lloyd's iterations keep that.
    rng = np.random.default_rng(0)
    centres = np.array([[x, 0.0] for pair in range(5) for x in (10.0 * pair, 10.0 * pair + 3)])
    truth = np.repeat(np.arange(10), 8)
    points = centres[truth] + rng.normal(scale=0.3, size=(80, 2))

    def recovered(restarts: int, seed: int) -> bool:
        labels, _ = kmeans(points, 10, np.random.default_rng(seed), restarts=restarts)
        return len({(int(a), int(b)) for a, b in zip(truth, labels, strict=True)}) == 10

    assert not all(recovered(1, seed) for seed in range(20))
    assert all(recovered(10, seed) for seed in range(20))
