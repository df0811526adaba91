"""k-means clustering of client contexts (NCCB's "Preparation" step, Cao et al. 2022 Algorithm
1)."""

from __future__ import annotations

import numpy as np


def kmeans(
    points: np.ndarray,
    n_clusters: int,
    rng: np.random.Generator,
    iterations: int = 100,
    restarts: int = 10,
) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd's k-means with k-means++ seeding (Arthur and Vassilvitskii 2007), best of
    ``restarts`` runs.

    Returns ``(labels, centroids)`` of the run with the smallest within-cluster sum of
    squares: one run can stop in a local optimum that merges two clusters and splits
    another, even when the clusters are far apart (scikit-learn's ``n_init`` does the same).
    ``n_clusters`` is capped at the number of distinct points, so no cluster is empty at
    the start; a cluster that empties during the iterations keeps its previous centroid.
    """
    points = np.asarray(points, dtype=float)
    n_clusters = max(1, min(int(n_clusters), len(np.unique(points, axis=0))))
    runs = [_lloyd(points, n_clusters, rng, iterations) for _ in range(max(1, restarts))]
    return min(runs, key=lambda run: _inertia(points, *run))


def _inertia(points: np.ndarray, labels: np.ndarray, centroids: np.ndarray) -> float:
    return float(((points - centroids[labels]) ** 2).sum())


def _lloyd(
    points: np.ndarray, n_clusters: int, rng: np.random.Generator, iterations: int
) -> tuple[np.ndarray, np.ndarray]:
    centroids = _plus_plus(points, n_clusters, rng)
    labels = nearest(points, centroids)
    for _ in range(iterations):
        for c in range(n_clusters):
            members = points[labels == c]
            if len(members):
                centroids[c] = members.mean(axis=0)
        updated = nearest(points, centroids)
        if np.array_equal(updated, labels):
            break
        labels = updated
    return labels, centroids


def nearest(points: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Index of the nearest centroid (Euclidean) of each point."""
    distances = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
    return np.argmin(distances, axis=1)


def _plus_plus(points: np.ndarray, n_clusters: int, rng: np.random.Generator) -> np.ndarray:
    centroids = [points[rng.integers(len(points))]]
    for _ in range(1, n_clusters):
        d2 = ((points[:, None, :] - np.array(centroids)[None]) ** 2).sum(axis=2).min(axis=1)
        centroids.append(points[rng.choice(len(points), p=d2 / d2.sum())])
    return np.array(centroids)
