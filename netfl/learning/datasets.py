"""Datasets held in memory as tensors; minibatches are drawn by index.

A dataset loader is a function ``(config, rng, n_clients) -> Dataset``. No loader touches
the network: data come from a package that ships them (digits), from a generator
(Synthetic), or from local files (:mod:`netfl.learning.files`: MNIST, Fashion-MNIST,
CIFAR-10, FEMNIST).

Federated datasets (Synthetic, FEMNIST) also say which device or writer owns each sample
(``train_owner``/``test_owner``), which the ``natural`` partition uses.
"""

from __future__ import annotations

import gzip
import importlib.util
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from netfl.config.learning import LearningConfig, SyntheticParams
from netfl.errors import DatasetError


@dataclass(frozen=True)
class Dataset:
    """Train and test tensors; ``x`` keeps the natural shape (N, C, H, W) or (N, D)."""

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    n_classes: int
    train_owner: np.ndarray | None = None
    test_owner: np.ndarray | None = None

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])

    def to(self, device: torch.device | str) -> Dataset:
        return replace(
            self,
            x_train=self.x_train.to(device),
            y_train=self.y_train.to(device),
            x_test=self.x_test.to(device),
            y_test=self.y_test.to(device),
        )


def from_numpy(
    name: str,
    train: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
    n_classes: int,
    owners: tuple[np.ndarray, np.ndarray] | None = None,
) -> Dataset:
    """A Dataset from float32 inputs and integer labels."""
    return Dataset(
        name,
        torch.from_numpy(np.ascontiguousarray(train[0], dtype=np.float32)),
        torch.from_numpy(np.asarray(train[1], dtype=np.int64)),
        torch.from_numpy(np.ascontiguousarray(test[0], dtype=np.float32)),
        torch.from_numpy(np.asarray(test[1], dtype=np.int64)),
        n_classes,
        None if owners is None else np.asarray(owners[0], dtype=np.int64),
        None if owners is None else np.asarray(owners[1], dtype=np.int64),
    )


def stratified_split(
    labels: np.ndarray, test_fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Indices of a train/test split that keeps each class's (or owner's) share."""
    train, test = [], []
    for label in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == label))
        n_test = round(len(idx) * test_fraction)
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def load_digits(config: LearningConfig, rng: np.random.Generator, n_clients: int) -> Dataset:
    """scikit-learn's bundled digits: 1,797 8x8 images in 16 grey levels, 10 classes.

    Pixels are scaled to [0, 1]; ``test_fraction`` of each class is held out. The images
    are read from the file scikit-learn ships (:func:`digits_arrays`), the values its
    ``load_digits`` gives, without importing scikit-learn.
    """
    images, labels = digits_arrays()
    x = images[:, None, :, :] / np.float32(16.0)
    train, test = stratified_split(labels, config.test_fraction, rng)
    return from_numpy("digits", (x[train], labels[train]), (x[test], labels[test]), n_classes=10)


#: Where scikit-learn keeps the digits, in its package folder.
DIGITS_FILE = ("datasets", "data", "digits.csv.gz")


def digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """The digits' images (1797, 8, 8) float32 and labels int64, read from
    ``sklearn/datasets/data/digits.csv.gz`` (one image a line: 64 grey levels, then the
    label), found through the import system without importing scikit-learn, whose import
    (scipy.stats among it) cost seconds of a run's start-up."""
    spec = importlib.util.find_spec("sklearn")
    folders = [] if spec is None else list(spec.submodule_search_locations or [])
    path = next((Path(f).joinpath(*DIGITS_FILE) for f in folders), None)
    if path is None or not path.is_file():
        raise DatasetError(
            "the digits dataset is the file datasets/data/digits.csv.gz that scikit-learn"
            " ships, and no installed scikit-learn has it: pip install scikit-learn"
        )
    with gzip.open(path, "rt", encoding="ascii") as text:
        table = np.loadtxt(text, delimiter=",", dtype=np.float32)
    return table[:, :-1].reshape(-1, 8, 8), table[:, -1].astype(np.int64)


def synthetic_device(
    params: SyntheticParams, n_samples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One device's samples of Synthetic(alpha, beta) (FedProx, Li et al. 2020, Sec. 5.1).

    u_k ~ N(0, alpha), B_k ~ N(0, beta); W_k, b_k ~ N(u_k, 1); v_k ~ N(B_k, 1) per
    feature; x ~ N(v_k, Sigma) with Sigma = diag(j^-1.2); y = argmax(softmax(W_k x + b_k)).
    FedProx writes N(0, alpha) but its generator uses alpha and beta as standard
    deviations; netfl follows the generator (the same for Synthetic(1,1) of UCB-CS).
    """
    d, c = params.n_features, params.n_classes
    u = rng.normal(0.0, params.alpha)
    b_mean = rng.normal(0.0, params.beta)
    weights = rng.normal(u, 1.0, (d, c))
    bias = rng.normal(u, 1.0, c)
    v = rng.normal(b_mean, 1.0, d)
    scale = np.arange(1, d + 1, dtype=float) ** -0.6  # sqrt of the diagonal covariance
    x = v + rng.standard_normal((n_samples, d)) * scale
    y = np.argmax(x @ weights + bias, axis=1)  # softmax is monotone
    return x.astype(np.float32), y.astype(np.int64)


def load_synthetic(config: LearningConfig, rng: np.random.Generator, n_clients: int) -> Dataset:
    """Synthetic(alpha, beta): one generated device per client, generated from the seed.

    Device k has floor(lognormal(size_log_mean, size_log_sigma)) + size_offset samples
    (FedProx's generator; UCB-CS's "power law" sizes); ``test_fraction`` of each device's
    samples are its test data. Use ``partition: {kind: natural}`` to keep devices apart.
    """
    params = SyntheticParams.model_validate(config.dataset_params)
    sizes = (
        rng.lognormal(params.size_log_mean, params.size_log_sigma, n_clients).astype(np.int64)
        + params.size_offset
    )
    parts = [synthetic_device(params, int(n), rng) for n in sizes]
    x = np.concatenate([p[0] for p in parts]) if parts else np.zeros((0, params.n_features))
    y = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    owner = np.repeat(np.arange(n_clients), sizes)
    train, test = stratified_split(owner, config.test_fraction, rng)
    return from_numpy(
        "synthetic",
        (x[train], y[train]),
        (x[test], y[test]),
        n_classes=params.n_classes,
        owners=(owner[train], owner[test]),
    )
