"""Confidence intervals and accuracy in time (Jain's index is tested in test_trace_metrics)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from netfl.trace.metrics import (
    accuracy_at,
    mean_ci,
    rounds_to_accuracy,
    time_to_accuracy,
)


def test_mean_ci_uses_the_t_quantile():
    # n = 5: mean 3, s = sqrt(2.5), t_{0.975, 4} = 2.7764 (Student-t table).
    mean, half = mean_ci([1, 2, 3, 4, 5])
    assert mean == 3
    assert half == pytest.approx(2.7764 * math.sqrt(2.5) / math.sqrt(5), rel=1e-4)
    # NaN values (a run that never reached the target) are left out; one value has no CI.
    assert mean_ci([2.0, math.nan]) == (2.0, pytest.approx(math.nan, nan_ok=True))


ROUNDS = pd.DataFrame(
    {
        "round": [0, 1, 2, 3],
        "t_end_s": [10.0, 25.0, 40.0, 50.0],
        "accuracy": [0.2, math.nan, 0.6, 0.9],  # round 1 not evaluated
    }
)


def test_time_and_rounds_to_accuracy():
    assert time_to_accuracy(ROUNDS, 0.5) == 40.0
    assert rounds_to_accuracy(ROUNDS, 0.5) == 3
    assert time_to_accuracy(ROUNDS, 0.2) == 10.0
    assert math.isnan(time_to_accuracy(ROUNDS, 0.95))


def test_accuracy_at_is_the_last_evaluation_before():
    got = accuracy_at(ROUNDS, [0.0, 9.99, 10.0, 30.0, 40.0, 1e9])
    np.testing.assert_array_equal(got, [np.nan, np.nan, 0.2, 0.2, 0.6, 0.9])
