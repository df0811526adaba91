"""SIGINT, SIGTERM and SIGKILL mid-run (issue 16, item 7), on a real ``netfl simulate``
process: each leaves a run directory with a status in ``summary.json``, and
``netfl simulate --resume`` then ends with the same tables as an uninterrupted run.

SIGINT and SIGTERM let the run write what it recorded (``interrupted``, exit 130;
``terminated``, exit 143) and a last checkpoint; SIGKILL leaves ``status: running`` and
the last periodic checkpoint (``fl.checkpoint_every: 1``), from which the run resumes, and
the timeline parts written so far (issue 16, item 3; a part every few rounds here), which
:func:`netfl.load_run` reads.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from netfl import load_run
from netfl.checkpoint.store import checkpoint_path
from netfl.cli import main
from netfl.recorder import streaming
from netfl.selection.random import RandomSelection
from tests.test_resume import assert_same_tables

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 8
PART_ROWS = 30
"""Timeline rows held before a round's end writes them out (a round's worth or so)."""


class SlowRandom(RandomSelection):
    """Random selection that takes 0.1 s of wall time per round (not simulated time), so
    that a signal lands mid-run."""

    def select(self, ctx: Any) -> Any:
        time.sleep(0.1)
        return super().select(ctx)


def _wait_for(path: Path, process: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert process.poll() is None, "the run ended before the signal"
        assert time.monotonic() < deadline, f"no {path} after {timeout_s} s"
        time.sleep(0.02)


@pytest.mark.parametrize(
    ("signum", "code", "status"),
    [
        (signal.SIGINT, 130, "interrupted"),
        (signal.SIGTERM, 143, "terminated"),
        (signal.SIGKILL, -signal.SIGKILL, "running"),
    ],
)
def test_a_signal_mid_run_leaves_a_resumable_run(
    signum, code, status, write_scenario, tiny, tmp_path, monkeypatch
):
    monkeypatch.setattr(streaming, "PART_ROWS", PART_ROWS)  # both runs write parts alike
    tiny["fl"].update({"rounds": ROUNDS, "model_size_bits": 1.0e6})
    tiny["learning"] = "none"  # a process without torch starts in about 1 s
    tiny["selection"] = {"name": "tests.test_interrupt_signals:SlowRandom"}
    whole = tmp_path / "whole"
    assert (
        main(["simulate", str(write_scenario(tiny, "whole.yaml")), "--out", str(whole), "--quiet"])
        == 0
    )

    tiny["fl"]["checkpoint_every"] = 1
    run = tmp_path / "run"
    netfl = (
        f"import netfl.recorder.streaming as s; s.PART_ROWS = {PART_ROWS};"
        " import netfl.cli, sys; sys.exit(netfl.cli.main())"
    )
    command = [sys.executable, "-c", netfl, "simulate", str(write_scenario(tiny))]
    process = subprocess.Popen(
        [*command, "--out", str(run), "--quiet"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _wait_for(checkpoint_path(run), process)  # round 0 is done: we are mid-run
    while signum == signal.SIGKILL and len(streaming.part_paths(run)) < 2:
        assert process.poll() is None, "the run ended before the signal"
        time.sleep(0.02)
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == code, err.decode()

    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == status
    if signum != signal.SIGKILL:
        assert err.decode().startswith(status)
        assert 1 <= summary["rounds"] < ROUNDS
        loaded = load_run(run)  # readable: what was recorded so far
        assert len(loaded.rounds.dropna(subset=["t_end_s"])) == summary["rounds"]
        assert not (run / streaming.PARTS_DIR).exists()
    else:
        # No tables, but the timeline up to the last part written, as the whole run's start.
        assert not (run / "timeline.parquet").exists()
        parts = streaming.part_paths(run)
        assert len(parts) >= 2
        partial = load_run(run).timeline
        assert len(partial) >= PART_ROWS * len(parts)
        start = load_run(whole).timeline.iloc[: len(partial)]
        assert partial["t_s"].tolist() == start["t_s"].tolist()
        assert partial["kind"].astype(str).tolist() == start["kind"].astype(str).tolist()

    assert main(["simulate", "--resume", str(run), "--quiet"]) == 0
    assert json.loads((run / "summary.json").read_text())["status"] == "completed"
    assert_same_tables(whole, run)
    assert not (run / streaming.PARTS_DIR).exists()
