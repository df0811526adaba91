"""A run that is interrupted or fails still leaves its directory, saying how it ended."""

from __future__ import annotations

import json

import pandas as pd

from netfl.cli import main
from netfl.selection.random import RandomSelection


class InterruptAtRound2(RandomSelection):
    """Behaves like random selection, then presses Ctrl-C in round 2."""

    def select(self, ctx):
        if ctx.round == 2:
            raise KeyboardInterrupt
        return super().select(ctx)


class FailAtRound1(RandomSelection):
    def select(self, ctx):
        if ctx.round == 1:
            raise RuntimeError("boom")
        return super().select(ctx)


def _run(write_scenario, tiny, tmp_path, strategy):
    tiny["fl"]["rounds"] = 5
    tiny["selection"] = {"name": f"tests.test_interrupt:{strategy}"}
    out = tmp_path / "run"
    code = main(["simulate", str(write_scenario(tiny)), "--out", str(out), "--quiet"])
    return code, out


def test_interrupted_run_keeps_what_was_recorded(write_scenario, tiny, tmp_path, capsys):
    code, out = _run(write_scenario, tiny, tmp_path, "InterruptAtRound2")
    assert code == 130
    assert "interrupted" in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    assert summary["rounds"] == 2
    assert (out / "scenario.resolved.yaml").is_file()
    rounds = pd.read_parquet(out / "rounds.parquet")
    assert rounds["t_end_s"].notna().sum() == 2
    timeline = pd.read_parquet(out / "timeline.parquet")
    assert (timeline["kind"] == "round_end").sum() == 2


def test_failed_run_says_why(write_scenario, tiny, tmp_path, capsys):
    """A plug-in strategy that raises: the run directory says failed and why; the
    command line calls it bad input naming the plug-in's key (exit 2, issue 34)."""
    code, out = _run(write_scenario, tiny, tmp_path, "FailAtRound1")
    assert code == 2
    err = capsys.readouterr().err
    assert "selection.name: the plug-in " in err and "raised RuntimeError: boom" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "failed"
    assert "RuntimeError: boom" in summary["error"]
    assert summary["rounds"] == 1
