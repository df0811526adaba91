"""FedAvg and the sequential trainer (the reference backend)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from netfl.learning.aggregation import fedavg


def _states(k, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {
        "w": torch.randn(k, 3, 2, generator=g),
        "b": torch.randn(k, 2, generator=g),
        "steps": torch.arange(k, dtype=torch.int64) * 4,
    }


def test_fedavg_of_identical_models_is_that_model():
    one = _states(1)
    stacked = {k: v.repeat((4,) + (1,) * (v.dim() - 1)) for k, v in one.items()}
    out = fedavg(stacked, torch.tensor([1.0, 5.0, 2.0, 7.0]))
    for name in ("w", "b"):
        assert torch.allclose(out[name], one[name][0])


def test_fedavg_is_the_data_weighted_mean():
    states = _states(3)
    weights = torch.tensor([100.0, 300.0, 600.0])
    out = fedavg(states, weights)
    expected = (states["w"] * (weights / weights.sum()).view(-1, 1, 1)).sum(0)
    assert torch.allclose(out["w"], expected)


def test_zero_weight_client_leaves_aggregate_unchanged():
    states = _states(3)
    with_zero = fedavg(states, torch.tensor([2.0, 3.0, 0.0]))
    without = fedavg({k: v[:2] for k, v in states.items()}, torch.tensor([2.0, 3.0]))
    for name in states:
        assert torch.equal(with_zero[name], without[name])


def test_fedavg_rounds_integer_buffers_down():
    """Integer buffers (batch-norm step counters) stay integers: the weighted mean of
    steps (0, 4, 8) with weights (1, 2, 0) is (1*0 + 2*4) / 3 = 2.67, rounded down to 2."""
    out = fedavg(_states(3), torch.tensor([1.0, 2.0, 0.0]))
    assert out["steps"].dtype == torch.int64
    assert int(out["steps"]) == 2


def test_all_zero_weights_keep_the_old_model():
    assert fedavg(_states(2), torch.zeros(2)) is None


def test_negative_weights_are_refused():
    with pytest.raises(ValueError):
        fedavg(_states(2), torch.tensor([1.0, -1.0]))


def test_partition_iid_sizes_and_ranges():
    from netfl.config.learning import PartitionConfig
    from netfl.learning.partition import partition

    labels = np.repeat(np.arange(10), 50)
    rng = np.random.default_rng(0)
    parts = partition(PartitionConfig(), labels, 3, np.array([10, 20, 500]), rng)
    assert parts.sizes.tolist() == [10, 20, 500]
    assert all(len(np.unique(p)) == len(p) for p in parts.train)
    even = partition(PartitionConfig(), labels, 3, None, rng)
    assert sorted(np.concatenate(even.train).tolist()) == list(range(500))
