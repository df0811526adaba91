"""Power-of-choice selection: pow-d and its communication-free variant rpow-d.

Cho, Wang, Joshi, "Client Selection in Federated Learning: Convergence Analysis and
Power-of-Choice Selection Strategies" (2020), as summarised in Cho et al. 2020
Sec. II-B: the server draws a candidate set A of d >= m clients without replacement with
probability p_k = D_k / sum_j D_j, and selects the m clients of A with the largest local
loss F_k(w) of the current global model.

- ``pow_d`` polls the d clients for F_k(w): one extra exchange per round (global model
  down, one number up), which the server simulates (see ``Strategy.choose_polled``).
- ``rpow_d`` does not poll: it ranks A by each client's mean local training loss from
  its last participation (stale, and noisy; Fig. 1 of Cho et al. 2020, whose text calls it
  pi_tpow-d). It is not cpow-d, the computation-efficient variant of Cho et al., which
  still polls A and has each client estimate its loss on a mini-batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
from pydantic import Field

from netfl.errors import Problem
from netfl.features import Feature
from netfl.selection.base import PopulationInfo, RoundFeedback, SelectionContext, Strategy
from netfl.selection.ranking import by_client, draw_by_size, top_k
from netfl.selection.signals import feature

if TYPE_CHECKING:
    from netfl.config import Scenario

PollSize = Annotated[
    int | None,
    Field(
        ge=1,
        description=(
            "size d of the candidate set (null: 2 m, m the clients aggregated per round,"
            " as in Cho et al. 2020 Fig. 1: d = 2m)"
        ),
    ),
]


class _PowerOfChoice(Strategy):
    """The candidate-set draw shared by pow-d and rpow-d."""

    def __init__(self, d: PollSize = None) -> None:
        self.d = d

    def setup(self, info: PopulationInfo, rng: np.random.Generator) -> None:
        super().setup(info, rng)
        self._scores: dict[str, dict[int, float]] = {}

    def scores(self) -> dict[str, dict[int, float]]:
        """Per-candidate values behind the latest ``select``, for the score log."""
        return self._scores

    def poll_size(self, m: int) -> int:
        """d, or 2 m when not set: Cho et al. 2020 (Fig. 1, "d = 2m") size the candidate
        set against m, the clients aggregated per round (``ctx.target``), not against the
        selection budget, which over-selection inflates to ceil(m (1 + o))."""
        return self.d if self.d is not None else 2 * m

    def draw(self, ctx: SelectionContext) -> np.ndarray:
        """The candidate set A: min(d, n) candidates drawn by p_k without replacement."""
        m = ctx.target if ctx.target is not None else ctx.budget
        return draw_by_size(ctx.candidates, ctx.n_samples, self.poll_size(m), self.rng)

    @classmethod
    def scenario_problems(cls, scenario: Scenario) -> list[Problem]:
        problems = super().scenario_problems(scenario)
        d: Any = scenario.selection.params.get("d")
        m = scenario.fl.clients_per_round
        if isinstance(d, int) and d < m:
            problems.append(
                Problem(
                    "selection.params.d",
                    f"d = {d} is smaller than fl.clients_per_round = {m}: power-of-choice"
                    " draws d candidates and selects m of them, so d must be at least m",
                )
            )
        return problems


class PowD(_PowerOfChoice):
    """pow-d: poll d clients drawn by p_k for their current loss, select the m largest.

    Parameters
    ----------
    d
        Size of the polled set (d >= m); null means d = 2m, m the clients aggregated per round
        (Cho et al. 2020, Fig. 1).

    Notes
    -----
    ``choose_polled`` draws the set; the server polls it and passes the losses in
    ``ctx.features["loss"]`` (NaN for a polled client that did not answer: those rank
    last, so the round still selects m when d >= m). If the server calls ``select``
    without having asked ``choose_polled`` in that round but provides ``"loss"`` for the
    candidates, the set is drawn at selection instead (same algorithm).
    """

    requires = frozenset({"poll_loss"})

    def setup(self, info: PopulationInfo, rng: np.random.Generator) -> None:
        super().setup(info, rng)
        self._polled: tuple[int, np.ndarray] | None = None

    def choose_polled(self, ctx: SelectionContext) -> Sequence[int]:
        polled = self.draw(ctx)
        self._polled = (ctx.round, polled)
        return [int(c) for c in polled]

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        if not len(ctx.candidates):
            self._scores = {}
            return []
        loss = feature(ctx, Feature.LOSS, "pow_d")
        if self._polled is not None and self._polled[0] == ctx.round:
            polled = self._polled[1]
        else:
            polled = self.draw(ctx)
        self._polled = None
        in_set = np.flatnonzero(np.isin(ctx.candidates, polled))
        self._scores = {"loss": by_client(ctx.candidates[in_set], loss[in_set])}
        best = top_k(loss[in_set], ctx.budget, self.rng)
        return [int(ctx.candidates[in_set[i]]) for i in best]


class RPowD(_PowerOfChoice):
    """rpow-d: pow-d ranked by each client's stale local loss, no polling.

    Parameters
    ----------
    d
        Size of the candidate set (d >= m); null means 2 m.

    Notes
    -----
    The stale loss of a client is the mean local training loss it reported when it last
    completed a round (``feedback.local_loss``). A client that never reported one ranks
    as +inf, so the strategy tries every client once before trusting stale values; ties
    are broken at random.
    """

    requires = frozenset({"local_loss"})

    def setup(self, info: PopulationInfo, rng: np.random.Generator) -> None:
        super().setup(info, rng)
        self.stale_loss = np.full(info.n_clients, np.inf)

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        drawn = self.draw(ctx)
        self._scores = {"stale_loss": by_client(drawn, self.stale_loss[drawn])}
        best = top_k(self.stale_loss[drawn], ctx.budget, self.rng)
        return [int(drawn[i]) for i in best]

    def observe(self, feedback: RoundFeedback) -> None:
        reported = np.isfinite(feedback.local_loss)
        self.stale_loss[feedback.selected[reported]] = feedback.local_loss[reported]
