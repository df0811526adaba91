"""Partial work and FedProx in local training (Li et al., MLSys 2020): per-client step
counts, the proximal term, and the step <-> sample arithmetic the clock uses."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from netfl.learning.trainer import (
    LocalSGD,
    SequentialTrainer,
    local_path_norms,
    minibatches,
    proximal_gradient,
)
from tests.test_learning_trainer import (
    CPU,
    SGDS,
    SIZES,
    _batched_and_reference,
    _bn_cnn,
    _data,
    _mlp,
)

PROX = [dataclasses.replace(sgd, prox_mu=0.5) for sgd in SGDS]


@pytest.mark.parametrize("sgd", SGDS + PROX)
@pytest.mark.parametrize("make", [_bn_cnn, _mlp])
def test_batched_equals_sequential_with_per_client_steps(make, sgd):
    """Clients cut short at different steps (one at none) train in one batched call, to
    the sequential reference's tolerance."""
    full = sgd.steps_taken(np.array(SIZES))
    steps = [int(s) for s in np.minimum(full, [3, 1, 0, 9, 2])]
    _, result = _batched_and_reference(make, sgd, SIZES, steps)
    assert np.isnan(result[1][2])  # no data, no step, no loss


@pytest.mark.parametrize("make", [_bn_cnn, _mlp])
def test_batched_equals_sequential_with_the_proximal_term(make):
    _batched_and_reference(make, PROX[0], SIZES)
    _batched_and_reference(make, PROX[2], [24, 24, 24])


def test_a_partial_update_is_the_start_of_the_full_one():
    """The first s steps are the full plan's first s steps: training s steps, then
    asking for the plan's batches, gives what a hand loop over those batches gives."""
    model = _mlp()
    x, y, indices = _data([40])
    state = model.state_dict()
    sgd = LocalSGD(lr=0.1, epochs=2, batch_size=8)
    partial = SequentialTrainer(model, CPU).train(state, x, y, indices, [7], sgd, [3])[0]
    generator = torch.Generator().manual_seed(7)
    batches = minibatches(40, sgd, generator)[:3]
    net = _mlp()
    net.load_state_dict(state)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for batch in batches:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(
            net(x[indices[0][batch]]), y[indices[0][batch]]
        ).backward()
        optimizer.step()
    for name, value in net.state_dict().items():
        assert torch.allclose(partial[name][0], value, atol=1e-6)


def test_the_proximal_gradient_is_mu_times_the_distance_to_the_global_model():
    """FedProx's term (mu / 2) ||w - w_t||^2 adds mu (w - w_t) to the gradient (Li et al.
    2020, eq. (2)): weights moved by +1 from w_t with mu = 0.5 gain 0.5; the untouched bias
    gains nothing."""
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    anchor = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        model.weight.add_(1.0)
    model.weight.grad = torch.zeros_like(model.weight)
    model.bias.grad = torch.zeros_like(model.bias)
    proximal_gradient([(model.weight, anchor["weight"]), (model.bias, anchor["bias"])], mu=0.5)
    assert torch.allclose(model.weight.grad, torch.full((2, 3), 0.5))
    assert torch.equal(model.bias.grad, torch.zeros(2))


@given(
    n=st.integers(1, 60),
    batch=st.integers(1, 16),
    epochs=st.integers(1, 3),
    local_steps=st.none() | st.integers(1, 12),
)
def test_steps_and_samples_are_inverse(n, batch, epochs, local_steps):
    """samples_in_steps counts the samples of the plan's first s batches; steps_within
    inverts it (and a sample short of the next step does not complete it)."""
    sgd = LocalSGD(0.1, epochs, batch, steps=local_steps)
    plan = minibatches(n, sgd, torch.Generator().manual_seed(0))
    full = int(sgd.steps_taken(np.array([n]))[0])
    assert len(plan) == full
    counted = np.cumsum([0] + [len(b) for b in plan])
    s = np.arange(full + 1)
    samples = sgd.samples_in_steps(np.full(full + 1, n), s)
    assert samples.tolist() == counted.tolist()
    assert sgd.steps_within(np.full(full + 1, n), samples).tolist() == s.tolist()
    short = sgd.steps_within(np.full(full, n), samples[1:] - 0.5)
    assert short.tolist() == s[:-1].tolist()


def test_local_path_norms_are_wang_et_al_s():
    """||a||_1 (Wang et al. 2020): tau for SGD; [tau - rho(1 - rho^tau)/(1 - rho)]/(1 - rho)
    with momentum; [1 - (1 - lr mu)^tau]/(lr mu) with the proximal term. By hand, tau = 3:
    momentum 0.5: a = (1.75, 1.5, 1) -> 4.25; lr mu = 0.1: a = (0.81, 0.9, 1) -> 2.71."""
    tau = np.array([3, 1, 0])
    assert local_path_norms(LocalSGD(0.1, 1, 10), tau).tolist() == [3, 1, 0]
    assert np.allclose(local_path_norms(LocalSGD(0.1, 1, 10, momentum=0.5), tau), [4.25, 1, 0])
    assert np.allclose(local_path_norms(LocalSGD(0.1, 1, 10, prox_mu=1.0), tau), [2.71, 1, 0])


def test_local_path_norms_with_momentum_and_prox_follow_the_recursion():
    """Both: a_i is the displacement a unit gradient at step i causes by the end; by hand
    for tau = 2, rho = 0.5, lr = 0.1, mu = 1: the last step's gradient moves lr (a = 1); the
    first's moves lr, then lr (rho - lr mu) more: a = 1.4; ||a||_1 = 2.4. And each form alone
    is the limit of the recursion (checked against the closed forms above)."""
    sgd = LocalSGD(0.1, 1, 10, momentum=0.5, prox_mu=1.0)
    assert np.allclose(local_path_norms(sgd, np.array([2, 1])), [2.4, 1.0])
    for rho, mu in ((0.9, 1e-12), (1e-12, 2.0)):
        mixed = local_path_norms(LocalSGD(0.05, 1, 10, momentum=rho, prox_mu=mu), np.arange(30))
        closed_rho = local_path_norms(LocalSGD(0.05, 1, 10, momentum=rho), np.arange(30))
        closed_mu = local_path_norms(LocalSGD(0.05, 1, 10, prox_mu=mu), np.arange(30))
        assert np.allclose(mixed, closed_rho if mu < 1 else closed_mu, rtol=1e-6)
