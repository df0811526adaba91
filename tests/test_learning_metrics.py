"""Participation metrics of learning-aware selection, and loss fairness (000 eq. (3))."""

from __future__ import annotations

import numpy as np
import pytest

from netfl.trace.learning_metrics import distinct_selected, selection_frequency_histogram
from netfl.trace.metrics import jain_index


def test_participation_over_rounds():
    selected = [[0, 1], [1, 2], [0], [], [3]]
    assert distinct_selected(selected, 5).tolist() == [2, 3, 3, 3, 4]
    # Counts are (2, 2, 1, 1, 0): one client never selected, two once, two twice.
    assert selection_frequency_histogram(selected, 5).tolist() == [1, 2, 2]


def test_loss_fairness_of_eq_3_is_jain_over_client_losses():
    losses = np.random.default_rng(0).uniform(0.1, 3.0, 30)
    share = losses / losses.sum()
    # J(w) = (1/K) [sum_k (F_k / sum_i F_i)^2]^-1, written as in 000 eq. (3).
    assert jain_index(losses) == pytest.approx(1 / 30 / (share**2).sum())
