"""Scalar metrics of runs: fairness, time to accuracy, accuracy at a time, confidence intervals.

Pure functions of numpy arrays and the run tables (``rounds.parquet``); no plotting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd


def jain_index(values: Sequence[float] | np.ndarray) -> float:
    """Jain's fairness index of non-negative values (e.g. per-client selection counts).

    ``J(x) = (1/K) [sum_k (x_k / sum_i x_i)^2]^-1 = (sum x)^2 / (K sum x^2)``, eq. (3) in
    000_dfbad22c59539edc.txt (Jain, Chiu and Hawe). ``1/K <= J <= 1``; 1 when every value
    is equal, 1/K when one client has everything. NaN for an empty input or all zeros.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return math.nan
    if np.any(x < 0) or not np.all(np.isfinite(x)):
        raise ValueError("Jain's index takes finite, non-negative values")
    total = x.sum()
    if total == 0:
        return math.nan
    shares = x / total
    return float(1.0 / (x.size * np.sum(shares**2)))


def _evaluated(rounds: pd.DataFrame) -> pd.DataFrame:
    done = rounds[np.isfinite(rounds["t_end_s"]) & np.isfinite(rounds["accuracy"])]
    return done.sort_values("t_end_s", kind="stable")


def time_to_accuracy(rounds: pd.DataFrame, target: float) -> float:
    """Simulated time (s) at which the evaluated accuracy first reaches ``target``; NaN if never.

    The time is the end of the first round whose evaluation is ``>= target`` (the model is
    evaluated at aggregation, which ends the round).
    """
    done = _evaluated(rounds)
    hit = done[done["accuracy"] >= target]
    return float(hit["t_end_s"].iloc[0]) if len(hit) else math.nan


def rounds_to_accuracy(rounds: pd.DataFrame, target: float) -> float:
    """Rounds (round index + 1) until the accuracy first reaches ``target``; NaN if never."""
    done = _evaluated(rounds)
    hit = done[done["accuracy"] >= target]
    return float(hit["round"].iloc[0] + 1) if len(hit) else math.nan


def accuracy_at(rounds: pd.DataFrame, t_s: float | Sequence[float] | np.ndarray) -> np.ndarray:
    """Accuracy of the global model at simulated time(s) ``t_s``.

    The accuracy is a step function of time: it takes the value of the latest evaluation
    that ended at or before ``t_s`` and is NaN before the first evaluation.
    """
    done = _evaluated(rounds)
    times = done["t_end_s"].to_numpy(float)
    accuracy = done["accuracy"].to_numpy(float)
    query = np.atleast_1d(np.asarray(t_s, dtype=float))
    index = np.searchsorted(times, query, side="right") - 1
    out = np.full(query.shape, np.nan)
    seen = index >= 0
    out[seen] = accuracy[index[seen]]
    return out


def mean_ci(values: Sequence[float] | np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Mean and the half-width of its two-sided Student-t confidence interval.

    ``half = t_{(1+c)/2, n-1} s / sqrt(n)`` with ``s`` the sample standard deviation over
    the finite values; the half-width is NaN with fewer than two finite values.
    """
    from scipy import stats

    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return math.nan, math.nan
    mean = float(x.mean())
    if x.size < 2:
        return mean, math.nan
    sem = float(x.std(ddof=1)) / math.sqrt(x.size)
    return mean, float(stats.t.ppf(0.5 + confidence / 2, df=x.size - 1)) * sem
