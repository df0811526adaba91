"""Participation metrics of learning-aware selection (001_67fd41493d1b216a.txt Figs. 4-5).

- :func:`distinct_selected`: how many clients were selected at least once, after each
  round (Fig. 4 of 001);
- :func:`selection_frequency_histogram`: how many clients were selected exactly f times
  (Fig. 5 of 001).

Loss fairness, eq. (3) of 000_dfbad22c59539edc.txt, is
:func:`netfl.trace.metrics.jain_index` applied to the clients' losses F_k(w) under one
global model. ``selected`` arguments take the ``selected`` column of ``rounds.parquet``
(one list of client ids per round, in round order).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from netfl.trace.metrics import selection_counts


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
