"""netfl.load_run / load_runs: tables, scenario, parameters as columns, clear errors."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pandas as pd
import pytest

import netfl
from netfl.config import Scenario
from netfl.errors import RunReadError
from netfl.trace.metrics import jain_index


def test_import_netfl_stays_light():
    code = "import sys, netfl; netfl.load_run; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_load_run(timing_run):
    run = netfl.load_run(timing_run)
    assert isinstance(run.scenario, Scenario)
    assert run.scenario.fl.deadline_s == 2.5
    assert run.scenario_dict["fl"]["deadline_s"] == 2.5
    assert run.summary["status"] == "completed"
    assert isinstance(run.summary["versions.numpy"], str)  # nested keys are dotted
    assert len(run.rounds) == 6
    assert set(run.timeline["kind"].astype(str)) >= {"select", "upload_end"}
    counts = run.selection_counts()
    assert counts.sum() == 6 * 3
    assert run.fairness() == pytest.approx(jain_index(counts.to_numpy()))
    assert run.strategy.empty  # random exposes no scores
    assert list(run.strategy.columns) == ["round", "t_s", "client", "score", "value"]


def test_time_to_accuracy_uses_the_scenario_target(digits_run):
    run = netfl.load_run(digits_run)
    rounds = run.rounds
    hit = rounds[rounds["accuracy"] >= 0.3]
    expected = hit["t_end_s"].iloc[0] if len(hit) else float("nan")
    assert run.time_to_accuracy() == pytest.approx(expected, nan_ok=True)
    assert run.accuracy_at(rounds["t_end_s"].iloc[-1])[0] == rounds["accuracy"].iloc[-1]


def test_not_a_run_directory(tmp_path):
    with pytest.raises(RunReadError, match="not a netfl run directory"):
        netfl.load_run(tmp_path)
    with pytest.raises(RunReadError, match="not a directory"):
        netfl.load_run(tmp_path / "nope")
    (tmp_path / "stray").mkdir()
    with pytest.raises(RunReadError, match="stray: not a netfl run directory"):
        netfl.load_runs(str(tmp_path / "*"))
    with pytest.raises(RunReadError, match="no path matches"):
        netfl.load_runs(str(tmp_path / "zzz*"))


def test_corrupted_parquet_names_the_file(timing_run, tmp_path):
    copy = shutil.copytree(timing_run, tmp_path / "run")
    (copy / "rounds.parquet").write_bytes(b"PAR1 this is not parquet")
    run = netfl.load_run(copy)
    with pytest.raises(RunReadError, match=r"rounds\.parquet: not a readable Parquet file"):
        _ = run.rounds
    (copy / "timeline.parquet").unlink()
    with pytest.raises(RunReadError, match=r"timeline\.parquet: missing"):
        _ = run.timeline


def test_load_runs_of_a_sweep(timing_sweep):
    runs = netfl.load_runs(timing_sweep)
    assert len(runs) == 4
    assert runs.varying == ["seed", "selection.params.weighted"]
    assert runs.config_keys == ["selection.params.weighted"]
    assert sorted(runs.configuration().value_counts().tolist()) == [2, 2]
    summary = runs.summary
    assert {"run", "configuration", "seed", "status", "sim_time_s"} <= set(summary.columns)
    rounds = runs.rounds
    assert len(rounds) == 4 * 6
    assert rounds.columns[:3].tolist() == ["run", "seed", "selection.params.weighted"]
    assert rounds.groupby("run").size().tolist() == [6] * 4
    for run_id, part in rounds.groupby("run"):  # each row carries its own run's parameters
        for key in ("seed", "selection.params.weighted"):
            assert (part[key] == runs.params.at[run_id, key]).all()
    # Every flattened scenario key is a column of params.
    assert runs.params.loc[runs.ids[0], "fl.clients_per_round"] == 3
    assert "devices.groups.0.count" in runs.params.columns


def test_common_random_numbers(timing_sweep):
    """Runs that differ only in the strategy share the world: same clients (drop, rates,
    data sizes, compute) and the same resource-request candidates every round."""
    runs = netfl.load_runs(timing_sweep)
    by_seed = runs.summary.groupby("seed")["run"].apply(list)
    for ids in by_seed:
        a, b = (runs[runs.ids.index(i)] for i in ids)
        assert a.params.get("selection.params.weighted") != b.params.get(
            "selection.params.weighted"
        )
        world = ["x_m", "y_m", "rate_ul_bps", "rate_dl_bps", "n_samples", "compute_sps"]
        pd.testing.assert_frame_equal(a.clients[world], b.clients[world])

        def requests(run):
            t = run.timeline
            return t[t["kind"] == "request"][["round", "client"]].reset_index(drop=True)

        pd.testing.assert_frame_equal(requests(a), requests(b))
        selected_a = a.rounds["selected"].map(sorted).tolist()
        assert selected_a != b.rounds["selected"].map(sorted).tolist()
    # Another seed is another world.
    first, second = (runs[runs.ids.index(ids[0])] for ids in by_seed)
    assert not first.clients["rate_ul_bps"].equals(second.clients["rate_ul_bps"])
