"""Partitions: each kind against its definition, plus invariants as property tests."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.config.learning import PartitionConfig
from netfl.learning.partition import PartitionError, label_counts, partition


def _labels(per_class: int, n_classes: int = 10) -> np.ndarray:
    return np.repeat(np.arange(n_classes), per_class)


@pytest.mark.parametrize("alpha", [0.1, 1.0, 10.0])
def test_dirichlet_label_mix_matches_alpha_on_average(alpha):
    """Hsu et al.: q_k ~ Dir(alpha p). A client's label share p_kc then has mean p_c and
    variance p(1-p)/(alpha+1) * (1 + alpha/n) (Dirichlet spread plus multinomial draw)."""
    labels = _labels(10_000)
    n, k = 50, 1000
    parts = partition(
        PartitionConfig(kind="dirichlet", alpha=alpha),
        labels,
        k,
        np.full(k, n),
        np.random.default_rng(7),
    )
    shares = label_counts(labels, parts.train, 10) / n
    p = 0.1
    expected_var = p * (1 - p) / (alpha + 1) * (1 + alpha / n)
    assert np.allclose(shares.mean(axis=0), p, atol=0.02)
    assert shares.var() == pytest.approx(expected_var, rel=0.15)


def test_dirichlet_takes_sizes_and_stays_disjoint_when_classes_run_out():
    labels = _labels(20, n_classes=5)
    sizes = np.array([30, 30, 40])  # all 100 samples: some classes must run out
    parts = partition(
        PartitionConfig(kind="dirichlet", alpha=0.05), labels, 3, sizes, np.random.default_rng(1)
    )
    assert parts.sizes.tolist() == [30, 30, 40]
    assert sorted(np.concatenate(parts.train).tolist()) == list(range(100))


def test_dirichlet_refuses_more_samples_than_exist():
    with pytest.raises(PartitionError, match="disjoint"):
        partition(
            PartitionConfig(kind="dirichlet", alpha=1.0),
            _labels(10),
            2,
            np.array([60, 60]),
            np.random.default_rng(0),
        )


@pytest.mark.parametrize(("per_client", "max_labels"), [(1, 1), (2, 2)])
def test_shards_give_one_or_two_labels_per_client(per_client, max_labels):
    """GPFL 1SPC / 2SPC: label-sorted equal shards; each client holds that many labels."""
    labels = _labels(100)
    parts = partition(
        PartitionConfig(kind="shards", shards_per_client=per_client),
        labels,
        50 // per_client * 2 if per_client == 2 else 10,
        None,
        np.random.default_rng(3),
    )
    counts = label_counts(labels, parts.train, 10)
    assert ((counts > 0).sum(axis=1) <= max_labels).all()
    assert len(set(parts.sizes.tolist())) == 1  # balanced
    assert len(np.unique(np.concatenate(parts.train))) == parts.sizes.sum()


def test_power_law_sizes_have_the_pareto_exponent():
    """Sizes - min_samples are proportional to w ~ Pareto(a); the MLE of a on them
    (scale-free: a = n / sum log(w / w_min)) recovers the exponent."""
    n_clients, exponent = 2000, 2.0
    labels = np.zeros(4_000_000, dtype=np.int64)
    parts = partition(
        PartitionConfig(kind="power_law", exponent=exponent, min_samples=5),
        labels,
        n_clients,
        None,
        np.random.default_rng(11),
    )
    extra = parts.sizes - 5
    estimate = n_clients / np.log(extra / extra.min()).sum()
    assert estimate == pytest.approx(exponent, rel=0.08)
    assert parts.sizes.min() >= 5 and parts.sizes.sum() <= len(labels)


def test_natural_partition_keeps_owners_and_their_test_rows():
    owners = (np.array([0, 0, 1, 2, 2, 2, 3]), np.array([3, 1, 0]))

    def split(n_clients: int):
        labels = np.zeros(7, dtype=np.int64)
        config = PartitionConfig(kind="natural")
        return partition(config, labels, n_clients, None, np.random.default_rng(0), owners)

    parts = split(4)
    assert [p.tolist() for p in parts.train] == [[0, 1], [2], [3, 4, 5], [6]]
    assert parts.test is not None
    assert [t.tolist() for t in parts.test] == [[2], [1], [], [0]]
    fewer = split(2)  # two of the four owners, at random
    assert len({tuple(p) for p in fewer.train}) == 2


def test_natural_partition_needs_owners():
    with pytest.raises(PartitionError, match="no natural split"):
        partition(PartitionConfig(kind="natural"), _labels(5), 2, None, np.random.default_rng(0))


_KINDS = st.sampled_from(
    [
        PartitionConfig(kind="iid"),
        PartitionConfig(kind="dirichlet", alpha=0.3),
        PartitionConfig(kind="shards", shards_per_client=2),
        PartitionConfig(kind="power_law", exponent=1.5, min_samples=2),
    ]
)


@settings(max_examples=40, deadline=None)
@given(config=_KINDS, n_clients=st.integers(1, 12), seed=st.integers(0, 2**31))
def test_partitions_are_disjoint_valid_and_reproducible(config, n_clients, seed):
    labels = np.random.default_rng(seed).integers(0, 6, 240)
    parts = partition(config, labels, n_clients, None, np.random.default_rng(seed))
    rows = np.concatenate(parts.train)
    assert len(parts.train) == n_clients
    assert rows.min() >= 0 and rows.max() < len(labels)
    assert len(np.unique(rows)) == len(rows)  # no sample twice
    assert all(np.all(np.diff(p) > 0) for p in parts.train)  # sorted
    again = partition(config, labels, n_clients, None, np.random.default_rng(seed))
    assert all(np.array_equal(a, b) for a, b in zip(parts.train, again.train, strict=True))


def _clustered(clusters, per_cluster, labels, n_clients, sizes=None, seed=0):
    config = PartitionConfig(kind="clustered", clusters=clusters, labels_per_cluster=per_cluster)
    return partition(config, labels, n_clients, sizes, np.random.default_rng(seed))


def test_clustered_clients_share_their_cluster_label_set():
    labels = _labels(60)
    parts = _clustered(5, 2, labels, 20)
    supports = {tuple(np.unique(labels[rows])) for rows in parts.train}
    # 5 clusters x 2 labels = the 10 classes: 5 disjoint pairs, 4 devices (of 30 samples
    # from a 120-sample pool) on each.
    assert len(supports) == 5 and all(len(s) == 2 for s in supports)
    assert sorted(label for s in supports for label in s) == list(range(10))
    per_support = [sum(tuple(np.unique(labels[r])) == s for r in parts.train) for s in supports]
    assert per_support == [4] * 5
    assert parts.cluster is not None and np.bincount(parts.cluster).tolist() == [4] * 5
    for c in range(5):  # the recorded cluster is the one whose labels the device holds
        held = {
            tuple(np.unique(labels[parts.train[k]])) for k in np.flatnonzero(parts.cluster == c)
        }
        assert len(held) == 1
    assert sorted(np.concatenate(parts.train).tolist()) == list(range(600))


def test_clustered_label_sets_wrap_around_and_share_a_class_between_clusters():
    labels = _labels(40, n_classes=5)
    parts = _clustered(3, 2, labels, 6)  # 6 labels over 5 classes: one class in two sets
    counts = label_counts(labels, parts.train, 5)
    holders = (counts > 0).sum(axis=0)  # devices holding each class
    assert sorted(holders.tolist()) == [2, 2, 2, 2, 4]
    shared = int(np.argmax(holders))
    assert counts[:, shared].sum() == 40  # split between the two clusters, none lost


def test_clustered_takes_device_sizes_and_refuses_too_many():
    labels = _labels(50)
    sizes = np.array([10, 20, 30, 40])
    parts = _clustered(2, 5, labels, 4, sizes)
    assert parts.sizes.tolist() == sizes.tolist()
    with pytest.raises(PartitionError, match=r"cluster \d+ ask for"):
        _clustered(2, 1, labels, 4, np.full(4, 30))  # a cluster's one label has 50
    with pytest.raises(PartitionError, match="more than the 4 devices"):
        _clustered(5, 1, labels, 4)
    with pytest.raises(PartitionError, match="only 10 classes"):
        _clustered(2, 11, labels, 4)


def test_clustered_needs_its_two_parameters():
    with pytest.raises(ValueError, match="kind clustered needs clusters"):
        PartitionConfig(kind="clustered", labels_per_cluster=2)
    with pytest.raises(ValueError, match="labels_per_cluster applies to kind clustered"):
        PartitionConfig(kind="iid", labels_per_cluster=2)


@settings(max_examples=30, deadline=None)
@given(
    clusters=st.integers(1, 4),
    per_cluster=st.integers(1, 6),
    extra=st.integers(0, 8),
    seed=st.integers(0, 2**31),
)
def test_clustered_is_disjoint_and_one_label_set_per_cluster(clusters, per_cluster, extra, seed):
    labels = np.random.default_rng(seed).integers(0, 6, 240)
    per_cluster = min(per_cluster, len(np.unique(labels)))
    n_clients = clusters + extra
    parts = _clustered(clusters, per_cluster, labels, n_clients, seed=seed)
    rows = np.concatenate(parts.train)
    assert len(np.unique(rows)) == len(rows)
    supports = [set(np.unique(labels[r]).tolist()) for r in parts.train if len(r)]
    # At most `clusters` distinct label sets of at most per_cluster labels each.
    maximal = [s for s in supports if not any(s < t for t in supports)]
    assert len({frozenset(s) for s in maximal}) <= clusters
    assert all(len(s) <= per_cluster for s in supports)
    again = _clustered(clusters, per_cluster, labels, n_clients, seed=seed)
    assert all(np.array_equal(a, b) for a, b in zip(parts.train, again.train, strict=True))
