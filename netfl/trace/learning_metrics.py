"""Participation metrics of learning-aware selection (Na et al. 2024 Figs. 4-5).

- :func:`distinct_selected`: how many clients were selected at least once, after each
  round (Fig. 4 of Na et al. 2024);
- :func:`selection_frequency_histogram`: how many clients were selected exactly f times
  (Fig. 5 of Na et al. 2024);
- :func:`client_loss_matrix`, :func:`loss_fairness` and :func:`weighted_loss`: the clients'
  losses F_k(w) of the global model at each evaluation (the ``client_loss`` timeline rows
  of ``learning.fairness_loss``), their Jain index J(w) (eq. (3) of
  Cho et al. 2020) and the global objective F(w) = sum_k p_k F_k(w) (eq. (1)).

``selected`` arguments take the ``selected`` column of ``rounds.parquet``
(one list of client ids per round, in round order).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from netfl.trace.metrics import jain_index, selection_counts


def distinct_selected(selected: Iterable[Sequence[int]], n_clients: int) -> np.ndarray:
    """Number of distinct clients selected at least once, after each round (Na et al. 2024 Fig.
    4)."""
    ever = np.zeros(n_clients, dtype=bool)
    out = []
    for ids in selected:
        ever[np.asarray(ids, dtype=np.int64)] = True
        out.append(int(ever.sum()))
    return np.asarray(out, dtype=np.int64)


def selection_frequency_histogram(selected: Iterable[Sequence[int]], n_clients: int) -> np.ndarray:
    """``hist[f]`` = number of clients selected in exactly f rounds (Na et al. 2024 Fig. 5)."""
    return np.bincount(selection_counts(selected, n_clients))


def client_loss_matrix(timeline: pd.DataFrame) -> pd.DataFrame:
    """Evaluated round x client matrix of the clients' losses F_k(w) of the global model.

    From the ``client_loss`` rows of ``timeline.parquet`` (written at each evaluation when
    ``learning.fairness_loss`` is set), indexed by round; empty when there are none.
    """
    rows = timeline[timeline["kind"].astype(str) == "client_loss"]
    matrix = rows.pivot_table(
        index="round", columns="client", values="loss", aggfunc="last", dropna=False
    )
    matrix.columns.name = "client"
    return matrix


def loss_fairness(matrix: pd.DataFrame) -> pd.Series:
    """Jain's index J(w) of the clients' losses at each evaluation (eq. (3) of Cho et al. 2020)."""
    values = [jain_index(row) for row in matrix.to_numpy(float)]
    return pd.Series(values, index=matrix.index, name="loss_jain", dtype=float)


def weighted_loss(matrix: pd.DataFrame, n_samples: Sequence[float] | np.ndarray) -> pd.Series:
    """The global objective F(w) = sum_k p_k F_k(w), p_k = D_k / sum_j D_j (eq. (1) of Cho et al.
    2020).

    ``n_samples`` is indexed by client id (``clients.parquet``'s ``n_samples``); a client
    whose loss is NaN (no data) is left out and the others' weights renormalised.
    """
    sizes = np.asarray(n_samples, dtype=float)[matrix.columns.to_numpy(int)]
    losses = matrix.to_numpy(float)
    weights = np.where(np.isnan(losses), 0.0, sizes)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.nansum(losses * weights, axis=1) / weights.sum(axis=1)
    return pd.Series(total, index=matrix.index, name="global_loss", dtype=float)
