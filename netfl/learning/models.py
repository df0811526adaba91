"""The papers' networks, built by name: ``model(input_shape, n_classes) -> nn.Module``."""

from __future__ import annotations

import math

from torch import nn


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def digits_mlp(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """A small MLP for 8x8 digits: flatten -> 64 ReLU -> n_classes."""
    n_inputs = math.prod(input_shape)
    return nn.Sequential(nn.Flatten(), nn.Linear(n_inputs, 64), nn.ReLU(), nn.Linear(64, n_classes))
