"""``netfl simulate --resume RUN_DIR`` end to end, and every way to get it wrong.

Bad input is refused with one line on stderr and exit code 2, and leaves the run
directory byte for byte as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from netfl.checkpoint.store import checkpoint_path, read_checkpoint, write_checkpoint
from netfl.cli import main
from netfl.selection.random import RandomSelection
from tests.test_resume import TABLES, stop_at


def _simulate(*args: str) -> int:
    return main(["simulate", *args, "--quiet"])


@pytest.fixture
def interrupted(write_scenario, tiny, tmp_path, monkeypatch) -> Path:
    """A tiny run with checkpoints, interrupted in round 2 of 5."""
    tiny["fl"].update({"rounds": 5, "checkpoint_every": 1})
    path = write_scenario(tiny)
    run = tmp_path / "run"
    with monkeypatch.context() as patch:
        stop_at(patch, RandomSelection, 2)
        assert _simulate(str(path), "--out", str(run)) == 130
    return run


def _contents(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


def _refused(capsys, run: Path, *args: str) -> str:
    """Run ``simulate *args``; assert exit 2, one error line, ``run`` untouched."""
    before = _contents(run) if run.is_dir() else None
    capsys.readouterr()
    assert _simulate(*args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    if before is not None:
        assert _contents(run) == before
    return err


def test_resume_on_the_command_line(interrupted, write_scenario, tiny, tmp_path, capsys):
    tiny["fl"]["rounds"] = 5
    whole = tmp_path / "whole"
    assert _simulate(str(write_scenario(tiny, "whole.yaml")), "--out", str(whole)) == 0
    capsys.readouterr()
    assert _simulate("--resume", str(interrupted), "--set", "fl.rounds=5") == 0
    assert capsys.readouterr().out.strip() == str(interrupted)
    summary = json.loads((interrupted / "summary.json").read_text())
    assert summary["status"] == "completed"
    assert summary["resumed_from_round"] == 2
    for name in TABLES:
        assert (whole / name).read_bytes() == (interrupted / name).read_bytes(), name


def test_a_completed_run_is_not_resumed(interrupted, capsys):
    assert _simulate("--resume", str(interrupted)) == 0
    assert "completed; there is nothing to resume" in _refused(
        capsys, interrupted, "--resume", str(interrupted)
    )


def test_not_a_run_directory(tmp_path, capsys):
    assert "not a netfl run directory" in _refused(
        capsys, tmp_path, "--resume", str(tmp_path / "missing")
    )
    (tmp_path / "notes.txt").write_text("mine")
    assert "not a netfl run directory" in _refused(capsys, tmp_path, "--resume", str(tmp_path))


def test_a_run_without_checkpoints(write_scenario, tiny, tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    with monkeypatch.context() as patch:
        stop_at(patch, RandomSelection, 1)
        assert _simulate(str(write_scenario(tiny)), "--out", str(run)) == 130
    err = _refused(capsys, run, "--resume", str(run))
    assert "no checkpoint to resume from" in err and "fl.checkpoint_every" in err


def test_a_checkpoint_of_another_version(interrupted, capsys):
    path = checkpoint_path(interrupted)
    data = path.read_bytes().replace(b'"netfl_version": "', b'"netfl_version": "0.0.0-', 1)
    path.write_bytes(data)
    assert "written by netfl 0.0.0-" in _refused(capsys, interrupted, "--resume", str(interrupted))


def test_a_corrupted_checkpoint(interrupted, capsys):
    path = checkpoint_path(interrupted)
    path.write_bytes(path.read_bytes()[:-100])
    assert "corrupted checkpoint" in _refused(capsys, interrupted, "--resume", str(interrupted))
    path.write_bytes(b"not a checkpoint at all")
    assert "not a netfl checkpoint" in _refused(capsys, interrupted, "--resume", str(interrupted))


def test_a_scenario_that_no_longer_validates(interrupted, capsys):
    resolved = interrupted / "scenario.resolved.yaml"
    resolved.write_text(resolved.read_text().replace("rounds: 5", "roundz: 5"))
    err = _refused(capsys, interrupted, "--resume", str(interrupted))
    assert "scenario.resolved.yaml:" in err and "fl.roundz" in err


def test_an_edited_scenario(interrupted, capsys):
    resolved = interrupted / "scenario.resolved.yaml"
    resolved.write_text(resolved.read_text().replace("seed: 3", "seed: 4"))
    err = _refused(capsys, interrupted, "--resume", str(interrupted))
    assert "changed since the checkpoint was written" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["scenario.yaml"], "drop a scenario"),
        (["--out", "elsewhere"], "drop --out"),
        (["--force"], "drop --force"),
        (["--set", "fl.rounds=9"], "--set fl.rounds=9 changes the scenario"),
        (["--set", "fl.roundz=9"], "fl.roundz"),
    ],
)
def test_resume_takes_no_other_scenario(interrupted, capsys, extra, message):
    err = _refused(capsys, interrupted, "--resume", str(interrupted), *extra)
    assert message in err


def test_a_replay_that_does_not_reproduce_the_checkpoint(interrupted, capsys):
    """Another platform or library version would replay differently: refused, untouched."""
    checkpoint = read_checkpoint(interrupted)
    checkpoint.sim_time_s += 1e-9
    write_checkpoint(interrupted, checkpoint)
    err = _refused(capsys, interrupted, "--resume", str(interrupted))
    assert "did not reproduce the checkpoint" in err and "the clock is at" in err


class Unpicklable(RandomSelection):
    """Holds a generator object, which pickle refuses."""

    def setup(self, info, rng):
        super().setup(info, rng)
        self.pending = (i for i in range(3))


def test_a_strategy_that_cannot_be_checkpointed(write_scenario, tiny, tmp_path, capsys):
    tiny["fl"]["checkpoint_every"] = 2
    tiny["selection"] = {"name": "tests.test_resume_cli:Unpicklable"}
    run = tmp_path / "run"
    err = _refused(capsys, run, str(write_scenario(tiny)), "--out", str(run))
    assert "fl.checkpoint_every" in err and "cannot be saved in a checkpoint" in err
    assert not run.exists()
