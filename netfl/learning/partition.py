"""Splitting the training set among devices: each device gets an index array.

Kinds (``learning.partition.kind``):

- ``iid``: sizes from ``devices.groups[].n_samples`` drawn uniformly without replacement
  from the whole training set (devices may share samples, as in MAB-CS
  Yoshida et al. 2020 Sec. IV), or the training set dealt out evenly;
- ``dirichlet``: label skew of Hsu et al. (2019), cited by UCB-CS, RBCS-F and GPFL: device
  k's label mix q_k ~ Dir(alpha p), p the training set's label distribution; sizes from
  n_samples or even; samples disjoint. (RBCS-F writes Dir(gamma_1 * ones), i.e. alpha =
  n_classes * gamma_1 on balanced classes. GPFL's Dir, Na et al. 2024 Sec. V-A, draws q_k the same
  way but sizes the devices by a quadratic program, min ||x|| s.t. Q x = label totals,
  which netfl does not do: its sizes stay n_samples or even.)
- ``shards``: McMahan et al.'s pathological split used by GPFL (1SPC / 2SPC,
  Na et al. 2024 Sec. V-A): sort by label, cut into shards_per_client x K
  equal shards, give each device shards_per_client of them at random;
- ``power_law``: IID labels, sizes min_samples + Pareto(exponent)-weighted shares of the rest;
- ``natural``: the dataset's own owners (Synthetic devices, FEMNIST writers);
- ``clustered``: the devices fall into ``clusters`` groups and every device of a group
  holds samples of the same ``labels_per_cluster`` labels (label skew by cluster: the
  population NCCB's context-aware selection, Cao et al. 2022, is built for).

``shards``, ``power_law`` and ``natural`` set the sizes themselves (``n_samples`` is refused
when validating); the others take them from ``n_samples`` or deal the set out evenly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netfl.config.learning import PartitionConfig


class PartitionError(ValueError):
    """The partition cannot be made with this dataset and population."""


@dataclass(frozen=True)
class Partition:
    """Per device: training rows, test rows where the dataset has per-owner test data, and
    the device's cluster where the partition makes clusters (``clustered``)."""

    train: list[np.ndarray]
    test: list[np.ndarray] | None = None
    cluster: np.ndarray | None = None

    @property
    def sizes(self) -> np.ndarray:
        return np.array([len(rows) for rows in self.train], dtype=np.int64)


def label_counts(labels: np.ndarray, parts: list[np.ndarray], n_classes: int) -> np.ndarray:
    """Per-device label histogram, shape (K, n_classes)."""
    counts = np.zeros((len(parts), n_classes), dtype=np.int64)
    for k, rows in enumerate(parts):
        counts[k] = np.bincount(labels[rows], minlength=n_classes)[:n_classes]
    return counts


def _even_sizes(n_total: int, n_clients: int) -> np.ndarray:
    return np.array([len(p) for p in np.array_split(np.arange(n_total), n_clients)])


def iid(
    n_train: int, n_clients: int, sizes: np.ndarray | None, rng: np.random.Generator
) -> list[np.ndarray]:
    if sizes is None:
        order = rng.permutation(n_train)
        return [np.sort(part) for part in np.array_split(order, n_clients)]
    if np.any(sizes > n_train):
        raise PartitionError(
            f"a device asks for {int(sizes.max())} samples but the training set has {n_train}"
        )
    return [np.sort(rng.choice(n_train, size=int(s), replace=False)) for s in sizes]


def dirichlet(
    labels: np.ndarray, sizes: np.ndarray, alpha: float, rng: np.random.Generator
) -> list[np.ndarray]:
    """Hsu et al. (2019): q_k ~ Dir(alpha p); device k's n_k labels ~ Multinomial(n_k, q_k).

    Samples are disjoint; when a class runs out, the rest of that device's draw is
    spread over the classes left, in proportion to q_k (uniformly if q_k has none left).
    """
    if sizes.sum() > len(labels):
        raise PartitionError(
            f"dirichlet gives disjoint samples, but the devices ask for {int(sizes.sum())}"
            f" and the training set has {len(labels)}"
        )
    classes, counts = np.unique(labels, return_counts=True)
    prior = counts / counts.sum()
    pools = [rng.permutation(np.flatnonzero(labels == c)) for c in classes]
    used = np.zeros(len(classes), dtype=np.int64)
    parts = []
    for n in sizes:
        q = rng.dirichlet(alpha * prior)
        take = np.zeros(len(classes), dtype=np.int64)
        need = int(n)
        while need > 0:
            left = counts - used - take
            weights = np.where(left > 0, q, 0.0)
            if weights.sum() <= 0:
                weights = (left > 0).astype(float)
            draw = np.minimum(rng.multinomial(need, weights / weights.sum()), left)
            take += draw
            need -= int(draw.sum())
        rows = [pools[c][used[c] : used[c] + take[c]] for c in range(len(classes))]
        used += take
        parts.append(np.sort(np.concatenate(rows)))
    return parts


def shards(
    labels: np.ndarray, n_clients: int, per_client: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """GPFL's 1SPC / 2SPC: label-sorted equal shards dealt out at random."""
    n_shards = n_clients * per_client
    size = len(labels) // n_shards
    if size == 0:
        raise PartitionError(
            f"{n_shards} shards ({per_client} per device) need at least {n_shards} training"
            f" samples; the training set has {len(labels)}"
        )
    shuffled = rng.permutation(len(labels))
    order = shuffled[np.argsort(labels[shuffled], kind="stable")]
    pieces = order[: n_shards * size].reshape(n_shards, size)
    dealt = rng.permutation(n_shards).reshape(n_clients, per_client)
    return [np.sort(pieces[row].ravel()) for row in dealt]


def power_law(
    n_train: int, n_clients: int, exponent: float, min_samples: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """IID samples; device k: min_samples + a share of the rest proportional to w_k ~ Pareto(a)."""
    rest = n_train - n_clients * min_samples
    if rest < 0:
        raise PartitionError(
            f"{n_clients} devices x min_samples {min_samples} is more than the"
            f" {n_train} training samples"
        )
    weights = rng.pareto(exponent, n_clients) + 1.0  # Pareto with x_m = 1
    sizes = min_samples + np.floor(rest * weights / weights.sum()).astype(np.int64)
    order = rng.permutation(n_train)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    return [np.sort(order[bounds[k] : bounds[k + 1]]) for k in range(n_clients)]


def natural(
    owners: np.ndarray | None,
    test_owners: np.ndarray | None,
    n_clients: int,
    rng: np.random.Generator,
) -> Partition:
    """One owner per device: owner k for device k if there are exactly K, else K at random."""
    if owners is None:
        raise PartitionError(
            "this dataset has no natural split (only synthetic and femnist have one);"
            " use iid, dirichlet, shards or power_law"
        )
    n_owners = int(owners.max()) + 1 if len(owners) else 0
    if n_clients > n_owners:
        raise PartitionError(f"{n_clients} devices but the dataset has only {n_owners} owners")
    chosen = (
        np.arange(n_clients)
        if n_owners == n_clients
        else np.sort(rng.choice(n_owners, n_clients, replace=False))
    )
    train = [np.flatnonzero(owners == owner) for owner in chosen]
    test = None if test_owners is None else [np.flatnonzero(test_owners == o) for o in chosen]
    return Partition(train, test)


def cluster_label_sets(
    classes: np.ndarray, n_clusters: int, labels_per_cluster: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """The label set of each cluster: consecutive runs of a random order of the classes.

    Cluster c holds ``order[(c L + j) mod n_classes]`` for j < L: the sets are disjoint
    when C L <= n_classes and overlap (wrapping around) otherwise.
    """
    if labels_per_cluster > len(classes):
        raise PartitionError(
            f"labels_per_cluster = {labels_per_cluster} but the training set has only"
            f" {len(classes)} classes"
        )
    order = rng.permutation(classes)
    steps = np.arange(labels_per_cluster)
    return [
        np.sort(order[(c * labels_per_cluster + steps) % len(classes)]) for c in range(n_clusters)
    ]


def clustered(
    labels: np.ndarray,
    n_clients: int,
    n_clusters: int,
    labels_per_cluster: int,
    sizes: np.ndarray | None,
    rng: np.random.Generator,
) -> Partition:
    """Devices in clusters that share a label set; samples disjoint.

    Devices join the clusters at random, in balanced numbers (sizes differ by at most
    one). Each class's samples are split evenly among the clusters that hold it, and a
    cluster's pool is shuffled and dealt out to its devices: evenly, or ``sizes[k]``
    samples to device k (an error if the pool is too small).
    """
    if n_clusters > n_clients:
        raise PartitionError(f"clusters = {n_clusters} is more than the {n_clients} devices")
    label_sets = cluster_label_sets(np.unique(labels), n_clusters, labels_per_cluster, rng)
    pieces: list[list[np.ndarray]] = [[] for _ in range(n_clusters)]
    for label in np.unique(labels):
        holders = [c for c, held in enumerate(label_sets) if label in held]
        rows = rng.permutation(np.flatnonzero(labels == label))
        for c, part in zip(holders, np.array_split(rows, max(len(holders), 1)), strict=False):
            pieces[c].append(part)
    member = rng.permutation(n_clients) % n_clusters
    parts: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * n_clients
    for c in range(n_clusters):
        pool = rng.permutation(np.concatenate(pieces[c]))
        clients = np.flatnonzero(member == c)
        if sizes is None:
            chunks = np.array_split(pool, len(clients))
        else:
            wanted = np.asarray(sizes, dtype=np.int64)[clients]
            if wanted.sum() > len(pool):
                raise PartitionError(
                    f"the {len(clients)} devices of cluster {c} ask for {int(wanted.sum())}"
                    f" samples but its labels {label_sets[c].tolist()} have {len(pool)}"
                )
            chunks = np.split(pool, np.cumsum(wanted))[:-1]
        for k, chunk in zip(clients, chunks, strict=True):
            parts[k] = np.sort(chunk)
    return Partition(parts, cluster=member.astype(np.int64))


def partition(
    config: PartitionConfig,
    labels: np.ndarray,
    n_clients: int,
    sizes: np.ndarray | None,
    rng: np.random.Generator,
    owners: tuple[np.ndarray | None, np.ndarray | None] = (None, None),
) -> Partition:
    """Split the training set (labels of length N) among ``n_clients`` devices.

    ``sizes`` are the devices' requested samples (``devices.groups[].n_samples``) or None;
    ``owners`` the dataset's per-sample train and test owners, for ``natural``.
    """
    n_train = len(labels)
    kind = config.kind
    if kind == "iid":
        return Partition(iid(n_train, n_clients, sizes, rng))
    if kind == "dirichlet":
        assert config.alpha is not None  # enforced by PartitionConfig
        wanted = sizes if sizes is not None else _even_sizes(n_train, n_clients)
        return Partition(dirichlet(labels, wanted, config.alpha, rng))
    if kind == "shards":
        assert config.shards_per_client is not None
        return Partition(shards(labels, n_clients, config.shards_per_client, rng))
    if kind == "power_law":
        assert config.exponent is not None
        minimum = config.min_samples or 1
        return Partition(power_law(n_train, n_clients, config.exponent, minimum, rng))
    if kind == "natural":
        return natural(owners[0], owners[1], n_clients, rng)
    if kind == "clustered":
        assert config.clusters is not None and config.labels_per_cluster is not None
        return clustered(labels, n_clients, config.clusters, config.labels_per_cluster, sizes, rng)
    raise ValueError(f"unknown partition kind {kind!r}")  # pragma: no cover
