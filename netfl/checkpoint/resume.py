"""Opening a run directory to resume: every check on the input, before anything runs.

A resumed run continues the scenario it started with (``scenario.resolved.yaml``), so
``--set`` may only repeat values the scenario already has. Each refusal is one line
(:class:`~netfl.checkpoint.store.CheckpointError` or, for a scenario that no longer
validates, :class:`~netfl.errors.ScenarioError`) and leaves the directory as it was.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from netfl.checkpoint.store import (
    Checkpoint,
    CheckpointError,
    input_digests,
    read_checkpoint,
    scenario_digest,
)
from netfl.config import Scenario
from netfl.recorder.streaming import STRATEGY, covers, parts_dir
from netfl.rundir import is_run_directory
from netfl.scenario import dump_scenario, load_scenario

RESOLVED = "scenario.resolved.yaml"


@dataclass(frozen=True)
class OpenRun:
    """A run directory checked for resuming: its scenario and its checkpoint."""

    run_dir: Path
    scenario: Scenario
    checkpoint: Checkpoint


def _status(run_dir: Path) -> str | None:
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return summary.get("status") if isinstance(summary, dict) else None


def open_run(run_dir: str | Path, overrides: Sequence[str] = ()) -> OpenRun:
    """The scenario and the checkpoint of the run in ``run_dir``, checked for resuming.

    Raises
    ------
    CheckpointError
        Not a netfl run, a completed run, no checkpoint, one from another netfl version,
        an override that changes the scenario, a resolved scenario or an input file
        (trajectory, availability trace) edited since, the strategy's score parts the
        checkpoint continues from missing.
    ScenarioError
        The run's ``scenario.resolved.yaml`` no longer validates.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir() or not is_run_directory(run_dir):
        raise CheckpointError(
            f"{run_dir}: not a netfl run directory (no summary.json or {RESOLVED})"
        )
    if _status(run_dir) == "completed":
        raise CheckpointError(f"{run_dir}: the run completed; there is nothing to resume")
    resolved = run_dir / RESOLVED
    if not resolved.is_file():
        raise CheckpointError(f"{run_dir}: no {RESOLVED} to rebuild the run from")
    checkpoint = read_checkpoint(run_dir)
    scenario = load_scenario(resolved)
    text = dump_scenario(scenario)
    for override in overrides:
        if dump_scenario(load_scenario(resolved, [override])) != text:
            raise CheckpointError(
                f"--set {override} changes the scenario of {run_dir}; a resumed run continues"
                f" the scenario it started with ({RESOLVED})"
            )
    if scenario_digest(text) != checkpoint.scenario_sha256:
        raise CheckpointError(
            f"{resolved}: changed since the checkpoint was written; restore it to resume"
        )
    inputs = input_digests(scenario)
    for key, digest in getattr(checkpoint, "inputs", {}).items():
        if inputs.get(key) != digest:
            raise CheckpointError(
                f"{key}: the file changed since the checkpoint was written (its SHA-256"
                " differs): a resumed run would mix two inputs; restore it to resume"
            )
    scores = checkpoint.score_log.n_drained
    if not covers(run_dir, STRATEGY, scores):
        raise CheckpointError(
            f"{parts_dir(run_dir, STRATEGY)}: does not hold the strategy's first {scores:,}"
            " score rows, which the checkpoint continues from (the folder was removed or"
            " changed); the run cannot be resumed"
        )
    return OpenRun(run_dir, scenario, checkpoint)
