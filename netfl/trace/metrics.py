"""Fairness and bandit metrics computed from a run's tables.

* Jain's fairness index (eq. (3) of Cho et al. 2020) of any per-client quantity:
  selection counts, local losses F_k(w), ...;
* per-client selection (or completion) counts, and Jain's index of the cumulative counts
  after every round;
* the strategies' internal scores per round as a round x client matrix, e.g. the RBCS-F
  virtual-queue backlogs Z_{t,n} (score ``backlog``) or MAB-CS UCB scores (``ucb``);
* time to a target accuracy, accuracy at a simulated time (a step function of time), the
  mean and spread of the last evaluations, and means with Student-t confidence intervals
  over seeds;
* each round's end time over seeds that stopped at different rounds (:func:`carried_round_ends`).

Inputs are the run directory's tables as pandas DataFrames (``rounds.parquet``,
``strategy.parquet``) or plain arrays.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd


def jain_index(values: Sequence[float] | np.ndarray) -> float:
    """J = (1/K) [sum_k (x_k / sum_i x_i)^2]^-1 = (sum x)^2 / (K sum x^2), eq. (3) of Cho et al.
    2020.

    1/K <= J <= 1 for non-negative x, 1 when all are equal, 1/K when one client has
    everything. NaN entries are left out (K counts the others); NaN if nothing is left
    or every value is 0.
    """
    x = np.asarray(values, dtype=float).ravel()
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return float("nan")
    if np.any(x < 0):
        raise ValueError("Jain's index is defined for non-negative values")
    square_sum = float(np.sum(x * x))
    if square_sum == 0.0:
        return float("nan")
    return float(np.sum(x) ** 2 / (len(x) * square_sum))


def selection_counts(selections: Iterable[Iterable[int]], n_clients: int) -> np.ndarray:
    """How often each client 0..n_clients-1 appears in the per-round lists ``selections``."""
    counts = np.zeros(n_clients, dtype=np.int64)
    for chosen in selections:
        np.add.at(counts, np.asarray(list(chosen), dtype=np.int64), 1)
    return counts


def cumulative_selection_counts(
    rounds: pd.DataFrame, n_clients: int, column: str = "selected"
) -> np.ndarray:
    """(rounds, n_clients) counts after each round of ``rounds.parquet``'s ``column``
    (``selected`` or ``completed``)."""
    per_round = np.zeros((len(rounds), n_clients), dtype=np.int64)
    for i, chosen in enumerate(rounds[column]):
        np.add.at(per_round[i], np.asarray(list(chosen), dtype=np.int64), 1)
    return np.cumsum(per_round, axis=0)


def jain_over_rounds(rounds: pd.DataFrame, n_clients: int, column: str = "selected") -> pd.Series:
    """Jain's index of the cumulative per-client counts after each round, indexed by round."""
    counts = cumulative_selection_counts(rounds, n_clients, column)
    values = [jain_index(row) for row in counts]
    return pd.Series(values, index=pd.Index(rounds["round"], name="round"), name="jain")


def score_matrix(strategy: pd.DataFrame, score: str) -> pd.DataFrame:
    """Round x client matrix of one score from ``strategy.parquet`` (NaN where absent)."""
    rows = strategy[strategy["score"].astype(str) == score]
    return rows.pivot_table(index="round", columns="client", values="value", aggfunc="last")


def backlogs(strategy: pd.DataFrame) -> pd.DataFrame:
    """RBCS-F virtual-queue backlogs Z_{t,n} per round (eq. (6) of Huang et al. 2021), round x
    client."""
    return score_matrix(strategy, "backlog")


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
    return step_at(done["t_end_s"].to_numpy(float), done["accuracy"].to_numpy(float), t_s)


def last_evaluations(rounds: pd.DataFrame, k: int) -> tuple[float, float]:
    """Mean and sample standard deviation of the accuracy over the last ``k`` evaluations
    (rounds with an accuracy, in time order; fewer if the run has fewer): the final
    accuracy without a single round's swing. The standard deviation is NaN for one
    evaluation, both NaN for none."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    values = _evaluated(rounds)["accuracy"].to_numpy(float)[-k:]
    if values.size == 0:
        return math.nan, math.nan
    return float(values.mean()), float(values.std(ddof=1)) if values.size > 1 else math.nan


def carried_round_ends(
    ends_s: Sequence[np.ndarray], stop_s: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative time at the end of each round for runs that stopped at different rounds.

    ``ends_s[i]``: run i's round end times in round order (non-decreasing), ``stop_s[i]``
    when it stopped (its time budget, or its last round's end). Returns a (runs, rounds)
    matrix in which a run that did not reach a round holds its stop time there (it had
    not reached it by then: a lower bound of when it would have), so every run counts at
    every round and each row, hence any mean or quantile over the rows, never decreases;
    and the number of runs that reached each round.

    >>> matrix, reached = carried_round_ends([np.array([10.0, 30.0]), np.array([5.0])], [40, 40])
    >>> matrix.tolist(), reached.tolist()
    ([[10.0, 30.0], [5.0, 40.0]], [2, 1])
    """
    n_rounds = max((len(e) for e in ends_s), default=0)
    matrix = np.empty((len(ends_s), n_rounds))
    for i, (ends, stop) in enumerate(zip(ends_s, stop_s, strict=True)):
        ends = np.asarray(ends, dtype=float)
        matrix[i, : len(ends)] = ends
        matrix[i, len(ends) :] = max(float(stop), float(ends[-1]) if len(ends) else 0.0)
    reached = np.array([sum(len(e) > r for e in ends_s) for r in range(n_rounds)], dtype=int)
    return matrix, reached


def step_at(
    times_s: np.ndarray, values: np.ndarray, t_s: float | Sequence[float] | np.ndarray
) -> np.ndarray:
    """A step function of time at ``t_s``: ``values[i]`` holds from ``times_s[i]`` (sorted)
    until the next time, and NaN before the first."""
    query = np.atleast_1d(np.asarray(t_s, dtype=float))
    index = np.searchsorted(times_s, query, side="right") - 1
    out = np.full(query.shape, np.nan)
    seen = index >= 0
    out[seen] = np.asarray(values, dtype=float)[index[seen]]
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


def busy_fraction(
    timeline: pd.DataFrame, start_kind: str, end_kind: str, duration_s: float
) -> float:
    """Share of ``[0, duration_s]`` during which at least one ``start_kind`` ->
    ``end_kind`` interval of a client is open (e.g. FL uploads on the uplink: the union of
    the clients' ``upload_start`` -> ``upload_end``; an interval cut by a ``drop``,
    ``deadline_miss`` or ``cancel`` ends there)."""
    if not duration_s > 0:
        return math.nan
    ends = {end_kind, "drop", "deadline_miss", "cancel"}
    events = timeline[timeline["kind"].isin({start_kind} | ends)]
    events = events.sort_values("t_s", kind="stable")
    open_since: dict[int, float] = {}
    intervals = []
    for t_s, kind, client in zip(events["t_s"], events["kind"], events["client"], strict=True):
        if kind == start_kind:
            open_since[int(client)] = float(t_s)
        elif int(client) in open_since:
            intervals.append((open_since.pop(int(client)), float(t_s)))
    intervals += [(start, duration_s) for start in open_since.values()]
    busy, reach = 0.0, 0.0
    for start, end in sorted(intervals):
        start, end = max(start, reach), min(end, duration_s)
        if end > start:
            busy += end - start
            reach = end
    return busy / duration_s
