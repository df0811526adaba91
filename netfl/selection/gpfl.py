"""GPFL: gradient-projection confidence-bound client selection (Na et al. 2024).

"Gradient Projection-based Client Selection for Efficient Federated Learning". A client
is worth more the better its local descent direction agrees with the global one: its
gradient projection (GP) onto the global momentum direction (eqs. (1)-(3)), normalised
by a softmax over all clients (eq. (5)), adjusted by the change of the global accuracy
or loss (eq. (8)), averaged per client and given an exploration bonus that grows over
training, alpha = rho t / T (eqs. (6)-(7)); the K clients with the largest bound are
selected (Algorithm 1). Before the first round every client computes its projection
once (Algorithm 1, "Initialization"), which netfl simulates as a poll of all candidates
for an update vector (``choose_polled``, with ``"update_vector"`` in ``requires``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import numpy as np
from pydantic import Field

from netfl.errors import Problem
from netfl.features import Feature
from netfl.selection.base import PopulationInfo, RoundFeedback, SelectionContext, Strategy
from netfl.selection.ranking import by_client, top_k
from netfl.selection.signals import feature, signal

if TYPE_CHECKING:
    from netfl.config import Scenario


def projection(updates: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """Gradient projection c_i = g_i . d / |d| of each row g_i onto d (eq. (3) of Na et al. 2024).

    Returns zeros when ``direction`` is zero (no global direction known yet); a row with
    a non-finite entry gives a non-finite c_i.
    """
    updates = np.asarray(updates, dtype=float)
    direction = np.asarray(direction, dtype=float)
    norm = float(np.linalg.norm(direction))
    if norm == 0 or not math.isfinite(norm):
        return updates @ np.zeros(updates.shape[-1])
    return updates @ (direction / norm)


def step_scale(scale: np.ndarray | None, n: int) -> np.ndarray:
    """lr x local steps of each of ``n`` rows where usable (finite, positive), else 1."""
    if scale is None:
        return np.ones(n)
    scale = np.asarray(scale, dtype=float)
    return np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)


def mean_gradient(updates: np.ndarray, scale: np.ndarray | None) -> np.ndarray:
    """Each row's update divided by its lr x local steps: the client's mean gradient along
    its local path (with the update's sign). Rows without a positive scale are returned
    unchanged; without ``scale`` at all, the raw updates."""
    updates = np.asarray(updates, dtype=float)
    if scale is None:
        return updates
    divisor = step_scale(scale, len(updates))
    return updates / divisor.reshape((-1,) + (1,) * (updates.ndim - 1))


def softmax(values: np.ndarray) -> np.ndarray:
    """exp(c_i) / sum_i' exp(c_i'), computed stably (eq. (5) of Na et al. 2024)."""
    shifted = np.exp(np.asarray(values, dtype=float) - np.max(values))
    return shifted / shifted.sum()


def adjustment(accuracy: float, last_accuracy: float, loss: float, last_loss: float) -> float:
    """The reward factor of eq. (8) of Na et al. 2024.

    ``2 exp(A^t - A^{t-1})`` when the global accuracy changed, else
    ``exp(F(w^t) - F(w^{t-1}))``. Where a value was not evaluated (NaN) the branch that
    needs it is skipped; with neither, the factor is 1 (no adjustment).
    """
    if math.isfinite(accuracy) and math.isfinite(last_accuracy) and accuracy != last_accuracy:
        return 2.0 * math.exp(accuracy - last_accuracy)
    if math.isfinite(loss) and math.isfinite(last_loss):
        return math.exp(loss - last_loss)
    return 1.0


class GPFL(Strategy):
    """Gradient Projection Confidence Bound selection (Algorithm 1 of Na et al. 2024).

    Parameters
    ----------
    rho
        Exploration scale of eq. (7), alpha = rho t / T (the paper uses 1).
    momentum
        Attenuation gamma of the momentum recursion d^t = gamma d^{t-1} + g^t (eq. (1))
        applied to the sequence of aggregated global updates g^t (0 < gamma < 1; the
        paper's experiments use momentum 0.1).
    rounds
        T of eq. (7); null takes ``fl.rounds``.
    initial_poll
        Run the initialisation of Algorithm 1: in the first round with candidates, poll
        every candidate for its local update and store its projection.

    Notes
    -----
    - A client's vector is (w_local - w_global) / (lr x steps), its mean local gradient
      with the update's sign (from ``update_scale``; the raw update where the learner
      gives no scale), so that c_i of eq. (3) has a gradient's scale: the softmax of
      eq. (5) is not scale-free, and raw updates would sharpen or flatten it with
      lr x steps and favour clients that take more local steps. The global direction is
      the momentum of the aggregated updates w^t - w^{t-1} (eq. (1)); only its
      direction enters eq. (3), and both vectors are taken with the update's sign, so
      c_i > 0 means agreement.
    - c_i^t projects a client's update of round t onto the global momentum direction
      known when the round started, d^{t-1}; where none is known yet (first round
      without initialisation), onto the round's own aggregated update.
    - One unit for the direction: model-parameter differences (update units). The
      initialisation seeds d^0 with the plain mean of the polled raw updates (the FedAvg
      of Algorithm 1's initial round), and every later round adds the raw aggregated
      update w^t - w^{t-1}. With a constant lr x local steps this is the paper's eq. (1)
      recursion d^t = gamma d^{t-1} + g^t (gradient units) times -lr x steps, so its
      direction, the only thing eq. (3) uses, is the paper's. (Seeding d^0 with mean
      gradients and then adding raw updates, as netfl did before, weighted the seed by
      1 / (lr x steps), e.g. 10x at the paper's lr 0.005 and 20 steps.)
    - The softmax of eq. (5) runs over the latest projection C_i of every client (0 for
      a client never observed, as Algorithm 1 initialises C).
    - mu-tilde of eq. (6) is the mean of a client's adjusted rewards over its
      observations (Na et al. 2024 writes the sum over rounds divided by t); n_i counts them (the
      initial poll counts as one); n is the 1-based round number t. A client never
      observed has an infinite bound when alpha > 0.
    - The K clients with the largest bound u_i are selected, as Sec. III-B says;
      Algorithm 1's pseudocode writes sort(C, K, des), by the latest projections alone.
    - The initial poll's updates are not aggregated into the global model.
    """

    requires = frozenset({"update_vector"})

    def __init__(
        self,
        rho: Annotated[float, Field(ge=0, description="alpha = rho t / T, eq. (7)")] = 1.0,
        momentum: Annotated[
            float, Field(ge=0, lt=1, description="gamma of eq. (1) on global updates")
        ] = 0.1,
        rounds: Annotated[int, Field(ge=1, description="T of eq. (7)")] | None = None,
        initial_poll: bool = True,
    ) -> None:
        self.rho = rho
        self.momentum = momentum
        self.rounds = rounds
        self.initial_poll = initial_poll

    @classmethod
    def scenario_problems(cls, scenario: Scenario) -> list[Problem]:
        problems = super().scenario_problems(scenario)
        if scenario.selection.params.get("rounds") is None and scenario.fl.rounds is None:
            problems.append(
                Problem(
                    "selection.params.rounds",
                    "gpfl needs the total number of rounds T for alpha = rho t / T (eq. (7)"
                    " of Na et al. 2024): set fl.rounds or selection.params.rounds",
                )
            )
        return problems

    def setup(self, info: PopulationInfo, rng: np.random.Generator) -> None:
        super().setup(info, rng)
        horizon = self.rounds if self.rounds is not None else info.rounds
        if horizon is None:
            raise ValueError("selection.params.rounds: gpfl needs T (eq. (7)); none given")
        self.horizon = horizon
        n = info.n_clients
        self.latest_projection = np.zeros(n)  # C of Algorithm 1
        self.reward_sum = np.zeros(n)
        self.n_observed = np.zeros(n, dtype=np.int64)
        self.direction: np.ndarray | None = None  # d^{t-1}
        self.last_accuracy = math.nan
        self.last_loss = math.nan
        self._init_pending = self.initial_poll
        self._polled_round: int | None = None
        self._scores: dict[str, dict[int, float]] = {}

    def choose_polled(self, ctx: SelectionContext) -> Sequence[int]:
        if not (self._init_pending and len(ctx.candidates)):
            return ()
        self._polled_round = ctx.round
        return [int(c) for c in ctx.candidates]

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        if self._polled_round == ctx.round:
            self._polled_round = None
            updates = feature(ctx, Feature.UPDATE_VECTOR, "gpfl")
            scale = ctx.features.get(Feature.UPDATE_SCALE)
            self._initialise(ctx.candidates, np.asarray(updates, dtype=float), scale)
        if len(ctx.candidates):
            self._init_pending = False
        scores = self.bounds(ctx.round + 1)[ctx.candidates]
        self._scores = {
            "gpcb": by_client(ctx.candidates, scores),
            "projection": by_client(ctx.candidates, self.latest_projection[ctx.candidates]),
        }
        return [int(ctx.candidates[i]) for i in top_k(scores, ctx.budget, self.rng)]

    def scores(self) -> dict[str, dict[int, float]]:
        """Per-candidate values behind the latest ``select``, for the score log."""
        return self._scores

    def bounds(self, t: int) -> np.ndarray:
        """u_i = mu-tilde_i + alpha sqrt(2 ln n / n_i) for every client (eqs. (6)-(7))."""
        alpha = self.rho * t / self.horizon
        seen = self.n_observed > 0
        u = np.full(len(seen), np.inf if alpha > 0 else 0.0)
        mean_reward = self.reward_sum[seen] / self.n_observed[seen]
        u[seen] = mean_reward + alpha * np.sqrt(2 * math.log(t) / self.n_observed[seen])
        return u

    def observe(self, feedback: RoundFeedback) -> None:
        reported = np.asarray(feedback.completed, dtype=bool)
        if reported.any():
            vectors = signal(feedback, "update_vector", "gpfl")
            global_update = signal(feedback, "global_update", "gpfl")
            direction = self.direction
            if direction is None or not np.any(direction):
                direction = global_update
            # Eq. (3) is linear: the mean gradient's c_i is the raw update's over lr x
            # steps, so the (k, P) updates are read once, by the projection.
            scale = step_scale(feedback.signals.get("update_scale"), len(vectors))
            c = (projection(vectors, direction) / scale)[reported]
            finite = np.isfinite(c)
            factor = adjustment(
                feedback.global_accuracy, self.last_accuracy, feedback.global_loss, self.last_loss
            )
            self._reward(feedback.selected[reported][finite], c[finite], factor)
            previous = self.direction if self.direction is not None else 0.0
            self.direction = self.momentum * previous + global_update  # eq. (1)
        if math.isfinite(feedback.global_accuracy):
            self.last_accuracy = feedback.global_accuracy
        if math.isfinite(feedback.global_loss):
            self.last_loss = feedback.global_loss

    def _initialise(
        self, candidates: np.ndarray, updates: np.ndarray, scale: np.ndarray | None
    ) -> None:
        """Algorithm 1's initial round: d^0 = the mean raw update (update units, as the
        later w^t - w^{t-1}); each client's c_i from its mean gradient, as in observe."""
        finite = np.isfinite(updates).all(axis=1)
        if not finite.any():
            return
        direction = updates[finite].mean(axis=0)
        gradients = mean_gradient(updates, scale)[finite]
        self._reward(candidates[finite], projection(gradients, direction), 1.0)
        self.direction = direction

    def _reward(self, clients: np.ndarray, projections: np.ndarray, factor: float) -> None:
        """Store C_i, then add mu_i = softmax(C)_i x factor (eqs. (5), (8))."""
        self.latest_projection[clients] = projections
        normalised = softmax(self.latest_projection)
        self.reward_sum[clients] += normalised[clients] * factor
        self.n_observed[clients] += 1
