"""The learning signals the server passes to strategies, asked from the learner.

A strategy declares what it needs in ``Strategy.requires``; the learner computes only
that. Where the learner has no answer (``learning: none``) the signals are NaN.

- after a round, in ``RoundFeedback.signals``, aligned with the selection (NaN rows for
  clients whose update did not arrive): ``local_loss_std`` (the spread of the local
  minibatch losses, UCB-CS eq. (7)); with ``update_vector`` required, ``update_vector``
  (w_local - w_global, one row per client), ``update_scale`` (lr x local SGD steps of
  each row, NaN if the learner does not say) and ``global_update`` (the aggregate's change
  of the global model: the learner's ``global_update()``, or else the data-size-weighted
  mean of the arrived updates, which is FedAvg's change);
- for a poll, as candidate features: ``loss`` from ``client_losses`` (``poll_loss``), or a
  local update's ``update_vector`` and ``update_scale`` (``update_vector``) of the polled
  clients that answered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from netfl.learning.interface import Learner, wants_for


class LearningSignals:
    """What the server asks the learner for, on behalf of the strategy."""

    def __init__(self, learner: Learner, requires: frozenset[str]) -> None:
        self.learner = learner
        self.wants = wants_for(requires)

    def local_update(
        self,
        round: int,
        clients: np.ndarray,
        wants: frozenset[str],
        steps: np.ndarray | None = None,
    ) -> Any:
        """The clients' local updates (the first ``steps[k]`` steps under partial work)."""
        if steps is None:
            return self.learner.local_update(round, clients, want=wants)
        return self.learner.local_update(round, clients, want=wants, steps=steps)

    def polled(self, round: int, clients: np.ndarray, signal: str) -> dict[str, np.ndarray]:
        """The answers of the polled ``clients`` as features: ``loss`` (k,), or
        ``update_vector`` (k, P) with ``update_scale`` (k,)."""
        if signal == "poll_loss":
            if len(clients) == 0:
                return {"loss": np.full(0, np.nan)}
            return {"loss": np.asarray(self.learner.client_losses(clients), dtype=float)}
        result = self.local_update(round, clients, frozenset({"update_vector"}))
        vectors = getattr(result, "update_vectors", None)
        if vectors is None:
            vectors = np.full((len(clients), 1), np.nan)
        return {
            "update_vector": np.asarray(vectors, dtype=float).reshape(len(clients), -1),
            "update_scale": _scale(result, len(clients)),
        }

    def feedback(self, result: Any, selected: Sequence[int]) -> dict[str, np.ndarray]:
        """``RoundFeedback.signals`` for the selection, from the arrived clients' result."""
        row = {int(c): i for i, c in enumerate(np.asarray(result.clients).tolist())}
        index = np.array([row.get(int(c), -1) for c in selected], dtype=np.int64)
        arrived = index >= 0
        std = np.full(len(selected), np.nan)
        std[arrived] = np.asarray(result.loss_std, dtype=float)[index[arrived]]
        signals: dict[str, np.ndarray] = {"local_loss_std": std}
        vectors = getattr(result, "update_vectors", None)
        if "update_vector" in self.wants and vectors is not None:
            vectors = np.asarray(vectors, dtype=float).reshape(len(row), -1)
            rows = np.full((len(selected), vectors.shape[1]), np.nan)
            rows[arrived] = vectors[index[arrived]]
            signals["update_vector"] = rows
            scale = np.full(len(selected), np.nan)
            scale[arrived] = _scale(result, len(row))[index[arrived]]
            signals["update_scale"] = scale
            signals["global_update"] = self._global_update(result, vectors)
        return signals

    def _global_update(self, result: Any, vectors: np.ndarray) -> np.ndarray:
        """w^t - w^{t-1}: the learner's own where it has one, else FedAvg's weighted mean."""
        own = getattr(self.learner, "global_update", None)
        if own is not None:
            return np.asarray(own(), dtype=float)
        weights = np.asarray(result.n_samples, dtype=float)
        total = weights.sum()
        return weights @ vectors / total if total > 0 else np.zeros(vectors.shape[1])


def _scale(result: Any, n: int) -> np.ndarray:
    """lr x local steps of each row of ``result`` (NaN where the learner does not say)."""
    scale = getattr(result, "update_scale", None)
    return np.full(n, np.nan) if scale is None else np.asarray(scale, dtype=float)
