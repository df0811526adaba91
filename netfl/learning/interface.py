"""What the FL protocol needs from the learning side, without torch.

The :class:`Learner` protocol, the ``learning: none`` learner, and the plain records the
two sides exchange (:class:`LocalResult`, :class:`Evaluation`, :class:`EvalSchedule`).
Nothing here imports torch, so a timing-only run (``learning: none``) never loads it;
:mod:`netfl.learning.learner` holds the torch learner.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    import torch


@dataclass
class LocalResult:
    """The trained clients of a round, aligned with ``clients``.

    ``states`` holds each client's parameters and buffers stacked on a leading client axis;
    ``loss_mean``/``loss_std`` are over the client's local iterations (the minibatch
    losses; UCB-CS eqs. (5) and (7) in Cho et al. 2020); ``update_vectors``
    (when asked for) is w_local - w_global over the parameters, flattened, shape (K, P),
    and ``update_scale`` is lr x (SGD steps taken) per client: with plain SGD,
    ``-update_vectors / update_scale`` is the client's mean gradient along its local path
    (what GPFL's eq. (3) projects). ``steps`` is the local SGD steps each client took
    (fewer than planned under partial work) and ``path_norms`` their ||a_k||_1 (FedNova,
    where the aggregation rule needs it).
    """

    clients: np.ndarray
    states: dict[str, torch.Tensor]
    n_samples: np.ndarray
    loss_mean: np.ndarray
    loss_std: np.ndarray
    update_vectors: np.ndarray | None = None
    update_scale: np.ndarray | None = None
    steps: np.ndarray | None = None
    path_norms: np.ndarray | None = None

    @classmethod
    def untrained(cls, clients: np.ndarray, n_samples: np.ndarray) -> LocalResult:
        """A local update that was not computed: no states, NaN losses, no vectors.

        ``n_samples`` is every client's data size, indexed by client id.
        """
        clients = np.asarray(clients, dtype=np.int64)
        nan = np.full(len(clients), np.nan)
        return cls(clients, {}, n_samples[clients], nan, nan.copy())


@dataclass(frozen=True)
class Evaluation:
    """The global model on the test set; ``client_loss`` per device where asked.

    Loss fairness (Jain's index, UCB-CS eq. (3) in Cho et al. 2020) is
    ``netfl.trace.metrics.jain_index`` of ``client_loss`` (F_k(w) with ``train``).
    """

    accuracy: float
    loss: float
    client_loss: np.ndarray | None = None


@dataclass
class EvalSchedule:
    """When the server evaluates the global model.

    Every ``every_rounds`` rounds, and/or at the end of the first round that ends at or
    after each multiple of ``every_s`` simulated seconds; the last round (of a fixed
    round count) always.
    """

    every_rounds: int | None = 1
    every_s: float | None = None
    rounds: int | None = None
    _next_s: float = math.nan

    def due(self, round: int, now_s: float) -> bool:
        """Whether to evaluate at the end of ``round``, ending at ``now_s``."""
        by_rounds = self.every_rounds is not None and (round + 1) % self.every_rounds == 0
        last = self.rounds is not None and round + 1 == self.rounds
        by_time = False
        if self.every_s is not None:
            if math.isnan(self._next_s):
                self._next_s = self.every_s
            if now_s >= self._next_s:
                by_time = True
                self._next_s = (math.floor(now_s / self.every_s) + 1) * self.every_s
        return by_rounds or by_time or last


#: What ``local_update`` can add to its result on request.
WANTS = frozenset({"update_vector"})


class Learner(Protocol):
    """What the FL protocol needs from the learning side."""

    @property
    def n_samples(self) -> np.ndarray: ...

    @property
    def update_samples(self) -> np.ndarray: ...

    def lr_at(self, round: int) -> float: ...

    def local_update(
        self,
        round: int,
        clients: np.ndarray,
        want: frozenset[str] = frozenset(),
        steps: np.ndarray | None = None,
    ) -> LocalResult: ...

    def aggregate(self, result: LocalResult, arrived: np.ndarray) -> None: ...

    def global_update(self) -> np.ndarray: ...

    def start_update(self, version: int, client: int) -> None: ...

    def finish_update(self, client: int) -> LocalResult: ...

    def cancel_update(self, client: int) -> None: ...

    def note_steps(self, client: int, steps: int) -> None: ...

    def apply_updates(
        self,
        results: list[LocalResult],
        versions: list[int],
        coefficients: np.ndarray,
        relative_to: str,
    ) -> None: ...

    def model_state(self) -> Any: ...

    def load_model_state(self, state: Any) -> None: ...

    def average_states(self, states: list[Any], weights: np.ndarray) -> Any: ...

    def evaluate(self) -> Evaluation: ...

    def divergence(self) -> str | None:
        """Why the model can no longer be trained (a non-finite parameter or training
        loss), or None; the server stops the run there (:class:`netfl.errors.Diverged`)."""
        ...

    def client_losses(self, clients: np.ndarray) -> np.ndarray: ...

    def client_test_losses(self) -> np.ndarray: ...

    def client_columns(self) -> dict[str, Any]: ...

    def checkpoint_state(self) -> dict[str, Any]: ...

    def restore_state(self, state: dict[str, Any]) -> None: ...


def wants_for(requires: Iterable[str]) -> frozenset[str]:
    """What to ask ``local_update`` for, given a strategy's ``requires``."""
    return frozenset(requires) & WANTS


def check_wants(want: frozenset[str]) -> None:
    unknown = set(want) - WANTS
    if unknown:
        raise ValueError(f"unknown learning signals {sorted(unknown)}; known: {sorted(WANTS)}")


class NullLearner:
    """``learning: none``: timing-only studies; no model, losses and accuracy are NaN."""

    def __init__(self, n_samples: np.ndarray) -> None:
        self._n_samples = np.asarray(n_samples, dtype=np.int64)

    @property
    def n_samples(self) -> np.ndarray:
        return self._n_samples

    @property
    def update_samples(self) -> np.ndarray:
        return self._n_samples

    def lr_at(self, round: int) -> float:
        return math.nan

    def local_update(
        self,
        round: int,
        clients: np.ndarray,
        want: frozenset[str] = frozenset(),
        steps: np.ndarray | None = None,
    ) -> LocalResult:
        check_wants(want)
        return LocalResult.untrained(clients, self._n_samples)

    def aggregate(self, result: LocalResult, arrived: np.ndarray) -> None:
        return None

    def global_update(self) -> np.ndarray:
        return np.zeros(0)

    def start_update(self, version: int, client: int) -> None:
        return None

    def finish_update(self, client: int) -> LocalResult:
        return LocalResult.untrained(np.array([client]), self._n_samples)

    def cancel_update(self, client: int) -> None:
        return None

    def note_steps(self, client: int, steps: int) -> None:
        return None

    def apply_updates(
        self,
        results: list[LocalResult],
        versions: list[int],
        coefficients: np.ndarray,
        relative_to: str,
    ) -> None:
        return None

    def model_state(self) -> Any:
        return None

    def load_model_state(self, state: Any) -> None:
        return None

    def average_states(self, states: list[Any], weights: np.ndarray) -> Any:
        return None

    def evaluate(self) -> Evaluation:
        return Evaluation(math.nan, math.nan)

    def divergence(self) -> str | None:
        return None

    def client_losses(self, clients: np.ndarray) -> np.ndarray:
        return np.full(len(clients), np.nan)

    def client_test_losses(self) -> np.ndarray:
        return np.full(len(self._n_samples), np.nan)

    def client_columns(self) -> dict[str, Any]:
        return {}

    def checkpoint_state(self) -> dict[str, Any]:
        return {}

    def restore_state(self, state: dict[str, Any]) -> None:
        return None
