"""What the contextual bandits (NCCB, k-LinUCB) share: remembered contexts and rewards.

Contexts arrive with the resource request (``ctx.features["context"]``, one row per
candidate, computed on the device: :mod:`netfl.selection.context`); the strategies keep
each client's latest one, scaled to unit norm as NeuralUCB and LinUCB assume
(|x| <= 1). The reward of a client is its utility, eq. (2) of Cao et al. 2022.

For the server: a context is computed once per client, on the device, before it first
answers a resource request, and travels with that answer (n values of
``context.BITS_PER_CONTEXT_VALUE`` bits each); after that it is known to the server and
repeats at no cost in every ``ctx.features["context"]``.
"""

from __future__ import annotations

import numpy as np

from netfl.features import Feature
from netfl.selection.base import RoundFeedback, SelectionContext
from netfl.selection.oort import statistical_utility
from netfl.selection.signals import feature, signal


class ContextBook:
    """The latest unit-norm context of every client seen so far."""

    def __init__(self, n_clients: int) -> None:
        self.n_clients = n_clients
        self.contexts: np.ndarray | None = None  # (n_clients, D), NaN rows unseen

    def record(self, ctx: SelectionContext, strategy: str) -> np.ndarray:
        """Store the candidates' contexts; return them (unit norm), aligned with candidates."""
        raw = feature(ctx, Feature.CONTEXT, strategy).reshape(len(ctx.candidates), -1)
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        unit = np.divide(raw, norms, out=np.zeros_like(raw), where=norms > 0)
        if self.contexts is None:
            self.contexts = np.full((self.n_clients, unit.shape[1]), np.nan)
        if unit.shape[1] != self.contexts.shape[1]:
            raise ValueError(
                f"{strategy}: contexts changed size from {self.contexts.shape[1]} to"
                f" {unit.shape[1]} values"
            )
        self.contexts[ctx.candidates] = unit
        return unit

    def of(self, clients: np.ndarray) -> np.ndarray:
        """Stored contexts of ``clients`` (they must have been seen)."""
        assert self.contexts is not None
        return self.contexts[clients]


def utility_rewards(
    feedback: RoundFeedback, n_samples: np.ndarray, strategy: str
) -> tuple[np.ndarray, np.ndarray]:
    """``(clients, rewards)`` of the clients that reported in a round, eq. (2) of 004.

    U(i) = |D_i| sqrt(mean_{d in D_i} Loss(d)^2), the root mean square of the training
    losses times the data size (the same utility as Oort's). The server sees the mean
    local loss and its standard deviation (``signals["local_loss_std"]``), so the mean
    square is mean^2 + std^2: exact when the std is the spread of the per-sample losses,
    an underestimate when it is the spread of minibatch means.
    Rewards are divided by the population's mean data size, to keep them near the
    scale of a loss (a constant factor; the ranking of clients is unchanged).
    """
    reported = np.isfinite(feedback.local_loss)
    clients = feedback.selected[reported]
    if not reported.any():
        return clients, np.zeros(0)
    mean = feedback.local_loss[reported]
    std = signal(feedback, "local_loss_std", strategy)[reported]
    sizes = np.asarray(n_samples, dtype=float)
    scale = sizes.mean() if sizes.mean() > 0 else 1.0
    return clients, statistical_utility(sizes[clients] / scale, mean, std)
