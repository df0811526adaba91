"""k-LinUCB: linear UCB on data contexts, top k (the baseline of Cao et al. 2022).

LinUCB (Li, Chu, Langford, Schapire, WWW 2010) with one parameter vector shared by all
clients, as Cao et al. 2022 describes its k-LinUCB baseline: "assumes a linear relationship between
reward and feature vector, and selects k clients with top k expected rewards. The
observed rewards are then used to renew parameters in the linear function through
regression." The reward is the client utility of eq. (2) of Cao et al. 2022.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import numpy as np
from pydantic import Field

from netfl.selection.base import PopulationInfo, RoundFeedback, SelectionContext, Strategy
from netfl.selection.contextual import ContextBook, utility_rewards
from netfl.selection.ranking import by_client, top_k


class KLinUCB(Strategy):
    """Select the k candidates with the largest x^T theta + alpha sqrt(x^T A^{-1} x).

    Parameters
    ----------
    alpha
        Width of the confidence bound, in reward units. Rewards are utilities on the
        scale of a training loss (about 1 to 3 early in training), so alpha must be of
        that order or the strategy stops exploring after its first rewards; the default
        2 is an assumption (Cao et al. 2022 does not give k-LinUCB's settings).
    reg
        Ridge regularisation lambda: A = lambda I + sum x x^T, b = sum r x, and
        theta = A^{-1} b, the closed-form ridge regression of the observed rewards.

    Notes
    -----
    Contexts are scaled to unit norm (:class:`netfl.selection.contextual.ContextBook`).
    Only clients that reported a loss give a reward.
    """

    requires = frozenset({"data_context", "local_loss"})

    def __init__(
        self,
        alpha: Annotated[float, Field(ge=0, description="confidence-bound width")] = 2.0,
        reg: Annotated[float, Field(gt=0, description="ridge regularisation lambda")] = 1.0,
    ) -> None:
        self.alpha = alpha
        self.reg = reg

    def setup(self, info: PopulationInfo, rng: np.random.Generator) -> None:
        super().setup(info, rng)
        self.book = ContextBook(info.n_clients)
        self.design: np.ndarray | None = None  # A
        self.response: np.ndarray | None = None  # b
        self._scores: dict[str, dict[int, float]] = {}

    def theta(self) -> np.ndarray:
        """The ridge estimate A^{-1} b."""
        assert self.design is not None and self.response is not None
        return np.linalg.solve(self.design, self.response)

    def bounds(self, contexts: np.ndarray) -> np.ndarray:
        """x^T theta + alpha sqrt(x^T A^{-1} x) per row."""
        self._ensure(contexts.shape[1])
        assert self.design is not None
        spread = np.einsum("nd,nd->n", contexts, np.linalg.solve(self.design, contexts.T).T)
        return contexts @ self.theta() + self.alpha * np.sqrt(np.maximum(spread, 0.0))

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        self._scores = {}
        if not len(ctx.candidates):
            return []
        contexts = self.book.record(ctx, "k_linucb")
        bounds = self.bounds(contexts)
        self._scores = {"ucb": by_client(ctx.candidates, bounds)}
        best = top_k(bounds, ctx.budget, self.rng)
        return [int(ctx.candidates[i]) for i in best]

    def scores(self) -> dict[str, dict[int, float]]:
        """Per-candidate values behind the latest ``select``, for the score log."""
        return self._scores

    def observe(self, feedback: RoundFeedback) -> None:
        clients, rewards = utility_rewards(feedback, self.info.n_samples, "k_linucb")
        if not len(clients):
            return
        x = self.book.of(clients)
        self._ensure(x.shape[1])
        assert self.design is not None and self.response is not None
        self.design += x.T @ x
        self.response += x.T @ rewards

    def _ensure(self, dim: int) -> None:
        if self.design is None:
            self.design = self.reg * np.eye(dim)
            self.response = np.zeros(dim)
