"""FedCS scheduling: the round-time increment T_inc and the greedy of Algorithm 1.

From Yoshida et al. 2020 Sec. III-A. Selected clients download the model (the
distribution takes T^d_S, the longest of their times), update in parallel, then upload one
after another in selection order. ``t`` is the estimated round time of the schedule so far
(``t - T^d_S`` is how long the sequential uploads have run after the distribution), and
adding client k lengthens it by

    T_inc(S, k) = (T^d_{S+k} - T^d_S) + max{t_k^UD - (t - T^d_S), 0} + t_k^UL     eq. (1)
    T^d_S = max_{k_i in S} t_{k_i}^UL                                              eq. (2)

(the paper uses the upload time as the proxy for the distribution time; T^d of the empty
schedule is 0). FedCS, Extended FedCS and Element-wise MAB-CS all run Algorithm 1 with
f(S, k) = -T_inc(S, k) on their own estimates of t^UD and t^UL.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def t_inc(
    update_s: np.ndarray | float,
    upload_s: np.ndarray | float,
    t_s: float,
    distribution_s: float,
) -> np.ndarray:
    """Eq. (1): the increase of the round time when each client joins the schedule.

    Parameters
    ----------
    update_s, upload_s
        t_k^UD and t_k^UL of the clients to evaluate (arrays broadcast together).
    t_s
        Estimated round time t of the schedule S so far.
    distribution_s
        T^d_S of eq. (2) for S (0 for the empty schedule).
    """
    update = np.asarray(update_s, dtype=float)
    upload = np.asarray(upload_s, dtype=float)
    grown = np.maximum(distribution_s, upload)
    return (grown - distribution_s) + np.maximum(update - (t_s - distribution_s), 0.0) + upload


def observed_increments(update_s: np.ndarray, upload_s: np.ndarray) -> np.ndarray:
    """T_inc(S_i, k_i) of eq. (1) for each client of a round, in selection order.

    S_i is the prefix of the selection before client k_i and the times are the ones
    observed in the round: the "increased time when adding client k" that Naive MAB-CS
    takes as its payoff, reconstructed from the per-client times.
    """
    out = np.empty(len(update_s))
    t, distribution = 0.0, 0.0
    for i, (update, upload) in enumerate(zip(update_s, upload_s, strict=True)):
        out[i] = float(t_inc(update, upload, t, distribution))
        t += out[i]
        distribution = max(distribution, float(upload))
    return out


@dataclass(frozen=True)
class Schedule:
    """Result of Algorithm 1: positions into the input arrays, in selection order."""

    order: np.ndarray
    increments_s: np.ndarray
    round_time_s: float


def greedy_schedule(
    update_s: np.ndarray,
    upload_s: np.ndarray,
    budget: int,
    *,
    deadline_s: float | None = None,
    first: np.ndarray | None = None,
) -> Schedule:
    """Algorithm 1 of Yoshida et al. 2020 with f(S, k) = -T_inc(S, k).

    Repeatedly adds the client with the smallest T_inc (ties: the earliest position, so
    callers shuffle the candidates to break ties at random). It stops at ``budget``
    clients (the S_round form of Yoshida et al. 2020) or, when ``deadline_s`` is given, at the
    first client
    whose addition would end the schedule after the deadline: the original FedCS rule
    (ref. [5] of Yoshida et al. 2020) that maximises the number of clients finishing by the
    deadline.
    Stopping there is exact: the rejected client had the smallest T_inc for the current S,
    so every other client would end later still.

    ``first`` marks clients to schedule before the greedy (in position order), as the
    never-tried arms of Element-wise MAB-CS, whose UCB bonus is infinite.
    """
    n = len(update_s)
    remaining = np.ones(n, dtype=bool)
    order: list[int] = []
    increments: list[float] = []
    t, distribution = 0.0, 0.0
    queue = [] if first is None else np.flatnonzero(first).tolist()
    while len(order) < budget and remaining.any():
        if queue:
            x = queue.pop(0)
            inc = float(t_inc(update_s[x], upload_s[x], t, distribution))
        else:
            incs = np.where(remaining, t_inc(update_s, upload_s, t, distribution), np.inf)
            x = int(np.argmin(incs))
            inc = float(incs[x])
        remaining[x] = False
        if deadline_s is not None and t + inc > deadline_s:
            if queue:
                continue
            break
        order.append(x)
        increments.append(inc)
        t += inc
        distribution = max(distribution, float(upload_s[x]))
    return Schedule(np.asarray(order, dtype=np.int64), np.asarray(increments), t)
