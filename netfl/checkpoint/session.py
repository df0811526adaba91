"""Checkpointing a run at round boundaries, and resuming one by deterministic replay.

:class:`Checkpointer` puts the stand-ins of :mod:`netfl.checkpoint.pilot` between the
server and the strategy and learner, and hooks the end of every round:

- live: it keeps the newest boundary in memory (the pickled strategy, a copy of the
  global model, how long the append-only logs were) and writes it every
  ``fl.checkpoint_every`` rounds, and once more when the run is interrupted or fails;
- resuming: the world is rebuilt from ``scenario.resolved.yaml`` and rounds before the
  checkpoint are re-simulated with the recorded decisions (no training). At the
  checkpoint's boundary it checks that the replay reproduced the recorded clock, timeline
  length and rounds, then swaps in the saved strategy, global model, score log and torch
  generator state, and the run goes on live.
"""

from __future__ import annotations

import pickle
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netfl._version import __version__
from netfl.checkpoint.pilot import PilotLearner, PilotStrategy
from netfl.checkpoint.store import (
    Checkpoint,
    CheckpointError,
    DecisionLog,
    input_digests,
    set_torch_rng_state,
    torch_rng_state,
    write_checkpoint,
)
from netfl.errors import ScenarioError
from netfl.recorder.tables import RoundRecord
from netfl.world import World


@dataclass
class _Boundary:
    """The run right after round ``round - 1``, enough to write a checkpoint later."""

    round: int
    sim_time_s: float
    timeline_rows: int
    strategy: bytes
    learner: dict[str, Any]
    n_evaluations: int
    n_decisions: int
    n_scores: int
    torch_rng: dict[str, Any]


def pickled_strategy(world: World) -> bytes:
    """The strategy as a checkpoint keeps it; ScenarioError if it cannot be pickled."""
    try:
        return pickle.dumps(world.strategy, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise ScenarioError.single(
            "fl.checkpoint_every",
            f"the strategy '{world.scenario.selection.name}' cannot be saved in a checkpoint"
            f" (pickle: {type(exc).__name__}: {exc})",
        ) from None


class Checkpointer:
    """Checkpoints ``world`` into ``run_dir``; with ``resume``, replays up to it first."""

    def __init__(
        self,
        world: World,
        run_dir: Path,
        scenario_sha256: str,
        resume: Checkpoint | None = None,
    ) -> None:
        self.world = world
        self.run_dir = run_dir
        self.scenario_sha256 = scenario_sha256
        self.every = world.scenario.fl.checkpoint_every
        self.resume = resume
        self.log = resume.decisions if resume is not None else DecisionLog()
        self.replaying = resume is not None
        self.strategy = PilotStrategy(world.strategy, self.log, self.replaying)
        self.learner = PilotLearner(world.learner, self.log, self.replaying)
        server = world.server
        server.use(self.strategy, self.learner)
        self._then = server.on_round
        server.on_round = self._end_of_round
        self.latest: _Boundary | None = None
        self.written_round = resume.round if resume is not None else 0
        # The inputs as they were read at the start (a resume checked them unchanged).
        self.inputs = resume.inputs if resume is not None else input_digests(world.scenario)

    @property
    def resumed_from_round(self) -> int | None:
        return None if self.resume is None else self.resume.round

    def _end_of_round(self, record: RoundRecord) -> None:
        boundary = record.round + 1
        if self.replaying:
            assert self.resume is not None
            if boundary == self.resume.round:
                self._end_replay(self.resume)
        else:
            self.latest = self._snapshot(boundary)
            if self.every is not None and boundary % self.every == 0:
                self._write(self.latest)
        if self._then is not None:
            self._then(record)

    # -- live --------------------------------------------------------------------------

    def _snapshot(self, boundary: int) -> _Boundary:
        world = self.world
        return _Boundary(
            round=boundary,
            sim_time_s=float(world.env.now),
            timeline_rows=len(world.timeline),
            strategy=pickle.dumps(self.strategy.strategy, protocol=pickle.HIGHEST_PROTOCOL),
            learner=self.learner.checkpoint_state(),
            n_evaluations=len(self.log.evaluations),
            n_decisions=len(self.log.rounds),
            n_scores=len(world.server.score_log),
            torch_rng=torch_rng_state(),
        )

    def _write(self, at: _Boundary) -> None:
        records = self.world.server.records[: at.round]
        checkpoint = Checkpoint(
            netfl_version=__version__,
            scenario_sha256=self.scenario_sha256,
            round=at.round,
            sim_time_s=at.sim_time_s,
            timeline_rows=at.timeline_rows,
            rounds=[(r.t_start_s, r.t_end_s, list(r.completed)) for r in records],
            decisions=DecisionLog(
                self.log.rounds[: at.n_decisions], self.log.evaluations[: at.n_evaluations]
            ),
            strategy=at.strategy,
            learner=at.learner,
            score_log=self.world.server.score_log.head(at.n_scores),
            torch_rng=at.torch_rng,
            inputs=self.inputs,
        )
        write_checkpoint(self.run_dir, checkpoint)
        self.written_round = at.round

    def save_latest(self) -> None:
        """On interruption or failure: write the last completed boundary, if not yet."""
        if self.latest is None or self.latest.round <= self.written_round:
            return
        try:
            self._write(self.latest)
        except OSError as exc:  # do not hide why the run stopped
            warnings.warn(f"could not write the checkpoint: {exc}", stacklevel=2)

    # -- resuming ----------------------------------------------------------------------

    def _end_replay(self, resume: Checkpoint) -> None:
        self._check_replay(resume)
        strategy = pickle.loads(resume.strategy)
        self.world.strategy = self.strategy.strategy = strategy
        self.learner.restore_state(resume.learner)
        self.world.server.score_log = resume.score_log
        set_torch_rng_state(resume.torch_rng)
        self.strategy.replaying = self.learner.replaying = self.replaying = False

    def _check_replay(self, resume: Checkpoint) -> None:
        """The replay must end where the recorded run was; else the run cannot go on."""
        world = self.world
        replayed = [
            (r.t_start_s, r.t_end_s, list(r.completed))
            for r in world.server.records[: resume.round]
        ]
        problems = []
        pairs = zip(replayed, resume.rounds, strict=False)
        differ = [i for i, (again, before) in enumerate(pairs) if again != before]
        if differ or len(replayed) != len(resume.rounds):
            problems.append(f"round {differ[0] if differ else len(replayed)} went differently")
        if world.env.now != resume.sim_time_s:
            problems.append(f"the clock is at {world.env.now!r} s, not {resume.sim_time_s!r} s")
        if len(world.timeline) != resume.timeline_rows:
            problems.append(f"{len(world.timeline)} timeline events, not {resume.timeline_rows}")
        recorded = len(resume.decisions.evaluations)
        if self.learner.played_back != recorded:
            problems.append(f"{self.learner.played_back} evaluations, not {recorded}")
        if problems:
            raise CheckpointError(
                f"{self.run_dir}: replaying rounds 0-{resume.round - 1} did not reproduce the"
                f" checkpoint ({'; '.join(problems)}); resume it with the netfl and libraries"
                " that wrote it"
            )
