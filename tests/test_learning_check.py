"""check_model and check_dataset: every registered model and embedded dataset passes, and
each broken rule is named (netfl/learning/check.py, docs/extending.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from netfl.config.learning import LearningConfig
from netfl.learning import MODELS
from netfl.learning.check import DatasetCheckError, ModelCheckError, check_dataset, check_model
from netfl.learning.datasets import from_numpy, load_digits, load_synthetic
from netfl.registry import models

#: An input shape for each registered model (its paper's dataset) and the class count.
MODEL_SHAPES = {
    "digits_mlp": ((1, 8, 8), 10),
    "logistic_regression": ((60,), 10),
    "mlp_64_30": ((1, 28, 28), 62),
    "fedcs_cifar_cnn": ((3, 32, 32), 10),
    "rbcsf_fmnist_cnn": ((1, 28, 28), 10),
    "rbcsf_cifar_cnn": ((3, 32, 32), 10),
    "gpfl_cifar_cnn": ((3, 32, 32), 10),
}


def test_every_registered_model_meets_the_contract():
    assert set(MODEL_SHAPES) == set(MODELS)  # a new model gets a shape here
    for name, (shape, n_classes) in MODEL_SHAPES.items():
        model = check_model(models().load(name), shape, n_classes)
        assert isinstance(model, nn.Module), name


@pytest.mark.parametrize("load", [load_digits, load_synthetic])
def test_embedded_datasets_meet_the_contract(load):
    dataset = check_dataset(load, LearningConfig(), n_clients=5)
    assert dataset.n_classes == 10


def _mlp(input_shape, n_classes):
    return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(input_shape), n_classes))


def test_a_good_builder_passes_and_the_global_torch_state_is_restored():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    check_model(_mlp, (1, 8, 8), 10)
    assert torch.equal(torch.rand(3), expected)


def _wrong_signature(channels, classes, width):
    return nn.Linear(3, 4)


def _not_a_module(input_shape, n_classes):
    return "a model"


def _wrong_width(input_shape, n_classes):
    return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(input_shape), n_classes + 1))


def _wrong_input(input_shape, n_classes):
    return nn.Linear(7, n_classes)


def _numpy_init(input_shape, n_classes):
    model = _mlp(input_shape, n_classes)
    rng = np.random.default_rng()  # unseeded: not torch's generator, which netfl seeds
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(rng.normal(size=tuple(p.shape)).astype(np.float32)))
    return model


def _float64(input_shape, n_classes):
    return _mlp(input_shape, n_classes).double()


def _dropout(input_shape, n_classes):
    return nn.Sequential(
        nn.Flatten(), nn.Dropout(0.5), nn.Linear(math.prod(input_shape), n_classes)
    )


class _Gated(nn.Module):
    """Picks a layer by the batch's mean: Python control flow on a tensor's value."""

    def __init__(self, n_inputs: int, n_classes: int) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(n_inputs, n_classes), nn.Linear(n_inputs, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.flatten(1)
        return self.a(x) if x.mean() > 0 else self.b(x)


def _gated(input_shape, n_classes):
    return _Gated(math.prod(input_shape), n_classes)


class _Positive(nn.Module):
    """Keeps the positive inputs only: a shape that depends on the data."""

    def __init__(self, n_classes: int) -> None:
        super().__init__()
        self.linear = nn.Linear(1, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kept = x.flatten(1)[x.flatten(1) > 0]
        return self.linear(kept.sum().view(1, 1)).expand(len(x), -1)


def _data_dependent_shape(input_shape, n_classes):
    return _Positive(n_classes)


def _frozen(input_shape, n_classes):
    model = _mlp(input_shape, n_classes)
    model.requires_grad_(False)
    return model


@pytest.mark.parametrize(
    ("build", "rule"),
    [
        (_wrong_signature, "must be callable as build(input_shape, n_classes)"),
        (_not_a_module, "returned a str; it must return a torch.nn.Module"),
        (_wrong_width, "must give one logit per class, (6, 10)"),
        (_wrong_input, "its forward pass on a float32 batch of shape (6, 1, 8, 8) raised"),
        (_numpy_init, "two builds under the same torch seed differ"),
        (_float64, "is torch.float64; netfl trains float32 parameters"),
        (_gated, "refuses data-dependent Python control flow and shapes"),
        (_data_dependent_shape, "refuses data-dependent Python control flow and shapes"),
        (_frozen, "has no trainable parameters"),
    ],
)
def test_each_broken_model_rule_is_named(build, rule):
    with pytest.raises(ModelCheckError) as info:
        check_model(build, (1, 8, 8), 10)
    assert rule in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("backend", ["sequential", "batched"])
def test_dropout_trains_under_both_backends(backend):
    check_model(_dropout, (1, 8, 8), 10, backend=backend)


def test_data_dependent_control_flow_trains_under_the_sequential_backend():
    check_model(_gated, (1, 8, 8), 10, backend="sequential")


def _arrays(n=40, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 1, 4, 4)).astype(np.float32), rng.integers(0, classes, n)


def _good(config, rng, n_clients):
    x, y = _arrays()
    order = rng.permutation(len(y))
    return from_numpy("good", (x[order[:30]], y[order[:30]]), (x[order[30:]], y[order[30:]]), 4)


def _random_split(config, rng, n_clients):
    x, y = _arrays()
    order = np.random.default_rng().permutation(len(y))  # not the rng netfl passes
    return from_numpy("bad", (x[order[:30]], y[order[:30]]), (x[order[30:]], y[order[30:]]), 4)


def _wrong_loader_signature(config):
    return None


def _tuple(config, rng, n_clients):
    return _arrays()


def _labels_too_large(config, rng, n_clients):
    x, y = _arrays()
    return from_numpy("bad", (x, y), (x, y), 3)


def _float64_inputs(config, rng, n_clients):
    data = _good(config, rng, n_clients)
    return data.__class__(**{**data.__dict__, "x_train": data.x_train.double()})


def _short_labels(config, rng, n_clients):
    data = _good(config, rng, n_clients)
    return data.__class__(**{**data.__dict__, "y_train": data.y_train[:-1]})


def _one_owner_array(config, rng, n_clients):
    data = _good(config, rng, n_clients)
    return data.__class__(**{**data.__dict__, "train_owner": np.zeros(30, dtype=np.int64)})


def _shape_mismatch(config, rng, n_clients):
    x, y = _arrays()
    return from_numpy("bad", (x, y), (x.reshape(len(x), -1), y), 4)


def _nan_inputs(config, rng, n_clients):
    x, y = _arrays()
    x[0, 0, 0, 0] = np.nan
    return from_numpy("bad", (x, y), (x, y), 4)


def _one_class(config, rng, n_clients):
    x, _ = _arrays()
    y = np.zeros(len(x), dtype=np.int64)
    return from_numpy("bad", (x, y), (x, y), 1)


def test_a_good_loader_passes():
    dataset = check_dataset(_good, LearningConfig(), n_clients=3)
    assert dataset.input_shape == (1, 4, 4)


@pytest.mark.parametrize(
    ("load", "rule"),
    [
        (_wrong_loader_signature, "must be callable as load(config, rng, n_clients)"),
        (_tuple, "returned a tuple; it must return a netfl.learning.datasets.Dataset"),
        (_labels_too_large, "y_train runs from 0 to 3, outside 0 .. n_classes - 1 = 2"),
        (_float64_inputs, "x_train is torch.float64; inputs must be float32"),
        (_short_labels, "must hold one label per sample"),
        (_one_owner_array, "give both train_owner and test_owner, or neither"),
        (_shape_mismatch, "train samples have shape (1, 4, 4) but test samples (16,)"),
        (_nan_inputs, "x_train has non-finite values"),
        (_one_class, "n_classes is 1; a classifier needs at least 2"),
        (_random_split, "two loads from generators of the same seed differ"),
    ],
)
def test_each_broken_dataset_rule_is_named(load, rule):
    with pytest.raises(DatasetCheckError) as info:
        check_dataset(load, LearningConfig(), n_clients=3)
    assert rule in str(info.value)
