"""The command line end to end: files and columns produced, exit codes, list, validate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from netfl.cli import main
from netfl.recorder.tables import CLIENT_COLUMNS, ROUNDS_SCHEMA
from netfl.recorder.timeline import SCHEMA as TIMELINE_SCHEMA


def test_simulate_writes_the_run_directory(write_scenario, tiny, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["simulate", str(write_scenario(tiny)), "--out", str(out), "--quiet"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    expected = {
        "scenario.resolved.yaml",
        "timeline.parquet",
        "rounds.parquet",
        "strategy.parquet",
        "clients.parquet",
        "summary.json",
    }
    assert {p.name for p in out.iterdir()} == expected

    timeline = pd.read_parquet(out / "timeline.parquet")
    assert list(timeline.columns) == TIMELINE_SCHEMA.names
    assert timeline["t_s"].is_monotonic_increasing
    kinds = set(timeline["kind"].astype(str))
    assert {
        "request",
        "select",
        "download_start",
        "download_end",
        "compute_start",
        "compute_end",
        "upload_start",
        "upload_end",
        "aggregate",
        "evaluate",
    } <= kinds

    rounds = pd.read_parquet(out / "rounds.parquet")
    assert list(rounds.columns) == ROUNDS_SCHEMA.names
    assert list(rounds["round"]) == [0, 1, 2]
    assert (rounds["n_selected"] == 3).all()
    assert (rounds["t_end_s"] > rounds["t_start_s"]).all()
    assert rounds["accuracy"].between(0, 1).all()

    clients = pd.read_parquet(out / "clients.parquet")
    assert list(clients.columns)[: len(CLIENT_COLUMNS)] == list(CLIENT_COLUMNS)
    assert len(clients) == 6
    assert clients["n_selected"].sum() == 9  # 3 rounds x clients_per_round 3

    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "completed"
    assert summary["rounds"] == 3
    assert summary["seed"] == 3
    assert summary["sim_time_s"] == pytest.approx(rounds["t_end_s"].iloc[-1])
    assert summary["final_accuracy"] == pytest.approx(rounds["accuracy"].iloc[-1])
    assert "torch" in summary["versions"]


def test_round_time_is_the_slowest_client(write_scenario, tiny, tmp_path):
    """Placeholder timing: each client takes download + E D / sps + upload, in parallel."""
    out = tmp_path / "run"
    main(["simulate", str(write_scenario(tiny)), "--out", str(out), "--quiet"])
    clients = pd.read_parquet(out / "clients.parquet").set_index("client")
    rounds = pd.read_parquet(out / "rounds.parquet")
    bits = json.loads((out / "summary.json").read_text())["model_size_bits"]
    for row in rounds.itertuples():
        c = clients.loc[list(row.selected)]
        per_client = bits / c.rate_dl_bps + c.n_samples / c.compute_sps + bits / c.rate_ul_bps
        assert row.t_end_s - row.t_start_s == pytest.approx(per_client.max(), rel=1e-12)


def test_existing_directory_is_not_overwritten(write_scenario, tiny, tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    assert main(["simulate", str(write_scenario(tiny)), "--out", str(out), "--quiet"]) == 2
    assert "not empty" in capsys.readouterr().err
    # --force does not wipe a directory that is not a netfl run
    assert (
        main(["simulate", str(write_scenario(tiny)), "--out", str(out), "--quiet", "--force"]) == 2
    )
    assert (out / "precious.txt").read_text() == "keep me"


def test_force_replaces_a_previous_run(write_scenario, tiny, tmp_path):
    out = tmp_path / "run"
    path = str(write_scenario(tiny))
    assert main(["simulate", path, "--out", str(out), "--quiet"]) == 0
    assert main(["simulate", path, "--out", str(out), "--quiet"]) == 2
    assert main(["simulate", path, "--out", str(out), "--quiet", "--force"]) == 0


def test_bad_input_is_one_line_and_exit_2(write_scenario, tiny, tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["simulate", str(write_scenario(tiny)), "--set", "fl.rounds=0", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "fl.rounds" in err and "Traceback" not in err
    assert not out.exists()

    tiny["fl"]["clients_per_rnd"] = 2
    code = main(["simulate", str(write_scenario(tiny)), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "did you mean 'clients_per_round'?" in err
    assert not out.exists()


def test_validate_lists_every_problem(write_scenario, tiny, capsys):
    tiny["fl"]["rounds"] = 0
    tiny["fl"]["deadline_s"] = -1
    assert main(["validate", str(write_scenario(tiny))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2
    assert all(line.startswith("error: ") for line in err)


def test_validate_print_resolved(capsys):
    assert main(["validate", "quickstart", "--print"]) == 0
    out = capsys.readouterr().out
    assert "clients_per_round: 5" in out and "request_fraction: 0.5" in out


def test_list_prints_every_registry(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for title in ("strategies:", "channel-models:", "datasets:", "models:", "scenarios:"):
        assert title in out
    assert "  random  " in out
    assert "  digits  " in out
    assert "  quickstart  " in out


def test_console_script_runs_the_default_scenario(tmp_path):
    """`netfl simulate` with no argument runs the built-in quickstart (as a user would)."""
    out = tmp_path / "quick"
    proc = subprocess.run(
        [sys.executable, "-m", "netfl", "simulate", "--out", str(out), "--set", "fl.rounds=2"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    # Not a terminal: progress is plain log lines, one per round.
    assert "round 1 (2/2 done)" in proc.stderr
    assert Path(proc.stdout.strip()) == out
    assert json.loads((out / "summary.json").read_text())["name"] == "quickstart"


@pytest.mark.parametrize("before", [True, False])
def test_debug_shows_the_traceback_before_or_after_the_command(tmp_path, capsys, before):
    """`netfl --debug CMD` (as --help shows it) and `netfl CMD --debug` both work."""
    missing = str(tmp_path / "missing.yaml")
    args = ["--debug", "simulate", missing] if before else ["simulate", missing, "--debug"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "no such file" in err
    assert main(["simulate", missing]) == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["sweep", "s.yaml", "--jobs", "0"], "--jobs: runs in parallel: at least 1, got 0"),
        (["sweep", "s.yaml", "--gpu-fraction", "1.5"], "a GPU fraction is in (0, 1]"),
        (["compare", "run", "--target", "90"], "--target: an accuracy is in [0, 1], got 90"),
    ],
)
def test_bad_command_line_values_exit_2(tmp_path, monkeypatch, capsys, args, message):
    """Refused by the parser (no silent fallback to one job, no target never reached)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_summary_target_figures_agree_with_the_rounds(write_scenario, tiny, tmp_path):
    """time_to_target_s is the end of the first round evaluated at >= target, and
    rounds_to_target counts the rounds up to it (1-based), as netfl.trace.metrics says."""
    tiny["fl"]["rounds"] = 4
    first = tmp_path / "first"
    assert main(["simulate", str(write_scenario(tiny)), "--out", str(first), "--quiet"]) == 0
    accuracy = pd.read_parquet(first / "rounds.parquet")["accuracy"]
    # A target first reached in a later round: the best accuracy after round 0.
    target = float(accuracy.iloc[1:].max())
    assert target > accuracy.iloc[0]
    for name, value in (("hit", target), ("never", 1.0)):
        tiny["learning"]["target_accuracy"] = value
        out = tmp_path / name
        assert main(["simulate", str(write_scenario(tiny)), "--out", str(out), "--quiet"]) == 0
        rounds = pd.read_parquet(out / "rounds.parquet")
        summary = json.loads((out / "summary.json").read_text())
        reached = rounds[rounds["accuracy"] >= value]
        if reached.empty:
            assert summary["rounds_to_target"] is None
            assert summary["time_to_target_s"] is None
            continue
        assert summary["rounds_to_target"] == reached["round"].iloc[0] + 1 >= 2
        assert summary["time_to_target_s"] == pytest.approx(reached["t_end_s"].iloc[0])


def test_wall_times_are_reported_separately_and_add_up(write_scenario, tiny, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["simulate", str(write_scenario(tiny)), "--out", str(out)]) == 0
    closing = capsys.readouterr().err.strip().splitlines()[-1]
    summary = json.loads((out / "summary.json").read_text())
    build, run = summary["wall_build_s"], summary["wall_run_s"]
    training, write, total = (
        summary["wall_training_s"],
        summary["wall_write_s"],
        summary["wall_total_s"],
    )
    assert min(build, run, write) > 0
    assert 0 < training <= run  # tiny trains a model: the learner's time is inside the loop
    assert summary["wall_time_s"] == pytest.approx(build + run, abs=1e-6)
    # The rest of the total is the summary's own figures (library versions, targets).
    assert 0 <= total - (build + run + write) < 1.0
    assert closing.startswith("done: ")
    assert f"{total:.1f} s wall (build {build:.1f} s, run {run:.1f} s" in closing
    path = summary["training_path"].split()[0]  # tiny's MLP on CPU: the dense path
    assert path == "dense"
    assert f"of which training {training:.1f} s ({path}), write {write:.1f} s)" in closing


def test_a_reader_that_leaves_early_gets_no_error():
    """`netfl list | head -1`: the closed pipe ends the listing quietly."""
    import subprocess
    import sys

    done = subprocess.run(
        f"{sys.executable} -m netfl list strategies --verbose | head -1",
        shell=True,
        capture_output=True,
        text=True,
    )
    assert done.stdout == "strategies:\n"
    assert done.stderr == ""


def test_list_verbose_says_which_strategies_run_asynchronously():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "netfl", "list", "strategies", "--verbose"],
        capture_output=True,
        text=True,
    )
    lines = done.stdout.splitlines()
    oort = lines[next(i for i, line in enumerate(lines) if line.split()[:1] == ["oort"]) + 1]
    ucb = lines[next(i for i, line in enumerate(lines) if line.split()[:1] == ["ucb_cs"]) + 1]
    assert "fedbuff" in oort and "not the asynchronous" not in oort
    assert "not the asynchronous" in ucb
