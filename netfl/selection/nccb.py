"""NCCB: neural contextual combinatorial bandit selection (Cao et al. 2022).

Cao, Pan, Zhu, Liu, "Birds of a Feather Help: Context-aware Client Selection for
Efficient Federated Learning". Each client reports a privacy-preserving context of its
data, computed on the device with locality-sensitive hashing
(:mod:`netfl.selection.context`, eqs. (5)-(7)). The server clusters the clients by
context; while fewer than m clusters are explored, it picks one random client from
each of m random unexplored clusters; the rest of the budget goes to the clients with
the largest neural upper confidence bound on their utility (eqs. (9)-(14)), the
network being trained on the observed utilities (eq. (2)). Algorithm 1 of Cao et al. 2022.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import numpy as np
from pydantic import Field

from netfl.selection.base import PopulationInfo, RoundFeedback, SelectionContext, Strategy
from netfl.selection.clustering import kmeans, nearest
from netfl.selection.contextual import ContextBook, utility_rewards
from netfl.selection.neural_ucb import NeuralUCB
from netfl.selection.ranking import by_client, top_k


class NCCB(Strategy):
    """Cluster exploration, then neural UCB on contexts (Algorithm 1 of Cao et al. 2022).

    Parameters
    ----------
    clusters
        Number c of context clusters.
    threshold
        Exploring threshold k: a cluster is unexplored while its counter Ct <= k.
    width, depth
        Width w (even) and number of layers L of the reward network (eq. (9)).
    reg
        lambda of eq. (10) (and Z = lambda I at the start, eq. (14)).
    gamma
        Scaling factor of the confidence bound (eq. (13)).
    train_steps, lr
        Gradient-descent steps and step size of each retraining (line 23).
    max_history
        The network is fitted to at most this many most recent (context, utility) pairs.

    Notes
    -----
    - Clustering (k-means++, Lloyd) runs once, on the contexts of the first round's
      candidates (all clients when every client answers the resource request, as in the
      paper); a client first seen later joins its nearest cluster. With fewer distinct
      contexts than c, there are fewer clusters.
    - Only clusters with a candidate available this round count as unexplored (the
      server can only pick available clients); the counter of a cluster grows by one
      for each of its clients selected (line 24), whether or not it reported back.
    - The utility of eq. (2) is estimated from the mean and spread of the local
      training losses (:func:`netfl.selection.contextual.utility_rewards`); a client
      that did not report gives no reward and does not enter Z.
    """

    requires = frozenset({"data_context", "local_loss"})

    def __init__(
        self,
        clusters: Annotated[int, Field(ge=1, description="number of clusters c")] = 5,
        threshold: Annotated[int, Field(ge=0, description="exploring threshold k")] = 10,
        width: Annotated[int, Field(ge=2, multiple_of=2, description="network width w")] = 32,
        depth: Annotated[int, Field(ge=2, description="network layers L")] = 2,
        reg: Annotated[float, Field(gt=0, description="lambda of eq. (10)")] = 0.1,
        gamma: Annotated[float, Field(ge=0, description="bound scale, eq. (13)")] = 1.0,
        train_steps: Annotated[int, Field(ge=0, description="steps per retraining")] = 50,
        lr: Annotated[float, Field(gt=0, description="gradient-descent step size")] = 0.05,
        max_history: Annotated[int, Field(ge=1, description="samples fitted at most")] = 5000,
    ) -> None:
        self.clusters = clusters
        self.threshold = threshold
        self.width = width
        self.depth = depth
        self.reg = reg
        self.gamma = gamma
        self.train_steps = train_steps
        self.lr = lr
        self.max_history = max_history

    def setup(self, info: PopulationInfo, rng: np.random.Generator) -> None:
        super().setup(info, rng)
        self.book = ContextBook(info.n_clients)
        self.cluster_of = np.full(info.n_clients, -1, dtype=np.int64)
        self.centroids: np.ndarray | None = None
        self.counters = np.zeros(0, dtype=np.int64)  # Ct(C_i)
        self.estimator: NeuralUCB | None = None
        self.history_x = np.zeros((0, 0))  # the latest max_history contexts played
        self.history_r = np.zeros(0)  # and their utilities
        self._scores: dict[str, dict[int, float]] = {}

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        self._scores = {}
        if not len(ctx.candidates):
            return []
        contexts = self.book.record(ctx, "nccb")
        labels = self._clusters(ctx.candidates, contexts)
        self._scores = {"cluster": by_client(ctx.candidates, labels)}
        budget = min(ctx.budget, len(ctx.candidates))
        available = np.unique(labels)
        unexplored = available[self.counters[available] <= self.threshold]  # line 7
        picked_clusters = self.rng.permutation(unexplored)[:budget]  # line 8
        chosen = [int(self.rng.choice(np.flatnonzero(labels == c))) for c in picked_clusters]
        if len(chosen) < budget:  # lines 13-20
            rest = np.setdiff1d(np.arange(len(ctx.candidates)), chosen)
            bounds = self._network(contexts.shape[1]).bound(contexts[rest])
            self._scores["ucb"] = by_client(ctx.candidates[rest], bounds)
            chosen += [int(rest[i]) for i in top_k(bounds, budget - len(chosen), self.rng)]
        return [int(ctx.candidates[i]) for i in chosen]

    def scores(self) -> dict[str, dict[int, float]]:
        """Per-candidate values behind the latest ``select``, for the score log."""
        return self._scores

    def observe(self, feedback: RoundFeedback) -> None:
        played = self.cluster_of[feedback.selected]
        np.add.at(self.counters, played[played >= 0], 1)  # line 24
        clients, rewards = utility_rewards(feedback, self.info.n_samples, "nccb")
        if not len(clients):
            return
        x = self.book.of(clients)
        network = self._network(x.shape[1])
        network.add_to_design(x)  # eq. (14), gradients at theta_{t-1}
        known = self.history_x.reshape(-1, x.shape[1])
        self.history_x = np.concatenate([known, x])[-self.max_history :]
        self.history_r = np.concatenate([self.history_r, rewards])[-self.max_history :]
        network.fit(self.history_x, self.history_r, self.train_steps, self.lr)  # line 23

    def _clusters(self, candidates: np.ndarray, contexts: np.ndarray) -> np.ndarray:
        """Cluster labels of the candidates, clustering on first use (lines 1-3)."""
        if self.centroids is None:
            labels, self.centroids = kmeans(contexts, self.clusters, self.rng)
            self.cluster_of[candidates] = labels
            self.counters = np.zeros(len(self.centroids), dtype=np.int64)
        new = self.cluster_of[candidates] < 0
        if new.any():
            self.cluster_of[candidates[new]] = nearest(contexts[new], self.centroids)
        return self.cluster_of[candidates]

    def _network(self, dim: int) -> NeuralUCB:
        if self.estimator is None:
            self.estimator = NeuralUCB(dim, self.width, self.depth, self.reg, self.gamma, self.rng)
        return self.estimator
