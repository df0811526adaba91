"""Oort's guided participant selection (Lai et al., OSDI 2021), training selector.

Follows the public reference implementation, ``oort/oort.py`` of SymbioticLab/Oort
(``_training_selector``, commit f5fccf35), with its defaults from ``training/argParser.py``
except ``round_threshold`` (30, FedScale's default for Oort; Oort's own argParser has had
10, and 101, which disables the system penalty) and the utility of
``training/param_server.py``. Per round:

* statistical utility of a client that reported: U_i = |B_i| sqrt(mean_{k in B_i} loss_k^2)
  (``param_server.py``: sqrt(squared-loss average) times the samples trained);
* score of an explored client: its utility, clipped at the ``clip_bound`` quantile and
  min-max normalised, plus the temporal uncertainty sqrt(0.1 log R / L_i) (R: current
  round, L_i: the round its utility was last updated; rounds counted from 1), times the
  system penalty (T / t_i)^round_penalty when its duration t_i exceeds the preferred round
  duration T;
* T is the ``round_threshold`` percentile of the known client durations (the pacer raises
  it by ``pacer_delta`` when the exploited utility of the last ``pacer_step`` rounds is
  flat, lowers it when it changes sharply);
* a fraction 1 - epsilon of the budget exploits: candidates scoring at least
  ``cut_off_util`` times the score ranked just after the exploit quota, sampled in
  proportion to their scores; epsilon starts at ``exploration_factor``, decays by
  ``exploration_decay`` per round down to ``exploration_min``;
* the rest explores never-tried clients, sampled in proportion to their data size
  (times the system penalty) among the ``sample_window`` times as many largest ones;
  any remaining places are filled uniformly at random;
* clients selected more than ``blacklist_rounds`` times are excluded (off by default).

Differences from the reference, all at its edges: the loss term. netfl's learner reports
the mean training loss of each client (``feedback.local_loss``), not the mean of squared
per-sample losses. With the (population) standard deviation of the client's minibatch
losses over its local iterations (``feedback.signals["local_loss_std"]``) it uses
sqrt(mean^2 + std^2): the root-mean-square of the minibatch losses, which is below the
per-sample root-mean-square Oort asks for by the spread of the losses within each
minibatch (Jensen); without the std it uses the mean alone, lower still by the spread
across minibatches. Selected clients that did not report get the mean utility of those that
did (the reference's ``avgUtilLastEpoch`` for stragglers) and the round time as their
duration. Durations are learnt from the observed exchange times only (the reference starts
from device profiles). The reference's crash paths (an empty candidate list, an exploit
quota equal to the number of explored clients, a fill loop without enough clients) select
what is possible instead; blacklisted clients are a last resort to fill the budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated

import numpy as np
from pydantic import Field

from netfl.selection.base import PopulationInfo, RoundFeedback, Scores, SelectionContext, Strategy
from netfl.selection.ranking import by_client

Fraction = Annotated[float, Field(ge=0, le=1)]


def statistical_utility(
    n_samples: np.ndarray, mean_loss: np.ndarray, loss_std: np.ndarray | None = None
) -> np.ndarray:
    """|B_i| x the loss term: sqrt(mean^2 + std^2) with the minibatch spread (the RMS of
    the minibatch losses, a lower bound of the per-sample RMS), else the mean."""
    mean_square = np.square(mean_loss)
    if loss_std is not None:
        mean_square = mean_square + np.square(np.nan_to_num(loss_std))
    return np.asarray(n_samples, dtype=float) * np.sqrt(mean_square)


def system_penalty(duration_s: np.ndarray, preferred_s: float, exponent: float) -> np.ndarray:
    """(T / t_i)^exponent for clients slower than T, 1 otherwise (unknown t_i: 1)."""
    duration = np.asarray(duration_s, dtype=float)
    slow = np.isfinite(duration) & (duration > preferred_s)
    ratio = preferred_s / np.maximum(np.where(slow, duration, 1.0), 1e-4)
    return np.where(slow, ratio**exponent, 1.0)


def temporal_uncertainty(current_round: int, last_round: np.ndarray) -> np.ndarray:
    """sqrt(0.1 log R / L_i) of the reference (rounds counted from 1)."""
    last = np.maximum(np.asarray(last_round, dtype=float), 1.0)
    return np.sqrt(0.1 * math.log(current_round) / last)


def _sample(rng: np.random.Generator, ids: np.ndarray, weights: np.ndarray, k: int) -> list[int]:
    """``k`` of ``ids`` without replacement, in proportion to the (non-negative) weights."""
    if k <= 0 or len(ids) == 0:
        return []
    w = np.maximum(np.nan_to_num(np.asarray(weights, dtype=float)), 0.0) + 1e-12
    return [int(c) for c in rng.choice(ids, size=min(k, len(ids)), replace=False, p=w / w.sum())]


class Oort(Strategy):
    """Oort's training selector; see the module docstring (names follow the reference).

    Parameters
    ----------
    exploration_factor, exploration_decay, exploration_min
        Initial exploration fraction epsilon, its decay per round, its floor.
    round_threshold
        Percentile of the client durations that sets the preferred round duration T
        (100 or more: no system penalty).
    round_penalty
        Exponent alpha of the system penalty (T / t_i)^alpha (0: Oort without it).
    pacer_step, pacer_delta
        Window (rounds) and step (percentile points) of the pacer.
    cut_off_util
        Exploit among clients scoring at least this fraction of the cut-off score.
    sample_window
        Explore among this many times as many unexplored clients as places.
    clip_bound
        Quantile at which utilities are clipped before normalising.
    blacklist_rounds, blacklist_max_len
        Exclude clients selected more than this many rounds (-1: never), at most this
        fraction of the population.
    sample_cap
        |B_i| = min(n_samples, sample_cap): samples per round when local training is
        capped (the reference's upload_epoch x batch_size); default: all samples.
    """

    supports_async = True

    requires = frozenset({"local_loss"})

    def __init__(
        self,
        exploration_factor: Fraction = 0.9,
        exploration_decay: Fraction = 0.98,
        exploration_min: Fraction = 0.2,
        round_threshold: Annotated[float, Field(gt=0)] = 30.0,
        round_penalty: Annotated[float, Field(ge=0)] = 2.0,
        pacer_step: Annotated[int, Field(ge=1)] = 20,
        pacer_delta: Annotated[float, Field(gt=0)] = 10.0,
        cut_off_util: Annotated[float, Field(gt=0, le=1)] = 0.7,
        sample_window: Annotated[float, Field(ge=1)] = 5.0,
        clip_bound: Annotated[float, Field(gt=0, le=1)] = 0.95,
        blacklist_rounds: Annotated[int, Field(ge=-1)] = -1,
        blacklist_max_len: Fraction = 0.3,
        sample_cap: Annotated[int, Field(ge=1)] | None = None,
    ) -> None:
        self.exploration = exploration_factor
        self.exploration_decay = exploration_decay
        self.exploration_min = exploration_min
        self.round_threshold = round_threshold
        self.round_penalty = round_penalty
        self.pacer_step = pacer_step
        self.pacer_delta = pacer_delta
        self.cut_off_util = cut_off_util
        self.sample_window = sample_window
        self.clip_bound = clip_bound
        self.blacklist_rounds = blacklist_rounds
        self.blacklist_max_len = blacklist_max_len
        self.sample_cap = sample_cap

    def setup(self, info: PopulationInfo, rng: np.random.Generator) -> None:
        super().setup(info, rng)
        n = info.n_clients
        cap = self.sample_cap if self.sample_cap is not None else np.inf
        self.batch_samples = np.minimum(info.n_samples.astype(float), cap)
        self.reward = self.batch_samples.copy()  # the reference's initial reward: size
        self.duration_s = np.full(n, np.nan)
        self.last_round = np.zeros(n, dtype=np.int64)
        self.count = np.zeros(n, dtype=np.int64)
        self.exploit_history: list[float] = []
        self._exploited: list[int] = []
        self._explored: list[int] = []
        self._reported: set[int] = set()
        self._scores: dict[str, dict[int, float]] = {}

    # -- selection ----------------------------------------------------------------------

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        current = ctx.round + 1
        self._pace(current)
        preferred_s = self.preferred_duration_s()
        blacklisted = np.isin(ctx.candidates, self._blacklist())
        feasible = ctx.candidates[~blacklisted]
        self.exploration = max(self.exploration * self.exploration_decay, self.exploration_min)
        budget = min(ctx.budget, len(ctx.candidates))
        tried = feasible[self.count[feasible] > 0]
        utility = self.utilities(tried, feasible, current, preferred_s)
        self._exploited = self._exploit(tried, utility, budget)
        fresh = feasible[self.count[feasible] == 0]
        if (self.count == 0).any():
            places = budget - len(self._exploited)
            self._explored = self._explore(fresh, preferred_s, places)
        else:  # nothing left to explore, ever
            self.exploration = self.exploration_min = 0.0
            self._explored = []
        chosen = self._exploited + self._explored
        for pool in (feasible, ctx.candidates[blacklisted]):
            rest = pool[~np.isin(pool, chosen)]
            chosen += [int(c) for c in self.rng.permutation(rest)[: budget - len(chosen)]]
        self._scores = {
            "utility": by_client(tried, utility),
            "statistical_utility": by_client(ctx.candidates, self.reward[ctx.candidates]),
        }
        return chosen

    def utilities(
        self, tried: np.ndarray, feasible: np.ndarray, current: int, preferred_s: float
    ) -> np.ndarray:
        """Scores of the explored clients ``tried`` (normalised over ``feasible``)."""
        positive = np.sort(self.reward[feasible][self.reward[feasible] > 0])
        if len(tried) == 0 or len(positive) == 0:
            return np.zeros(len(tried))
        clip = positive[min(int(len(positive) * self.clip_bound), len(positive) - 1)]
        low = positive[0] * 0.999
        span = max(positive[-1] - low, 1e-4)
        reward = np.minimum(self.reward[tried], clip)
        score = (reward - low) / span + temporal_uncertainty(current, self.last_round[tried])
        return score * system_penalty(self.duration_s[tried], preferred_s, self.round_penalty)

    def _exploit(self, tried: np.ndarray, utility: np.ndarray, budget: int) -> list[int]:
        quota = min(int(budget * (1.0 - self.exploration)), len(tried))
        if quota == 0:
            return []
        ranked = np.argsort(-utility, kind="stable")
        cut_off = utility[ranked[min(quota, len(ranked) - 1)]] * self.cut_off_util
        eligible = ranked[utility[ranked] >= cut_off]
        if len(eligible) < quota:
            eligible = ranked[:quota]
        return _sample(self.rng, tried[eligible], utility[eligible], quota)

    def _explore(self, fresh: np.ndarray, preferred_s: float, places: int) -> list[int]:
        places = min(len(fresh), places)
        if places <= 0:
            return []
        prior = self.reward[fresh] * system_penalty(
            self.duration_s[fresh], preferred_s, self.round_penalty
        )
        window = np.argsort(-prior, kind="stable")[: int(self.sample_window * places)]
        return _sample(self.rng, fresh[window], prior[window], places)

    def _blacklist(self) -> np.ndarray:
        if self.blacklist_rounds == -1:
            return np.zeros(0, dtype=np.int64)
        over = np.flatnonzero(self.count > self.blacklist_rounds)
        over = over[np.argsort(-self.count[over], kind="stable")]
        return over[: int(self.blacklist_max_len * self.info.n_clients)]

    def preferred_duration_s(self) -> float:
        """T: the ``round_threshold`` percentile of the known durations (inf if none)."""
        known = np.sort(self.duration_s[np.isfinite(self.duration_s)])
        if self.round_threshold >= 100.0 or len(known) == 0:
            return math.inf
        return float(known[min(int(len(known) * self.round_threshold / 100.0), len(known) - 1)])

    def _pace(self, current: int) -> None:
        """The reference's pacer: adapt ``round_threshold`` to the exploited utility."""

        def mean_reward(clients: list[int]) -> float:
            done = [c for c in clients if c in self._reported]
            return float(self.reward[done].sum()) / (len(done) + 1e-4)

        self.exploit_history.append(mean_reward(self._exploited))
        self._reported = set()
        step = self.pacer_step
        if current < 2 * step or current % step != 0:
            return
        before = sum(self.exploit_history[-2 * step : -step])
        now = sum(self.exploit_history[-step:])
        if abs(now - before) <= 0.1 * before:
            self.round_threshold = min(100.0, self.round_threshold + self.pacer_delta)
        elif abs(now - before) >= 5 * before:
            self.round_threshold = max(self.pacer_delta, self.round_threshold - self.pacer_delta)

    # -- feedback -----------------------------------------------------------------------

    def observe(self, feedback: RoundFeedback) -> None:
        selected = feedback.selected
        if len(selected) == 0:
            return
        std = feedback.signals.get("local_loss_std")
        utility = statistical_utility(
            self.batch_samples[selected],
            feedback.local_loss,
            None if std is None else np.asarray(std, dtype=float),
        )
        reported = feedback.completed & np.isfinite(utility)
        round_s = feedback.round_time_s
        exchange_s = np.where(
            np.isfinite(feedback.exchange_time_s), feedback.exchange_time_s, round_s
        )
        if reported.any():
            utility = np.where(reported, utility, utility[reported].mean())
        else:  # nobody reported: keep what the stragglers had
            utility = self.reward[selected]
        self.reward[selected] = utility
        self.duration_s[selected] = np.where(reported, exchange_s, round_s)
        self.last_round[selected] = feedback.round + 1
        self.count[selected] += 1
        self._reported = set(selected.tolist())

    def scores(self) -> Scores:
        """``utility`` (the exploit score) of explored candidates and ``statistical_utility``
        of all candidates, as used in the latest selection."""
        return self._scores
