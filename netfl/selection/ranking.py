"""Small ranking and sampling helpers shared by the bandit strategies."""

from __future__ import annotations

import numpy as np


def top_k(scores: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Positions of the ``k`` largest ``scores``, best first; ties broken uniformly at random.

    NaN ranks below every number (including ``-inf``); ``+inf`` ranks first, so "never
    tried" arms scored ``+inf`` are taken first, in random order among themselves.
    """
    scores = np.asarray(scores, dtype=float)
    k = max(0, min(int(k), len(scores)))
    nan = np.isnan(scores)
    # lexsort sorts by its last key first: NaN last, then descending score, then at random.
    order = np.lexsort((rng.random(len(scores)), -np.where(nan, 0.0, scores), nan))
    return order[:k]


def draw_by_size(
    candidates: np.ndarray, n_samples: np.ndarray, size: int, rng: np.random.Generator
) -> np.ndarray:
    """Draw ``size`` distinct candidates, successively with probability p_k ∝ data size.

    This is the candidate-set draw of power-of-choice (Cho et al. 2020, the pi_pow-d of
    Cho et al. 2020 Sec. II-B): ``numpy``'s sampling without replacement, which
    draws one client at a time with probability proportional to its remaining p_k. If
    every size is zero the draw is uniform.
    """
    candidates = np.asarray(candidates)
    size = max(0, min(int(size), len(candidates)))
    if size == 0:
        return candidates[:0].astype(np.int64)
    sizes = np.asarray(n_samples, dtype=float)
    p = sizes / sizes.sum() if sizes.sum() > 0 else None
    if p is not None and np.count_nonzero(p) < size:
        # numpy refuses; give zero-size clients a tiny chance so the draw can complete.
        p = (sizes + 1e-12) / (sizes + 1e-12).sum()
    return np.asarray(rng.choice(candidates, size=size, replace=False, p=p), dtype=np.int64)


def by_client(clients: np.ndarray, values: np.ndarray) -> dict[int, float]:
    """``{client id: value}`` for a strategy's ``scores()`` log."""
    ids = np.asarray(clients, dtype=np.int64).tolist()
    return dict(zip(ids, np.asarray(values, dtype=float).tolist(), strict=True))
