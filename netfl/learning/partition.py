"""Splitting the training set among devices: each device gets an index array."""

from __future__ import annotations

import numpy as np

from netfl.config.learning import PartitionConfig


def partition(
    config: PartitionConfig,
    labels: np.ndarray,
    n_clients: int,
    sizes: np.ndarray | None,
    rng: np.random.Generator,
) -> list[np.ndarray]:
    """Return one sorted index array per device.

    Parameters
    ----------
    config
        The scenario's ``learning.partition``.
    labels
        Labels of the training set (length N).
    n_clients
        Number of devices.
    sizes
        Requested samples per device (``devices.groups[].n_samples``), or None.
    """
    n_train = len(labels)
    if config.kind == "iid":
        if sizes is None:
            order = rng.permutation(n_train)
            return [np.sort(part) for part in np.array_split(order, n_clients)]
        if np.any(sizes > n_train):
            raise ValueError(
                f"a device asks for {int(sizes.max())} samples but the training set has {n_train}"
            )
        return [np.sort(rng.choice(n_train, size=int(s), replace=False)) for s in sizes]
    raise ValueError(f"unknown partition kind {config.kind!r}")  # pragma: no cover
