"""RBCS-F: reputation-based client selection with fairness (Huang et al. 2021).

Per round t (Algorithm 2 of Huang et al. 2021):

1. contexts c_{t,n} = [1/mu_{t,n}, s_{t,n}, M/B_{t,n}] of the candidates (Sec. 4.4.2);
2. per client, the ridge-regression estimate of theta*_n (eqs. (17)-(18)) and the lower
   confidence bound of its exchange time (eq. (19)):
   tau_bar = max{c^T theta_hat - alpha_t sqrt(c^T H^-1 c), 0};
3. the selection minimising V max tau_bar - sum Z over sets of min(m, #available)
   available clients (problem P4, eq. (21)), by the divide-and-conquer Algorithm 1;
4. after the round: virtual queues Z_{t+1,n} = [Z_{t,n} + beta - x_{t,n}]^+ for every
   client (eq. (6)), and H += c c^T, b += tau c for the selected clients whose exchange
   time tau was observed (lines 15-16).

Sign of s: Huang et al. 2021 describes s_{t,n} as "if client n has participated in the last round",
but its coefficient tau^s is the cold-start (data preparation) time that clients "who did
not undertake the previous round" pay. netfl follows the model: s = 1 when the client was
*not* selected in the previous round (feature ``cold_start``), so c^T theta* adds tau^s
exactly for cold starts.

The clamp at 0 of the lower confidence bound follows eq. (19); Algorithm 2 line 9 writes
the same bound without it. netfl keeps the clamp: an exchange time is non-negative, and
without it a client whose confidence width still exceeds its estimate (its first few
observations) would get a negative bound that makes it look faster than a client known to
take 0 s. The two forms select alike once every width is below its estimate; the RBCS-F
reproduction in docs/reproductions.md uses the clamp.

A selected client whose exchange time was not observed (missed the deadline, dropped
out) counts as selected in its virtual queue (x = 1, the decision) but adds no sample to
its regression.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Literal

import numpy as np
from pydantic import Field

from netfl.errors import Problem, ScenarioWarning
from netfl.selection.base import PopulationInfo, RoundFeedback, Scores, SelectionContext, Strategy
from netfl.selection.observations import BANDWIDTH_HZ, COLD_START, MU, require_feature
from netfl.selection.ranking import by_client

if TYPE_CHECKING:
    from netfl.config import Scenario


def lemma1_alpha(
    t: int, ridge_lambda: float, noise_r: float, theta_s: float, context_l: float, delta: float
) -> float:
    """alpha_t = R sqrt(3 log((1 + t L^2 / lambda) / delta)) + lambda^(1/2) S (Lemma 1 of Huang et
    al. 2021)."""
    inner = (1.0 + t * context_l**2 / ridge_lambda) / delta
    return noise_r * math.sqrt(3.0 * math.log(inner)) + math.sqrt(ridge_lambda) * theta_s


def lower_confidence_bounds(
    h: np.ndarray, b: np.ndarray, contexts: np.ndarray, alpha_t: float
) -> tuple[np.ndarray, np.ndarray]:
    """(tau_hat, tau_bar) per client from its ridge statistics, eqs. (18)-(19) of Huang et al. 2021.

    ``h`` is (n, d, d), ``b`` (n, d), ``contexts`` (n, d). theta_hat = H^-1 b, tau_hat =
    c^T theta_hat, tau_bar = max{tau_hat - alpha_t sqrt(c^T H^-1 c), 0}.
    """
    if len(contexts) == 0:
        return np.zeros(0), np.zeros(0)
    theta_hat = np.linalg.solve(h, b[..., None])[..., 0]
    h_inv_c = np.linalg.solve(h, contexts[..., None])[..., 0]
    tau_hat = np.einsum("nd,nd->n", contexts, theta_hat)
    width = np.sqrt(np.maximum(np.einsum("nd,nd->n", contexts, h_inv_c), 0.0))
    return tau_hat, np.maximum(tau_hat - alpha_t * width, 0.0)


def divide_and_conquer(tau_bar: np.ndarray, backlog: np.ndarray, k: int, v: float) -> np.ndarray:
    """Algorithm 1 of Huang et al. 2021: positions of the set solving P4 (eq. (21)) among the given
    clients.

    For each candidate bound tau_max (every distinct tau_bar), the sub-problem P4-SUB
    (eq. (22)) takes the k clients of largest backlog Z among those with tau_bar <=
    tau_max; the answer is the sub-solution with the smallest V max tau_bar - sum Z. Ties
    in Z keep the input order (callers shuffle to break them at random). O(n^2) numpy.
    """
    n = len(tau_bar)
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    by_backlog = np.argsort(-backlog, kind="stable")  # the list A_t
    bounds = np.unique(tau_bar)
    qualified = tau_bar[by_backlog][None, :] <= bounds[:, None]
    taken = qualified & (np.cumsum(qualified, axis=1) <= k)
    full = taken.sum(axis=1) == k
    worst = np.where(taken, tau_bar[by_backlog][None, :], -np.inf).max(axis=1)
    objective = v * worst - np.where(taken, backlog[by_backlog][None, :], 0.0).sum(axis=1)
    best = int(np.argmin(np.where(full, objective, np.inf)))
    return by_backlog[taken[best]]


class RBCSF(Strategy):
    """RBCS-F of Huang et al. 2021 (Algorithm 2); see the module docstring.

    Parameters
    ----------
    V
        Penalty factor V of the drift-plus-cost (eq. (10)): larger favours short rounds,
        smaller favours fairness.
    beta
        Guaranteed selection rate of every client (eq. (2)); the queues can only be stable
        if beta * n_clients <= m (times the availability).
    m
        Clients per round; default ``fl.clients_per_round`` (it cannot exceed it).
    ridge_lambda
        Ridge-regression regulariser lambda (H_0 = lambda I, eq. (18)).
    alpha
        Exploration factor alpha_t, constant (Table 2 of Huang et al. 2021: 0.1).
    alpha_schedule
        ``"constant"`` (alpha) or ``"lemma1"``: alpha_t of Lemma 1 from ``noise_r`` (R),
        ``theta_bound`` (S >= ||theta*||), ``context_bound`` (L >= ||c||) and ``delta``.
    noise_r
        R of Lemma 1 (Huang et al. 2021): the sub-Gaussian scale of the exchange-time noise, seconds
        (with ``alpha_schedule: lemma1``).
    theta_bound
        S of Lemma 1: a bound on ||theta*|| (with ``alpha_schedule: lemma1``).
    context_bound
        L of Lemma 1: a bound on the contexts' norm ||c|| (with ``alpha_schedule: lemma1``).
    delta
        delta of Lemma 1: the bound holds with probability 1 - delta (with
        ``alpha_schedule: lemma1``).
    model_size_bits
        M in the context M/B; default the scenario's model size.
    """

    def __init__(
        self,
        V: Annotated[float, Field(ge=0)] = 100.0,  # the paper's name
        beta: Annotated[float, Field(ge=0, le=1)] = 0.15,
        m: Annotated[int, Field(ge=1)] | None = None,
        ridge_lambda: Annotated[float, Field(gt=0)] = 1.0,
        alpha: Annotated[float, Field(ge=0)] = 0.1,
        alpha_schedule: Literal["constant", "lemma1"] = "constant",
        noise_r: Annotated[float, Field(ge=0)] = 1.0,
        theta_bound: Annotated[float, Field(ge=0)] = 1.0,
        context_bound: Annotated[float, Field(gt=0)] = 1.0,
        delta: Annotated[float, Field(gt=0, lt=1)] = 0.1,
        model_size_bits: Annotated[float, Field(gt=0)] | None = None,
    ) -> None:
        self.v = V
        self.beta = beta
        self.m = m
        self.ridge_lambda = ridge_lambda
        self.alpha = alpha
        self.alpha_schedule = alpha_schedule
        self._lemma1 = (noise_r, theta_bound, context_bound, delta)
        self.model_size_bits = model_size_bits
        self.may_select_fewer = m is not None

    def setup(self, info: PopulationInfo, rng: np.random.Generator) -> None:
        super().setup(info, rng)
        bits = self.model_size_bits or info.model_size_bits
        if bits is None:
            raise ValueError(
                "rbcs_f needs the model size M for its context M/B: set"
                " selection.params.model_size_bits or fl.model_size_bits"
            )
        self.bits = float(bits)
        n = info.n_clients
        self.h = np.tile(self.ridge_lambda * np.eye(3), (n, 1, 1))
        self.b = np.zeros((n, 3))
        self.backlog = np.zeros(n)
        self.selected_last = np.zeros(n, dtype=bool)
        self._contexts: dict[int, np.ndarray] = {}
        self._scores: dict[str, dict[int, float]] = {}

    def alpha_t(self, round_: int) -> float:
        """Exploration factor for round ``round_`` (0-based; the paper's t = round_ + 1)."""
        if self.alpha_schedule == "constant":
            return self.alpha
        return lemma1_alpha(round_ + 1, self.ridge_lambda, *self._lemma1)

    def contexts(self, ctx: SelectionContext) -> np.ndarray:
        """c_{t,n} = [1/mu, s, M/B] per candidate (Sec. 4.4.2 of Huang et al. 2021), shape (n,
        3)."""
        mu = require_feature(ctx, MU, "rbcs_f")
        bandwidth_hz = require_feature(ctx, BANDWIDTH_HZ, "rbcs_f")
        if COLD_START in ctx.features:
            cold = require_feature(ctx, COLD_START, "rbcs_f")
        else:  # the strategy knows whom it selected last round
            cold = (~self.selected_last[ctx.candidates]).astype(float)
        return np.column_stack([1.0 / mu, cold, self.bits / bandwidth_hz])

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        self._scores = {"backlog": by_client(np.arange(len(self.backlog)), self.backlog)}
        if len(ctx.candidates) == 0:  # nobody available: nothing to estimate
            return []
        shuffle = self.rng.permutation(len(ctx.candidates))  # random tie-breaking
        candidates = ctx.candidates[shuffle]
        contexts = self.contexts(ctx)[shuffle]
        tau_hat, tau_bar = lower_confidence_bounds(
            self.h[candidates], self.b[candidates], contexts, self.alpha_t(ctx.round)
        )
        k = min(ctx.budget, self.m or ctx.budget, len(candidates))
        picked = divide_and_conquer(tau_bar, self.backlog[candidates], k, self.v)
        chosen = candidates[picked]
        self._contexts = dict(zip(chosen.tolist(), contexts[picked], strict=True))
        self._scores["tau_hat"] = by_client(candidates, tau_hat)
        self._scores["tau_bar"] = by_client(candidates, tau_bar)
        return [int(c) for c in chosen]

    def observe(self, feedback: RoundFeedback) -> None:
        x = np.zeros(self.info.n_clients)
        x[feedback.selected] = 1.0
        self.backlog = np.maximum(self.backlog + self.beta - x, 0.0)  # eq. (6)
        taus = feedback.exchange_time_s.tolist()
        for client, tau in zip(feedback.selected.tolist(), taus, strict=True):
            c = self._contexts.get(client)
            if c is None or not math.isfinite(tau):
                continue
            self.h[client] += np.outer(c, c)
            self.b[client] += tau * c
        self.selected_last = x > 0
        self._contexts = {}

    def scores(self) -> Scores:
        """``backlog`` Z_{t,n} of every client when selecting, ``tau_hat`` and ``tau_bar``
        (eq. (19)) of the candidates."""
        return self._scores

    @classmethod
    def scenario_problems(cls, scenario: Scenario) -> list[Problem]:
        problems = super().scenario_problems(scenario)
        if not stable_fairness(scenario):
            warnings.warn(_unstable(scenario), ScenarioWarning, stacklevel=2)
        m = scenario.selection.params.get("m")
        n_clients = scenario.devices.n_clients
        if isinstance(m, int) and m > n_clients:
            message = f"{m} is more than the population ({n_clients} devices)"
        elif isinstance(m, int) and m > scenario.fl.clients_per_round:
            message = (
                f"{m} is more than fl.clients_per_round ({scenario.fl.clients_per_round}),"
                " the most clients the server lets a strategy select"
            )
        else:
            return problems
        return [*problems, Problem("selection.params.m", message)]


def selected_a_round(scenario: Scenario) -> float:
    """E|S_t|: the clients RBCS-F selects a round, min(m, the available candidates) (P2's
    first constraint, Huang et al. 2021 eq. (12)), the candidates being the available
    share of the clients asked."""
    params = scenario.selection.params
    m = params.get("m") or scenario.fl.clients_per_round
    devices = scenario.devices
    asked = math.ceil(devices.n_clients * scenario.fl.request_fraction)
    return min(float(m), asked * devices.mean_availability)


def stable_fairness(scenario: Scenario) -> bool:
    """Whether RBCS-F's virtual queues can be mean rate stable: their arrivals, beta a
    client a round, at most their service, the clients selected (Huang et al. 2021 eq.
    (7): sum_n beta <= E|S_t|; Theorem 1 needs it for the fairness constraint (2))."""
    beta = float(scenario.selection.params.get("beta", 0.15))
    return beta * scenario.devices.n_clients <= selected_a_round(scenario) + 1e-9


def _unstable(scenario: Scenario) -> str:
    n = scenario.devices.n_clients
    beta = float(scenario.selection.params.get("beta", 0.15))
    served = selected_a_round(scenario)
    return (
        f"selection.params.beta: beta x devices = {beta * n:.3g} is more than the clients"
        f" RBCS-F selects a round (min(m, available candidates) = {served:.3g}), so its"
        " fairness queues cannot be mean rate stable (Huang et al. 2021 eq. (7), Theorem 1):"
        " they grow every round and their backlogs, not the exchange times, decide the"
        f" selection; beta <= {served / n:.3g} keeps them stable"
    )
