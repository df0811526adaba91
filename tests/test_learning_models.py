"""The papers' models: parameter counts from their layer lists, and what they compute."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from netfl.learning import MODELS
from netfl.learning.models import count_parameters
from netfl.registry import models


def _conv(c_in: int, c_out: int, k: int) -> int:
    return c_in * c_out * k * k + c_out


def _fc(n_in: int, n_out: int) -> int:
    return n_in * n_out + n_out


# Expected counts written out layer by layer from each paper's description.
FEDCS = (
    _conv(3, 32, 3)
    + _conv(32, 32, 3)
    + _conv(32, 64, 3)
    + _conv(64, 64, 3)
    + _conv(64, 128, 3)
    + _conv(128, 128, 3)
    + 2 * (32 + 32 + 64 + 64 + 128 + 128)  # batch-norm scale and shift
    + _fc(128 * 8 * 8, 512)
    + _fc(512, 192)
    + _fc(192, 10)
)
CASES = [
    # name, input shape, classes, expected parameters
    ("fedcs_cifar_cnn", (3, 32, 32), 10, FEDCS),
    (
        "rbcsf_fmnist_cnn",
        (1, 28, 28),
        10,
        _conv(1, 20, 5) + _conv(20, 50, 5) + _fc(50 * 4 * 4, 500) + _fc(500, 10),
    ),
    (
        "rbcsf_cifar_cnn",
        (3, 32, 32),
        10,
        _conv(3, 64, 5) + _conv(64, 64, 5) + _fc(64 * 8 * 8, 384) + _fc(384, 192) + _fc(192, 10),
    ),
    (
        "gpfl_cifar_cnn",
        (3, 32, 32),
        10,
        _conv(3, 32, 3) + _conv(32, 64, 3) + _conv(64, 64, 3) + _fc(64 * 4 * 4, 64) + _fc(64, 10),
    ),
    ("mlp_64_30", (1, 28, 28), 62, _fc(784, 64) + _fc(64, 30) + _fc(30, 62)),
    ("mlp_64_30", (1, 28, 28), 10, _fc(784, 64) + _fc(64, 30) + _fc(30, 10)),
    ("logistic_regression", (60,), 10, _fc(60, 10)),
    ("digits_mlp", (1, 8, 8), 10, _fc(64, 64) + _fc(64, 10)),
]


@pytest.mark.parametrize(("name", "shape", "classes", "expected"), CASES)
def test_parameter_counts_follow_the_papers(name, shape, classes, expected):
    model = models().load(name)(shape, classes)
    assert count_parameters(model) == expected
    logits = model(torch.zeros(2, *shape))
    assert logits.shape == (2, classes)


def test_fedcs_cnn_matches_the_stated_size():
    """002 Sec. IV: "approximately 4.6 million model parameters (M = 18.3 megabytes)"."""
    assert FEDCS == 4_583_146
    assert round(FEDCS / 1e6, 1) == 4.6
    assert round(FEDCS * 4 / 1e6, 1) == 18.3


def test_fedcs_cnn_normalises_after_the_activation():
    """002: each convolution "activated using ReLU and then batch normalized"."""
    layers = list(models().load("fedcs_cifar_cnn")((3, 32, 32), 10))
    for index, layer in enumerate(layers):
        if isinstance(layer, nn.Conv2d):
            assert isinstance(layers[index + 1], nn.ReLU)
            assert isinstance(layers[index + 2], nn.BatchNorm2d)


def test_models_refuse_the_wrong_input_kind():
    with pytest.raises(ValueError, match="takes images"):
        models().load("gpfl_cifar_cnn")((60,), 10)


def test_every_registered_model_builds():
    # Every registered model has its parameter count pinned in CASES.
    assert set(MODELS) == {case[0] for case in CASES}
    for name in MODELS:
        shape = (60,) if name == "logistic_regression" else (3, 32, 32)
        if name == "rbcsf_fmnist_cnn":
            shape = (1, 28, 28)
        assert count_parameters(models().load(name)(shape, 10)) > 0
