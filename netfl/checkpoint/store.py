"""The checkpoint file: what a round boundary keeps, written atomically, read with checks.

``<run dir>/checkpoint/state.ckpt`` is one file, replaced atomically: a one-line JSON
header (format, netfl version, round, simulated time), then a pickle of
:class:`Checkpoint`. The header is read first, so a checkpoint from another netfl version
is refused before anything is unpickled. Like any pickle, a checkpoint runs code when
loaded: resume only run directories you trust.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netfl._version import __version__
from netfl.config import Scenario
from netfl.errors import NetflError
from netfl.learning.interface import Evaluation
from netfl.recorder.strategy import ScoreLog
from netfl.rundir import write_bytes

#: Bumped whenever :class:`Checkpoint` changes shape.
FORMAT = 1
CHECKPOINT_DIR = "checkpoint"
CHECKPOINT_FILE = "state.ckpt"
_MAGIC = b"netfl-checkpoint "


class CheckpointError(NetflError):
    """A run cannot be resumed (no checkpoint, another version, a changed scenario...)."""


@dataclass
class RoundDecision:
    """What the strategy decided in one round: whom to poll (with which signal), whom to
    select, in the order it returned them."""

    polled: list[int]
    poll_signal: str
    selected: list[int] = field(default_factory=list)


@dataclass
class DecisionLog:
    """The decisions of every round so far (index = round) and the evaluations in order."""

    rounds: list[RoundDecision] = field(default_factory=list)
    evaluations: list[Evaluation] = field(default_factory=list)


@dataclass
class Checkpoint:
    """A run at the boundary before round ``round`` (rounds ``0 .. round-1`` are done).

    ``rounds`` holds each done round's ``(t_start_s, t_end_s, completed)`` and, with
    ``sim_time_s`` and ``timeline_rows``, lets a resumed run check that its replay
    reproduced the recorded run exactly.
    """

    netfl_version: str
    scenario_sha256: str
    round: int
    sim_time_s: float
    timeline_rows: int
    rounds: list[tuple[float, float, list[int]]]
    decisions: DecisionLog
    strategy: bytes  # the pickled strategy (its state and its random generator)
    learner: dict[str, Any]  # Learner.checkpoint_state()
    score_log: ScoreLog
    torch_rng: dict[str, Any]
    format: int = FORMAT
    inputs: dict[str, str] = field(default_factory=dict)
    """The SHA-256 of each file the scenario reads (:func:`input_digests`), by key."""


def scenario_digest(resolved_yaml: str) -> str:
    """The fingerprint of a resolved scenario (``dump_scenario``'s text)."""
    return hashlib.sha256(resolved_yaml.encode()).hexdigest()


def input_digests(scenario: Scenario) -> dict[str, str]:
    """The SHA-256 of each trace file the scenario reads (trajectories, availability
    traces), by its key: a resumed run must read the same inputs as the run it continues
    (a trace edited since would be mixed in silently). A file that cannot be read has no
    digest (loading the scenario says what is wrong with it)."""
    files = {}
    for index, group in enumerate(scenario.devices.groups):
        for part in ("mobility", "availability"):
            path = getattr(getattr(group, part), "file", None)
            if isinstance(path, str):
                files[f"devices.groups.{index}.{part}.file"] = path
    digests = {}
    for key, path in files.items():
        digest = hashlib.sha256()
        try:
            with open(path, "rb") as file:
                while chunk := file.read(1 << 20):
                    digest.update(chunk)
        except OSError:
            continue
        digests[key] = digest.hexdigest()
    return digests


def torch_rng_state() -> dict[str, Any]:
    """torch's global generators (unused by netfl's training, kept for user models);
    empty when torch was never loaded (``learning: none``)."""
    if "torch" not in sys.modules:
        return {}
    import torch

    state: dict[str, Any] = {"cpu": torch.random.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_torch_rng_state(state: dict[str, Any]) -> None:
    if not state:
        return  # saved by a run that never loaded torch
    import torch

    torch.random.set_rng_state(state["cpu"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def checkpoint_path(run_dir: Path) -> Path:
    return run_dir / CHECKPOINT_DIR / CHECKPOINT_FILE


def write_checkpoint(run_dir: Path, checkpoint: Checkpoint) -> Path:
    """Replace the run's checkpoint atomically (a crash leaves the old one or the new)."""
    header = {
        "format": checkpoint.format,
        "netfl_version": checkpoint.netfl_version,
        "round": checkpoint.round,
        "sim_time_s": checkpoint.sim_time_s,
    }
    data = _MAGIC + json.dumps(header).encode() + b"\n"
    data += pickle.dumps(checkpoint, protocol=pickle.HIGHEST_PROTOCOL)
    path = checkpoint_path(run_dir)
    path.parent.mkdir(exist_ok=True)
    write_bytes(path, data)
    return path


def read_checkpoint(run_dir: Path) -> Checkpoint:
    """The run's checkpoint; :class:`CheckpointError` if missing, foreign or unreadable."""
    path = checkpoint_path(run_dir)
    if not path.is_file():
        raise CheckpointError(
            f"{run_dir}: no checkpoint to resume from ({CHECKPOINT_DIR}/{CHECKPOINT_FILE});"
            " set fl.checkpoint_every to write them"
        )
    data = path.read_bytes()
    header_line, _, payload = data.partition(b"\n")
    try:
        if not header_line.startswith(_MAGIC):
            raise ValueError("no netfl checkpoint header")
        header = json.loads(header_line[len(_MAGIC) :])
    except ValueError as exc:
        raise CheckpointError(f"{path}: not a netfl checkpoint ({exc})") from None
    if header.get("format") != FORMAT or header.get("netfl_version") != __version__:
        raise CheckpointError(
            f"{path}: written by netfl {header.get('netfl_version')} (checkpoint format"
            f" {header.get('format')}); this is netfl {__version__} (format {FORMAT}), which"
            " cannot resume it"
        )
    try:
        checkpoint = pickle.loads(payload)
    except Exception as exc:  # a truncated or corrupted file raises almost anything
        raise CheckpointError(
            f"{path}: corrupted checkpoint ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(checkpoint, Checkpoint):
        raise CheckpointError(f"{path}: corrupted checkpoint (holds {type(checkpoint).__name__})")
    return checkpoint
