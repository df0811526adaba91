"""Stand-ins for the strategy and the learner in a checkpointed run: record, or play back.

A checkpoint cannot hold the SimPy world (in-flight flows, device queues, availability
processes are generators), so a resumed run rebuilds the world from the scenario and
re-simulates the rounds before the checkpoint. Everything in a round is cheap and
deterministic except what depends on learning: which clients the strategy polls and
selects (its state follows the losses it observed) and the evaluations. The server of a
checkpointed run talks to these stand-ins instead of the strategy and the learner:

- live, they pass every call through and note the decisions and evaluations in a
  :class:`DecisionLog`;
- replaying, they answer from the log: the recorded polls and selections, the recorded
  evaluations; local training, aggregation and polled signals are skipped (NaN), and the
  strategy observes nothing. Every other component draws from its own random stream and
  sees exactly the events it saw the first time, so its state at the boundary is the same.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from netfl.checkpoint.store import CheckpointError, DecisionLog, RoundDecision
from netfl.learning.interface import Evaluation, Learner, LocalResult
from netfl.selection.base import RoundFeedback, Scores, SelectionContext, Strategy


class PilotStrategy(Strategy):
    """What the server sees as the strategy; ``replaying``: the log answers for it."""

    def __init__(self, strategy: Strategy, log: DecisionLog, replaying: bool) -> None:
        self.strategy = strategy
        self.log = log
        self.replaying = replaying
        self._round = -1

    def _decision(self, round_: int) -> RoundDecision:
        if round_ >= len(self.log.rounds):
            raise CheckpointError(f"round {round_}: the checkpoint has no decision for it")
        return self.log.rounds[round_]

    @staticmethod
    def _recorded(ctx: SelectionContext, clients: list[int]) -> list[int]:
        """Recorded clients, which must be candidates again (else the replay diverged)."""
        if not set(clients) <= set(ctx.candidates.tolist()):
            raise CheckpointError(
                f"round {ctx.round}: the replay's candidates differ from the recorded run's;"
                " resume with the netfl and libraries that wrote the checkpoint"
            )
        return list(clients)

    # Derived from requires on Strategy; recorded per round here ("" when none declared).
    @property
    def poll_signal(self) -> str | None:  # type: ignore[override]
        if self.replaying:
            return self._decision(self._round).poll_signal or None
        return self.strategy.poll_signal

    def choose_polled(self, ctx: SelectionContext) -> Sequence[int]:
        self._round = ctx.round
        if self.replaying:
            return self._recorded(ctx, self._decision(ctx.round).polled)
        polled = [int(c) for c in self.strategy.choose_polled(ctx)]
        if len(self.log.rounds) != ctx.round:
            raise CheckpointError(f"round {ctx.round}: out of step with the decision log")
        self.log.rounds.append(RoundDecision(polled, self.poll_signal or ""))
        return polled

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        if self.replaying:
            return self._recorded(ctx, self._decision(ctx.round).selected)
        chosen = [int(c) for c in self.strategy.select(ctx)]
        self.log.rounds[ctx.round].selected = chosen
        return chosen

    def observe(self, feedback: RoundFeedback) -> None:
        if not self.replaying:
            self.strategy.observe(feedback)

    @property
    def observes(self) -> bool:
        return self.strategy.observes

    def scores(self) -> Scores:
        # Replayed rounds' scores are in the checkpoint's score log, restored at the end.
        return {} if self.replaying else self.strategy.scores()


class PilotLearner:
    """What the server sees as the learner; ``replaying``: no training, recorded evaluations."""

    def __init__(self, learner: Learner, log: DecisionLog, replaying: bool) -> None:
        self.learner = learner
        self.log = log
        self.replaying = replaying
        self.played_back = 0  # evaluations played back so far

    @property
    def n_samples(self) -> np.ndarray:
        return self.learner.n_samples

    @property
    def update_samples(self) -> np.ndarray:
        return self.learner.update_samples

    def lr_at(self, round: int) -> float:
        return self.learner.lr_at(round)

    def local_update(
        self,
        round: int,
        clients: np.ndarray,
        want: frozenset[str] = frozenset(),
        steps: np.ndarray | None = None,
    ) -> LocalResult:
        if self.replaying:
            return LocalResult.untrained(clients, self.learner.n_samples)
        if steps is None:
            return self.learner.local_update(round, clients, want=want)
        return self.learner.local_update(round, clients, want=want, steps=steps)

    def aggregate(self, result: LocalResult, arrived: np.ndarray) -> None:
        if not self.replaying:
            self.learner.aggregate(result, arrived)

    def global_update(self) -> np.ndarray:
        return np.zeros(0) if self.replaying else self.learner.global_update()

    # Asynchronous protocols: the versions in flight at the checkpoint come back with
    # ``restore_state``, so the replay keeps no versions and trains nothing.
    def start_update(self, version: int, client: int) -> None:
        if not self.replaying:
            self.learner.start_update(version, client)

    def finish_update(self, client: int) -> LocalResult:
        if self.replaying:
            return LocalResult.untrained(np.array([client]), self.learner.n_samples)
        return self.learner.finish_update(client)

    def cancel_update(self, client: int) -> None:
        if not self.replaying:
            self.learner.cancel_update(client)

    def note_steps(self, client: int, steps: int) -> None:
        if not self.replaying:
            self.learner.note_steps(client, steps)

    def apply_updates(
        self,
        results: list[LocalResult],
        versions: list[int],
        coefficients: np.ndarray,
        relative_to: str,
    ) -> None:
        if not self.replaying:
            self.learner.apply_updates(results, versions, coefficients, relative_to)

    # Hierarchical FL: the edge models are rebuilt from the cloud model at every cloud
    # round, the boundary of a checkpoint, so the replay needs none.
    def model_state(self) -> Any:
        return None if self.replaying else self.learner.model_state()

    def load_model_state(self, state: Any) -> None:
        if not self.replaying:
            self.learner.load_model_state(state)

    def average_states(self, states: list[Any], weights: np.ndarray) -> Any:
        return None if self.replaying else self.learner.average_states(states, weights)

    def evaluate(self) -> Evaluation:
        if not self.replaying:
            evaluation = self.learner.evaluate()
            self.log.evaluations.append(evaluation)
            return evaluation
        if self.played_back >= len(self.log.evaluations):
            raise CheckpointError("the replay evaluates more often than the recorded run did")
        self.played_back += 1
        return self.log.evaluations[self.played_back - 1]

    def divergence(self) -> str | None:
        # A checkpoint is written at a round that did not diverge: nothing to replay.
        return None if self.replaying else self.learner.divergence()

    def client_losses(self, clients: np.ndarray) -> np.ndarray:
        if self.replaying:
            return np.full(len(clients), math.nan)
        return self.learner.client_losses(clients)

    def client_test_losses(self) -> np.ndarray:
        return self.learner.client_test_losses()

    def client_columns(self) -> dict[str, Any]:
        return self.learner.client_columns()

    def checkpoint_state(self) -> dict[str, Any]:
        return self.learner.checkpoint_state()

    def restore_state(self, state: dict[str, Any]) -> None:
        self.learner.restore_state(state)
