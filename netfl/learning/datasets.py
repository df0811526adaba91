"""Datasets held in memory as tensors; minibatches are drawn by index.

A dataset loader is a function ``(config, rng) -> Dataset``. No loader touches the network:
data come from a package that ships them, from a generator, or from local files.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from netfl.config.learning import LearningConfig


@dataclass(frozen=True)
class Dataset:
    """Train and test tensors; ``x`` keeps the natural shape (N, C, H, W) or (N, D)."""

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    n_classes: int

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])

    def to(self, device: torch.device | str) -> Dataset:
        return Dataset(
            self.name,
            self.x_train.to(device),
            self.y_train.to(device),
            self.x_test.to(device),
            self.y_test.to(device),
            self.n_classes,
        )


def stratified_split(
    labels: np.ndarray, test_fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Indices of a train/test split that keeps each class's share."""
    train, test = [], []
    for label in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == label))
        n_test = round(len(idx) * test_fraction)
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def load_digits(config: LearningConfig, rng: np.random.Generator) -> Dataset:
    """scikit-learn's bundled digits: 1,797 8x8 images in 16 grey levels, 10 classes.

    Pixels are scaled to [0, 1]; ``test_fraction`` of each class is held out.
    """
    from sklearn.datasets import load_digits as sk_load_digits

    bunch = sk_load_digits()
    x = np.asarray(bunch.images, dtype=np.float32)[:, None, :, :] / 16.0
    y = np.asarray(bunch.target, dtype=np.int64)
    train, test = stratified_split(y, config.test_fraction, rng)
    return Dataset(
        "digits",
        torch.from_numpy(x[train]),
        torch.from_numpy(y[train]),
        torch.from_numpy(x[test]),
        torch.from_numpy(y[test]),
        n_classes=10,
    )
