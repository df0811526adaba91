"""The learner: FedAvg, signals on request, per-client losses, schedules."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from netfl.config.learning import LearningConfig
from netfl.learning.datasets import Dataset
from netfl.learning.interface import EvalSchedule, NullLearner, wants_for
from netfl.learning.learner import TorchLearner
from netfl.learning.models import digits_mlp
from netfl.learning.partition import Partition


def _dataset(n_train: int = 60, n_test: int = 30) -> Dataset:
    generator = torch.Generator().manual_seed(0)
    return Dataset(
        "toy",
        torch.randn(n_train, 1, 8, 8, generator=generator),
        torch.arange(n_train) % 3,
        torch.randn(n_test, 1, 8, 8, generator=generator),
        torch.arange(n_test) % 3,
        n_classes=3,
    )


def _learner(parts: list[np.ndarray] | Partition, **config) -> TorchLearner:
    torch.manual_seed(0)
    config.setdefault("lr", 0.1)
    return TorchLearner(
        LearningConfig(**config),
        _dataset(),
        parts,
        digits_mlp((1, 8, 8), 3),
        torch.device("cpu"),
        seed=1,
    )


PARTS = [np.arange(0, 20), np.arange(20, 45), np.array([], dtype=np.int64), np.arange(45, 60)]


def test_zero_sample_client_leaves_the_aggregate_unchanged():
    learner = _learner(PARTS)
    with_empty = learner.local_update(0, np.array([0, 2, 1]))
    assert with_empty.n_samples.tolist() == [20, 0, 25]
    learner.aggregate(with_empty, np.ones(3, dtype=bool))
    first = {k: v.clone() for k, v in learner.global_state.items()}
    other = _learner(PARTS)
    other.aggregate(other.local_update(0, np.array([0, 1])), np.ones(2, dtype=bool))
    for name, value in first.items():
        assert torch.allclose(value, other.global_state[name], atol=1e-7)


def test_fedavg_of_identical_client_models_is_that_model():
    learner = _learner(PARTS)
    result = learner.local_update(0, np.array([0, 1, 3]))
    one = {k: v[1].clone() for k, v in result.states.items()}
    result.states = {
        k: v[1:2].repeat((3,) + (1,) * (v.dim() - 1)) for k, v in result.states.items()
    }
    learner.aggregate(result, np.ones(3, dtype=bool))
    for name, value in one.items():
        assert torch.allclose(learner.global_state[name], value)


def test_late_clients_are_left_out_of_the_aggregate():
    learner = _learner(PARTS)
    before = {k: v.clone() for k, v in learner.global_state.items()}
    result = learner.local_update(0, np.array([0, 1]))
    learner.aggregate(result, np.array([False, True]))
    for name, value in learner.global_state.items():
        assert torch.allclose(value, result.states[name][1])
    # GPFL's g^t: the aggregated change of the parameters, flattened in parameter order.
    change = learner.global_update()
    first = learner.global_state["1.weight"] - before["1.weight"]
    assert np.allclose(change[: first.numel()], first.flatten().numpy())
    learner.aggregate(result, np.array([False, False]))  # nothing arrived: no change
    assert not np.any(learner.global_update())


def test_update_vectors_only_when_asked():
    learner = _learner(PARTS)
    plain = learner.local_update(0, np.array([0, 1]))
    assert plain.update_vectors is None
    asked = learner.local_update(0, np.array([0, 1]), want=frozenset({"update_vector"}))
    assert asked.update_vectors is not None
    assert asked.update_vectors.shape == (2, learner.n_parameters)
    first = asked.states["1.weight"][0] - learner.global_state["1.weight"]
    assert np.allclose(asked.update_vectors[0, : first.numel()], first.flatten().numpy())
    # lr x SGD steps per client: the divisor that turns an update into a mean gradient.
    sgd = learner.sgd(0)
    steps = [sgd.epochs * -(-int(n) // sgd.batch_size) for n in learner.n_samples[:2]]
    assert asked.update_scale == pytest.approx(sgd.lr * np.array(steps, dtype=float))
    assert plain.update_scale is None
    assert wants_for({"local_loss", "update_vector", "poll_loss"}) == {"update_vector"}
    with pytest.raises(ValueError, match="unknown learning signals"):
        learner.local_update(0, np.array([0]), want=frozenset({"gradient_norm"}))


def test_client_losses_are_the_global_model_on_their_data():
    learner = _learner(PARTS)
    losses = learner.client_losses(np.array([3, 0, 2]))
    learner.model.load_state_dict(learner.global_state)
    learner.model.eval()
    with torch.no_grad():
        rows = torch.as_tensor(PARTS[3])
        direct = F.cross_entropy(
            learner.model(learner.data.x_train[rows]), learner.data.y_train[rows]
        )
    assert losses[0] == pytest.approx(float(direct), rel=1e-6)
    assert np.isnan(losses[2])  # no data


def test_client_test_losses_weight_class_losses_by_label_mix():
    learner = _learner(PARTS)
    losses = learner.client_test_losses()
    learner.model.eval()
    with torch.no_grad():
        per_sample = F.cross_entropy(
            learner.model(learner.data.x_test), learner.data.y_test, reduction="none"
        )
    class_loss = [float(per_sample[learner.data.y_test == c].mean()) for c in range(3)]
    counts = learner.label_counts[1]
    expected = float(np.dot(counts, class_loss) / counts.sum())
    assert losses[1] == pytest.approx(expected, rel=1e-6)
    assert np.isnan(losses[2])


def test_client_test_losses_use_own_test_rows_with_a_natural_split():
    parts = Partition(PARTS, test=[np.arange(0, 10), np.arange(10, 30), np.array([]), np.array([])])
    learner = _learner(parts)
    losses = learner.client_test_losses()
    learner.model.eval()
    with torch.no_grad():
        own = F.cross_entropy(learner.model(learner.data.x_test[10:30]), learner.data.y_test[10:30])
    assert losses[1] == pytest.approx(float(own), rel=1e-6)
    assert np.isnan(losses[3])


def test_evaluation_with_fairness_losses():
    learner = _learner(PARTS, fairness_loss="train")
    evaluation = learner.evaluate()
    assert evaluation.client_loss is not None and len(evaluation.client_loss) == 4
    assert evaluation.client_loss[1] == pytest.approx(learner.client_losses(np.array([1]))[0])
    assert np.isnan(evaluation.client_loss[2])  # no data


def test_learning_rate_schedule():
    """UCB-CS: eta = 0.05 halved at rounds 300 and 600; MAB-CS: 0.25 decayed by 0.99."""
    ucb = _learner(PARTS, lr=0.05, lr_milestones=[300, 600])
    assert [ucb.lr_at(r) for r in (0, 299, 300, 599, 600)] == pytest.approx(
        [0.05, 0.05, 0.025, 0.025, 0.0125]
    )
    mab = _learner(PARTS, lr=0.25, lr_decay=0.99)
    assert mab.lr_at(10) == pytest.approx(0.25 * 0.99**10)


def test_update_samples_follow_epochs_or_steps():
    # PARTS sizes (20, 25, 0, 15): E n_k with E = 5; tau min(b, n_k) with tau = 3, b = 16.
    assert _learner(PARTS, local_epochs=5).update_samples.tolist() == [100, 125, 0, 75]
    steps = _learner(PARTS, local_steps=3, batch_size=16)
    assert steps.update_samples.tolist() == [48, 48, 0, 45]


def test_label_counts_column():
    columns = _learner(PARTS).client_columns()
    assert columns["label_counts"].sum(axis=1).tolist() == [20, 25, 0, 15]


def test_evaluation_schedule_by_simulated_time():
    schedule = EvalSchedule(every_rounds=None, every_s=10.0, rounds=6)
    ends = [3.0, 7.0, 12.0, 13.0, 25.0, 26.0]
    assert [schedule.due(r, t) for r, t in enumerate(ends)] == [
        False,
        False,
        True,
        False,
        True,
        True,  # the last round
    ]
    by_rounds = EvalSchedule(every_rounds=2, rounds=None)
    assert [by_rounds.due(r, 0.0) for r in range(4)] == [False, True, False, True]


def test_null_learner_signals_are_nan():
    learner = NullLearner(np.array([3, 4]))
    assert np.isnan(learner.client_losses(np.array([1]))).all()
    assert np.isnan(learner.client_test_losses()).all()
    assert learner.update_samples.tolist() == [3, 4]
    assert learner.client_columns() == {}
    assert math.isnan(learner.evaluate().accuracy)
    result = learner.local_update(0, np.array([1]))
    assert result.n_samples.tolist() == [4] and np.isnan(result.loss_mean).all()
    assert result.states == {} and len(learner.local_update(0, []).clients) == 0
