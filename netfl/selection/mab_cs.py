"""MAB-based client selection, MAB-CS (Yoshida et al. 2020 Sec. III-B, III-C).

Each client is an arm; N_k counts how often client k has been selected and sum(N_k) is
the total over all clients. The UCB amendment sqrt(log(sum N_k) / (2 N_k)) of eq. (3) is
infinite for a client never selected (N_k = 0): by the UCB convention such clients are
explored first, in random order.

What each arm observes: a selected client that reported contributes its observed update
and upload times; a step the server did not observe is charged the round time (see
:func:`~netfl.selection.observations.times_or_round_time`), so every selection yields
one sample and the sample means are over N_k values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import numpy as np
from pydantic import Field

from netfl.selection.base import PopulationInfo, RoundFeedback, Scores, SelectionContext, Strategy
from netfl.selection.observations import times_or_round_time
from netfl.selection.ranking import by_client
from netfl.selection.tinc import greedy_schedule, observed_increments, t_inc


def ucb_bonus(n_selected: np.ndarray, total_selections: float) -> np.ndarray:
    """sqrt(log(sum N_k) / (2 N_k)), eqs. (3)-(6) of Yoshida et al. 2020; +inf where N_k = 0."""
    n = np.asarray(n_selected, dtype=float)
    log_total = np.log(total_selections) if total_selections > 0 else 0.0
    with np.errstate(divide="ignore"):
        return np.where(n > 0, np.sqrt(log_total / (2.0 * np.maximum(n, 1.0))), np.inf)


class _MABCS(Strategy):
    """Shared bookkeeping: selection counts and per-client sums of observations."""

    def setup(self, info: PopulationInfo, rng: np.random.Generator) -> None:
        super().setup(info, rng)
        self.n_selected = np.zeros(info.n_clients, dtype=np.int64)
        self._scores: dict[str, dict[int, float]] = {}

    def _observed_times(self, feedback: RoundFeedback) -> tuple[np.ndarray, np.ndarray]:
        return (
            times_or_round_time(feedback.update_time_s, feedback),
            times_or_round_time(feedback.upload_time_s, feedback),
        )

    def scores(self) -> Scores:
        return self._scores


class NaiveMABCS(_MABCS):
    """Naive MAB-CS, eq. (4): f(S, k) = -mean(T_inc)_k / alpha + sqrt(log(sum N) / (2 N_k)).

    The payoff of client k is the T_inc of eq. (1) at the position where it was added to
    the round's schedule (``feedback.selected`` is in selection order), computed from the
    times observed in that round (:func:`observed_increments`); mean(T_inc)_k is the
    sample mean over its selections. The score does not depend on S, so Algorithm 1
    reduces to taking the ``budget`` candidates with the highest scores. ``scores()``:
    ``ucb``, eq. (4) of each candidate tried before.

    Parameters
    ----------
    alpha
        Weight that brings T_inc to the scale of the UCB term (1000 in Yoshida et al. 2020,
        "similar to
        T_inc").
    """

    def __init__(self, alpha: Annotated[float, Field(gt=0)] = 1000.0) -> None:
        self.alpha = alpha

    def setup(self, info: PopulationInfo, rng: np.random.Generator) -> None:
        super().setup(info, rng)
        self.sum_increment_s = np.zeros(info.n_clients)

    def ucb_scores(self, clients: np.ndarray) -> np.ndarray:
        """Eq. (4) for ``clients`` (+inf for clients never selected)."""
        n = self.n_selected[clients]
        mean = np.where(n > 0, self.sum_increment_s[clients] / np.maximum(n, 1), 0.0)
        return -mean / self.alpha + ucb_bonus(n, float(self.n_selected.sum()))

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        shuffle = self.rng.permutation(len(ctx.candidates))
        candidates = ctx.candidates[shuffle]
        score = self.ucb_scores(candidates)
        k = min(ctx.budget, len(candidates))
        chosen = candidates[np.argsort(-score, kind="stable")[:k]]
        self._scores = {"ucb": _finite(candidates, score)}
        return [int(c) for c in chosen]

    def observe(self, feedback: RoundFeedback) -> None:
        update, upload = self._observed_times(feedback)
        ok = np.isfinite(update) & np.isfinite(upload)
        increments = observed_increments(update[ok], upload[ok])
        np.add.at(self.sum_increment_s, feedback.selected[ok], increments)
        np.add.at(self.n_selected, feedback.selected[ok], 1)


class ElementwiseMABCS(_MABCS):
    """Element-wise MAB-CS, eqs. (5)-(7): FedCS scheduling on optimistic times.

    tau_k^UD = mean(t^UD)_k / beta - sqrt(log(sum N) / (2 N_k))       eq. (5)
    tau_k^UL = mean(t^UL)_k / beta - sqrt(log(sum N) / (2 N_k))       eq. (6)
    f(S, k) = -T'_inc(S, k)                                           eq. (7)

    with T'_inc eq. (1) on tau instead of t, run through Algorithm 1. Clients never
    selected (tau = -inf) are scheduled first, in random order, with zero times.
    ``scores()`` of the candidates tried before: ``tau_update``, ``tau_upload`` and
    ``ucb`` = f(S, k) of eq. (7) for the empty schedule S, -(max(tau^UL, 0) +
    max(tau^UD, 0) + tau^UL) (Yoshida et al. 2020 Fig. 4 plots this score).

    Parameters
    ----------
    beta
        Weight that brings the times to the scale of the UCB term (50 in Yoshida et al. 2020,
        "similar to
        t^UL and t^UD" without fluctuation).
    """

    def __init__(self, beta: Annotated[float, Field(gt=0)] = 50.0) -> None:
        self.beta = beta

    def setup(self, info: PopulationInfo, rng: np.random.Generator) -> None:
        super().setup(info, rng)
        self.sum_update_s = np.zeros(info.n_clients)
        self.sum_upload_s = np.zeros(info.n_clients)

    def optimistic_times(self, clients: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(tau^UD, tau^UL) of eqs. (5)-(6) for ``clients`` (-inf if never selected)."""
        n = self.n_selected[clients]
        bonus = ucb_bonus(n, float(self.n_selected.sum()))
        safe_n = np.maximum(n, 1)
        tau_update = np.where(n > 0, self.sum_update_s[clients] / safe_n / self.beta, 0.0)
        tau_upload = np.where(n > 0, self.sum_upload_s[clients] / safe_n / self.beta, 0.0)
        return tau_update - bonus, tau_upload - bonus

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        shuffle = self.rng.permutation(len(ctx.candidates))
        candidates = ctx.candidates[shuffle]
        tau_update, tau_upload = self.optimistic_times(candidates)
        fresh = ~np.isfinite(tau_update)
        schedule = greedy_schedule(
            np.where(fresh, 0.0, tau_update),
            np.where(fresh, 0.0, tau_upload),
            min(ctx.budget, len(candidates)),
            first=fresh,
        )
        empty = -t_inc(tau_update, tau_upload, 0.0, 0.0)
        self._scores = {
            "tau_update": _finite(candidates, tau_update),
            "tau_upload": _finite(candidates, tau_upload),
            "ucb": _finite(candidates, empty),
        }
        return [int(c) for c in candidates[schedule.order]]

    def observe(self, feedback: RoundFeedback) -> None:
        update, upload = self._observed_times(feedback)
        ok = np.isfinite(update) & np.isfinite(upload)
        np.add.at(self.sum_update_s, feedback.selected[ok], update[ok])
        np.add.at(self.sum_upload_s, feedback.selected[ok], upload[ok])
        np.add.at(self.n_selected, feedback.selected[ok], 1)


def _finite(clients: np.ndarray, values: np.ndarray) -> dict[int, float]:
    keep = np.isfinite(values)
    return by_client(clients[keep], values[keep])
