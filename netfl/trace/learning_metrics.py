"""Metrics of learning-aware selection: loss fairness and how widely clients are selected.

- :func:`loss_fairness`: Jain's index of the clients' losses under one global model,
  eq. (3) of 000_dfbad22c59539edc.txt (Table I of that paper reports it).
- :func:`distinct_selected`: how many clients were selected at least once, after each
  round (Fig. 4 of 001_67fd41493d1b216a.txt).
- :func:`selection_frequency_histogram`: how many clients were selected exactly f times
  (Fig. 5 of 001).

``selected`` arguments take the ``selected`` column of ``rounds.parquet`` (one list of
client ids per round, in round order).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


def jain_index(values: Sequence[float] | np.ndarray) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2), in [1/n, 1] for x >= 0.

    1 when all values are equal (all zero included); 1/n when one value holds
    everything. NaN for an empty input; values must be finite and non-negative.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return float("nan")
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise ValueError("Jain's index needs finite, non-negative values")
    squares = float((x**2).sum())
    if squares == 0:
        return 1.0
    return float(x.sum() ** 2 / (x.size * squares))


def loss_fairness(client_losses: Sequence[float] | np.ndarray) -> float:
    """J(w) of eq. (3) of 000: Jain's index of the clients' losses F_k(w).

    J = (1/K) [sum_k (F_k / sum_i F_i)^2]^{-1}, which equals (sum F)^2 / (K sum F^2).
    """
    return jain_index(client_losses)


def selection_counts(selected: Iterable[Sequence[int]], n_clients: int) -> np.ndarray:
    """How many rounds each client was selected in, shape ``(n_clients,)``."""
    counts = np.zeros(n_clients, dtype=np.int64)
    for ids in selected:
        np.add.at(counts, np.asarray(ids, dtype=np.int64), 1)
    return counts


def distinct_selected(selected: Iterable[Sequence[int]], n_clients: int) -> np.ndarray:
    """Number of distinct clients selected at least once, after each round (001 Fig. 4)."""
    ever = np.zeros(n_clients, dtype=bool)
    out = []
    for ids in selected:
        ever[np.asarray(ids, dtype=np.int64)] = True
        out.append(int(ever.sum()))
    return np.asarray(out, dtype=np.int64)


def selection_frequency_histogram(selected: Iterable[Sequence[int]], n_clients: int) -> np.ndarray:
    """``hist[f]`` = number of clients selected in exactly f rounds (001 Fig. 5)."""
    return np.bincount(selection_counts(selected, n_clients))
