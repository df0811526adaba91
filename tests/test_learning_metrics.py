"""Fairness and participation metrics of learning-aware selection."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from netfl.trace.learning_metrics import (
    distinct_selected,
    jain_index,
    loss_fairness,
    selection_counts,
    selection_frequency_histogram,
)


def test_jain_index_known_values():
    assert jain_index([2.0, 2.0, 2.0, 2.0]) == pytest.approx(1.0)
    assert jain_index([0.0, 0.0, 5.0, 0.0]) == pytest.approx(1 / 4)  # all on one: 1/K
    assert jain_index([1.0, 2.0, 3.0]) == pytest.approx(36 / (3 * 14))
    assert jain_index([0.0, 0.0]) == 1.0
    assert np.isnan(jain_index([]))


def test_loss_fairness_is_eq_3_of_000():
    losses = np.random.default_rng(0).uniform(0.1, 3.0, 30)
    share = losses / losses.sum()
    assert loss_fairness(losses) == pytest.approx(1 / 30 / (share**2).sum())


@given(
    st.lists(st.floats(0.0, 1e6, allow_nan=False), min_size=1, max_size=50).filter(
        lambda xs: sum(xs) > 1e-3
    ),
    st.floats(1e-3, 1e3),
)
def test_jain_index_is_bounded_and_scale_free(values, scale):
    j = jain_index(values)
    assert 1 / len(values) - 1e-9 <= j <= 1 + 1e-9
    assert jain_index([v * scale for v in values]) == pytest.approx(j, rel=1e-6)


def test_jain_index_refuses_negative_or_missing_values():
    with pytest.raises(ValueError, match="non-negative"):
        jain_index([1.0, -1.0])
    with pytest.raises(ValueError, match="finite"):
        jain_index([1.0, np.nan])


def test_participation_over_rounds():
    selected = [[0, 1], [1, 2], [0], [], [3]]
    assert distinct_selected(selected, 5).tolist() == [2, 3, 3, 3, 4]
    assert selection_counts(selected, 5).tolist() == [2, 2, 1, 1, 0]
    # One client never selected, two once, two twice.
    assert selection_frequency_histogram(selected, 5).tolist() == [1, 2, 2]
