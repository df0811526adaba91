"""UCB-CS: discounted-UCB client selection on local losses (Cho et al. 2020).

Cho, Gupta, Joshi, Yağan, "Bandit-based Communication-Efficient Client Selection
Strategies for Federated Learning". Clients are arms; the reward of a selected client is
its mean local training loss over its tau local iterations. Each client keeps a
discounted cumulative loss L and a discounted count N; the server selects the m clients
with the largest index A = p_k L / N + U (eqs. (4)-(7), Algorithm 1). No extra
communication: the loss rides on the client's upload.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated

import numpy as np
from pydantic import Field

from netfl.selection.base import PopulationInfo, RoundFeedback, SelectionContext, Strategy
from netfl.selection.ranking import by_client, top_k
from netfl.selection.signals import signal


class UCBCS(Strategy):
    """Discounted UCB on local losses, weighted by data size (Algorithm 1 of Cho et al. 2020).

    Parameters
    ----------
    gamma
        Discount 0 <= gamma <= 1 of eqs. (5)-(7): 1 weighs every past loss equally, 0
        keeps only the latest. The paper uses 0.7.

    Notes
    -----
    - The discount is applied once per communication round (Algorithm 1, line 8), i.e.
      t - t' in eqs. (5)-(7) counts rounds.
    - Only a client that reported its loss adds to L and N: a selected client that
      dropped out or missed the deadline gave no sample.
    - sigma_t (eq. (7)) is the largest, over the clients that reported in the latest
      round, of the standard deviation of that client's minibatch losses over its tau
      local iterations (``feedback.signals["local_loss_std"]``); it keeps its previous
      value after a round in which nobody reported, and is 0 before the first report.
    - p_k = D_k / sum_j D_j over the whole population (eq. (1)).
    - A client never observed (N = 0) has A = +inf: unselected clients come first, in
      random order; all other ties are broken at random too (Algorithm 1, line 7).
    - A is recomputed from eqs. (4)-(7) for every client each round. Algorithm 1
      instead stores A only for the clients that just reported (line 6) and multiplies
      the stored list by gamma (line 8), which would make a long-unselected client's
      index decay, while the text says its exploration term U "gets larger" (N
      shrinks); the equations and the text agree, so netfl follows them.
    """

    requires = frozenset({"local_loss"})

    def __init__(
        self,
        gamma: Annotated[
            float, Field(ge=0, le=1, description="discount of eqs. (5)-(7), per round")
        ] = 0.7,
    ) -> None:
        self.gamma = gamma

    def setup(self, info: PopulationInfo, rng: np.random.Generator) -> None:
        super().setup(info, rng)
        sizes = np.asarray(info.n_samples, dtype=float)
        self.p = sizes / sizes.sum() if sizes.sum() > 0 else np.full(len(sizes), 1 / len(sizes))
        self.discounted_loss = np.zeros(info.n_clients)  # L_t(gamma, k), eq. (5)
        self.discounted_count = np.zeros(info.n_clients)  # N_t(gamma, k), eq. (6)
        self.discounted_rounds = 0.0  # T_t(gamma), eq. (7)
        self.sigma = 0.0
        self._scores: dict[str, dict[int, float]] = {}

    def indices(self) -> np.ndarray:
        """A_t(gamma, k) of eq. (4) for every client (+inf where N = 0)."""
        n = self.discounted_count
        seen = n > 0
        index = np.full(len(n), np.inf)
        log_t = math.log(self.discounted_rounds) if self.discounted_rounds > 1 else 0.0
        exploit = self.p[seen] * self.discounted_loss[seen] / n[seen]
        explore = np.sqrt(2 * self.sigma**2 * log_t / n[seen])  # U_t, eq. (7)
        index[seen] = exploit + explore
        return index

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        scores = self.indices()[ctx.candidates]
        self._scores = {"ucb": by_client(ctx.candidates, scores)}
        return [int(ctx.candidates[i]) for i in top_k(scores, ctx.budget, self.rng)]

    def scores(self) -> dict[str, dict[int, float]]:
        """Per-candidate values behind the latest ``select``, for the score log."""
        return self._scores

    def observe(self, feedback: RoundFeedback) -> None:
        g = self.gamma
        self.discounted_loss *= g
        self.discounted_count *= g
        self.discounted_rounds = g * self.discounted_rounds + 1
        reported = np.isfinite(feedback.local_loss)
        if not reported.any():
            return
        clients = feedback.selected[reported]
        self.discounted_loss[clients] += feedback.local_loss[reported]
        self.discounted_count[clients] += 1
        std = signal(feedback, "local_loss_std", "ucb_cs")[reported]
        if np.isfinite(std).any():
            self.sigma = float(np.nanmax(std))
