"""Local training: the batched backend takes exactly the sequential reference's steps."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from netfl.learning.batched import BatchedTrainer, MaskedBatchNorm, batch_plan
from netfl.learning.trainer import LocalSGD, SequentialTrainer, minibatches

CPU = torch.device("cpu")


def _bn_cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.ReLU(),
        nn.BatchNorm2d(4),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * 4 * 4, 16),
        nn.BatchNorm1d(16),
        nn.ReLU(),
        nn.Linear(16, 3),
    )


def _mlp() -> nn.Module:
    torch.manual_seed(1)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 12), nn.ReLU(), nn.Linear(12, 3))


def _data(sizes):
    generator = torch.Generator().manual_seed(5)
    n = 300
    x = torch.randn(n, 1, 8, 8, generator=generator)
    y = torch.randint(0, 3, (n,), generator=generator)
    order = torch.randperm(n, generator=generator)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    indices = [order[bounds[k] : bounds[k + 1]].sort().values for k in range(len(sizes))]
    return x, y, indices


# Ragged sizes: a client with fewer samples than a batch, one with none, one whose last
# batch is short; batch-norm 1d needs at least 2 samples per batch, hence no size 1.
SIZES = [37, 5, 0, 64, 12]
SGDS = [
    LocalSGD(lr=0.1, epochs=2, batch_size=8, momentum=0.9, weight_decay=1e-3),
    LocalSGD(lr=0.05, epochs=1, batch_size=10, steps=7),
    LocalSGD(lr=0.2, epochs=3, batch_size=16),
]


def _batched_and_reference(make, sgd, sizes, steps=None):
    """Both backends on the same clients; asserts they agree to 1e-5 (fp32, CPU, no
    dropout, batch norm included) and returns (global state, batched result)."""
    model = make()
    x, y, indices = _data(sizes)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    seeds = [11 + k for k in range(len(sizes))]
    reference = SequentialTrainer(model, CPU).train(state, x, y, indices, seeds, sgd, steps)
    for name, value in model.state_dict().items():  # the caller's model is not trained
        assert torch.equal(value, state[name])
    batched = BatchedTrainer(model, CPU, vectorize_convolutions=True)
    assert batched.fallback is None
    result = batched.train(state, x, y, indices, seeds, sgd, steps)
    for name in state:
        assert torch.allclose(result[0][name].float(), reference[0][name].float(), atol=1e-5)
    assert np.allclose(result[1], reference[1], atol=1e-5, equal_nan=True)
    assert np.allclose(result[2], reference[2], atol=1e-5, equal_nan=True)
    return state, result


@pytest.mark.parametrize("sgd", SGDS)
@pytest.mark.parametrize("make", [_bn_cnn, _mlp])
def test_batched_equals_sequential(make, sgd):
    """Ragged clients: every step has an inactive client, so every update is masked."""
    state, result = _batched_and_reference(make, sgd, SIZES)
    # The client without data keeps the global model and reports no loss.
    for name in state:
        assert torch.equal(result[0][name][2], state[name])
    assert np.isnan(result[1][2])


@pytest.mark.parametrize("sgd", SGDS)
@pytest.mark.parametrize("make", [_bn_cnn, _mlp])
def test_batched_equals_sequential_when_every_client_steps(make, sgd):
    """Equal sizes: every client is active at every step (the unmasked update)."""
    _batched_and_reference(make, sgd, [24, 24, 24])


def test_chunks_of_clients_give_the_same_updates():
    model = _mlp()
    x, y, indices = _data(SIZES)
    state = model.state_dict()
    whole = BatchedTrainer(model, CPU).train(state, x, y, indices, range(5), SGDS[0])
    parts = BatchedTrainer(model, CPU, max_parallel_clients=2)
    chunked = parts.train(state, x, y, indices, list(range(5)), SGDS[0])
    for name in state:
        assert torch.allclose(whole[0][name], chunked[0][name], atol=1e-6)


def test_a_finished_client_does_not_move():
    """The 5-sample client takes one step per epoch; then its weights, momentum and
    statistics are frozen while the others go on: training it alone gives the same."""
    model = _bn_cnn()
    x, y, indices = _data(SIZES)
    state = model.state_dict()
    sgd = SGDS[0]
    together = BatchedTrainer(model, CPU, vectorize_convolutions=True)
    both = together.train(state, x, y, [indices[1], indices[3]], [12, 14], sgd)
    alone = together.train(state, x, y, [indices[1]], [12], sgd)
    for name in state:
        assert torch.allclose(both[0][name][0].float(), alone[0][name][0].float(), atol=1e-6)


def test_inactive_clients_keep_weights_and_momentum_exactly():
    trainer = BatchedTrainer(_mlp(), CPU)
    params = {"w": torch.randn(3, 4), "b": torch.randn(3)}
    velocity = {n: torch.randn_like(p) for n, p in params.items()}
    before = {n: p.clone() for n, p in params.items()}
    velocity_before = {n: v.clone() for n, v in velocity.items()}
    grads = [torch.full((3, 4), float("nan")), torch.ones(3)]  # even NaN does not leak
    active = torch.tensor([True, False, False])
    sgd = LocalSGD(0.1, 1, 4, momentum=0.9, weight_decay=0.01)
    trainer._sgd_step(params, grads, velocity, active, sgd)
    for name in params:
        assert torch.equal(params[name][1:], before[name][1:])
        assert torch.equal(velocity[name][1:], velocity_before[name][1:])
    expected_b = before["b"][0] - 0.1 * (0.9 * velocity_before["b"][0] + 1 + 0.01 * before["b"][0])
    assert torch.allclose(params["b"][0], expected_b)


def test_the_unmasked_step_is_the_masked_step_with_everyone_active():
    trainer = BatchedTrainer(_mlp(), CPU)
    sgd = LocalSGD(0.1, 1, 4, momentum=0.9, weight_decay=0.01)
    generator = torch.Generator().manual_seed(3)
    params = {"w": torch.randn(3, 4, generator=generator), "b": torch.randn(3, generator=generator)}
    velocity = {n: torch.randn(p.shape, generator=generator) for n, p in params.items()}
    grads = [torch.randn(p.shape, generator=generator) for p in params.values()]
    masked_params = {n: p.clone() for n, p in params.items()}
    masked_velocity = {n: v.clone() for n, v in velocity.items()}
    trainer._sgd_step(masked_params, grads, masked_velocity, torch.ones(3, dtype=torch.bool), sgd)
    trainer._sgd_step(params, grads, velocity, None, sgd)
    for name in params:
        assert torch.allclose(params[name], masked_params[name], atol=1e-7)
        assert torch.allclose(velocity[name], masked_velocity[name], atol=1e-7)


def test_cpu_convolutions_fall_back_to_the_reference_loop():
    assert BatchedTrainer(_bn_cnn(), CPU).fallback is not None
    assert BatchedTrainer(_mlp(), CPU).fallback is None


def test_masked_batch_norm_equals_batch_norm():
    torch.manual_seed(2)
    reference = nn.BatchNorm2d(3)
    masked = MaskedBatchNorm(nn.BatchNorm2d(3))
    x = torch.randn(6, 3, 4, 4)
    assert torch.allclose(masked(x), reference(x), atol=1e-6)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert torch.allclose(getattr(masked, name).float(), getattr(reference, name).float())
    # Padded rows (mask 0) change neither the output of real rows nor the statistics.
    padded = torch.cat([x, 100 * torch.randn(2, 3, 4, 4)])
    again = MaskedBatchNorm(nn.BatchNorm2d(3))
    again.sample_mask = torch.cat([torch.ones(6), torch.zeros(2)])
    assert torch.allclose(again(padded)[:6], reference.__class__(3)(x), atol=1e-5)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert torch.allclose(getattr(again, name).float(), getattr(reference, name).float())


def test_masked_batch_norm_keeps_fp32_statistics_of_bf16_input():
    """Under bf16 autocast (CUDA) convolutions hand batch norm bf16 activations; the
    statistics are those nn.BatchNorm2d computes in fp32 from the same (rounded) values,
    and the output is theirs rounded to bf16 (the input's dtype, as nn.BatchNorm2d gives
    it), so the next layer reads bf16."""
    torch.manual_seed(4)
    x = (3 * torch.randn(20, 8, 6, 6) + 1.7).bfloat16()
    reference = nn.BatchNorm2d(8)
    expected = reference(x.float())
    masked = MaskedBatchNorm(nn.BatchNorm2d(8))
    out = masked(x)
    assert out.dtype == torch.bfloat16
    assert torch.allclose(out.float(), expected, rtol=2**-8, atol=1e-5)
    assert torch.allclose(masked.running_mean, reference.running_mean, rtol=1e-5, atol=1e-6)
    assert torch.allclose(masked.running_var, reference.running_var, rtol=1e-5)


def test_minibatch_plans():
    generator = torch.Generator().manual_seed(0)
    epochs = minibatches(23, LocalSGD(0.1, 2, 10), generator)
    assert [len(b) for b in epochs] == [10, 10, 3, 10, 10, 3]
    assert sorted(torch.cat(epochs[:3]).tolist()) == list(range(23))
    steps = minibatches(23, LocalSGD(0.1, 1, 10, steps=5), generator)
    assert [len(b) for b in steps] == [10] * 5
    assert sorted(torch.cat(steps[:2]).tolist()) == sorted(set(torch.cat(steps[:2]).tolist()))
    small = minibatches(4, LocalSGD(0.1, 1, 10, steps=3), generator)
    assert [len(b) for b in small] == [4, 4, 4]
    assert minibatches(0, LocalSGD(0.1, 1, 10), generator) == []


def test_batch_plan_pads_and_masks():
    indices = [torch.arange(5), torch.arange(10, 13), torch.arange(0)]
    plan = batch_plan(indices, [1, 2, 3], LocalSGD(0.1, 1, 4))
    assert plan.rows.shape == (2, 3, 4)
    assert plan.active.tolist() == [[True, True, False], [True, False, False]]
    assert plan.weight.sum(dim=(0, 2)).tolist() == [5.0, 3.0, 0.0]
    assert set(plan.rows[0, 1, :3].tolist()) == {10, 11, 12}


def test_samples_processed():
    sizes = np.array([0, 5, 100])
    assert LocalSGD(0.1, 5, 50).samples_processed(sizes).tolist() == [0, 25, 500]
    assert LocalSGD(0.1, 1, 50, steps=30).samples_processed(sizes).tolist() == [0, 150, 1500]
