"""Running sweeps: the index, resume, failures, local processes and Ray."""

from __future__ import annotations

import json
import sys

import pandas as pd
import pytest

from netfl.cli import main
from netfl.errors import NetflError, RunDirectoryError
from netfl.recorder.sweep_index import read_index
from netfl.scenario import scenario_from_data
from netfl.sweep import backends, load_sweep, run_sweep
from netfl.sweep.backends import ray_resources
from tests.analysis.conftest import STRATEGY_GRID, TIMING, write_sweep

EXPLODING = "tests.analysis.strategies:Exploding"


def _files(run_dir):
    return {name: (run_dir / name).read_bytes() for name in ("timeline.parquet", "rounds.parquet")}


def test_index_lists_every_run(timing_sweep):
    index = read_index(timing_sweep)
    assert len(index) == 4
    assert (index["status"] == "completed").all() and (index["error"] == "").all()
    assert sorted(index["seed"]) == [1, 1, 2, 2]
    for row in index.itertuples():
        run_dir = timing_sweep / row.run_dir
        assert json.loads((run_dir / "summary.json").read_text())["status"] == "completed"
        assert row.run_id.startswith(f"s{row.seed}-")
    assert pd.read_csv(timing_sweep / "index.csv")["run_id"].tolist() == index["run_id"].tolist()
    overrides = [json.loads(o) for o in index["overrides"]]
    assert {json.dumps(o, sort_keys=True) for o in overrides} == {
        '{"selection.params": {}}',
        '{"selection.params": {"weighted": true}}',
    }


def test_failed_run_is_recorded_and_others_go_on_then_resume(tmp_path, capsys):
    body = {
        "overrides": {"selection.name": EXPLODING},
        "grid": {"selection.params.explode": [False, True]},
        "seeds": [1, 2],
    }
    path = write_sweep(tmp_path, TIMING, body)
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "2/4 runs completed (0 already done), 2 failed" in err
    assert "RuntimeError: boom in round 1" in err
    index = read_index(out).set_index("run_id")
    failed = index[index["status"] == "failed"]
    assert len(failed) == 2 and failed["error"].str.contains("boom in round 1").all()
    assert '"selection.params.explode": true' in failed["overrides"].iloc[0]
    # The failed runs' directories say so, with what was recorded before the failure.
    summary = json.loads((out / failed["run_dir"].iloc[0] / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["rounds"] == 1

    done = index[index["status"] == "completed"]
    before = {rid: _files(out / d) for rid, d in done["run_dir"].items()}
    result = run_sweep(load_sweep(path), out, progress="quiet")
    assert result.skipped == 2
    assert (result.index.set_index("run_id").loc[failed.index, "status"] == "failed").all()
    after = {rid: _files(out / d) for rid, d in done["run_dir"].items()}
    assert after == before


def test_interrupted_sweep_resumes(tmp_path, monkeypatch):
    path = write_sweep(tmp_path, TIMING, STRATEGY_GRID)
    out = tmp_path / "out"
    real = backends.execute
    calls = []

    def interrupt_second(task, run_dir=None):
        calls.append(task.run_id)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(task, run_dir)

    monkeypatch.setattr(backends, "execute", interrupt_second)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(load_sweep(path), out, progress="quiet")
    assert read_index(out)["status"].tolist() == ["completed", "pending", "pending", "pending"]
    monkeypatch.setattr(backends, "execute", real)
    result = run_sweep(load_sweep(path), out, progress="quiet")
    assert result.skipped == 1
    assert (result.index["status"] == "completed").all()


def test_sweep_refuses_zero_jobs_from_the_api(tmp_path):
    sweep = load_sweep(write_sweep(tmp_path, TIMING, STRATEGY_GRID))
    with pytest.raises(NetflError, match="jobs must be at least 1"):
        run_sweep(sweep, tmp_path / "out", jobs=0)
    assert not (tmp_path / "out").exists()  # refused before anything is written


def test_sweep_refuses_a_foreign_folder(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "thesis.tex").write_text("keep")
    with pytest.raises(RunDirectoryError, match="is not a sweep directory"):
        run_sweep(load_sweep(write_sweep(tmp_path, TIMING, STRATEGY_GRID)), tmp_path / "out")


@pytest.mark.slow
def test_local_processes_give_the_same_runs(timing_sweep, tmp_path):
    path = write_sweep(tmp_path, TIMING, STRATEGY_GRID)
    result = run_sweep(load_sweep(path), tmp_path / "out", jobs=2, progress="quiet")
    assert (result.index["status"] == "completed").all()
    for run_dir in result.index["run_dir"]:
        assert _files(tmp_path / "out" / run_dir) == _files(timing_sweep / run_dir)


def test_ray_task_body_returns_the_whole_run_directory(tmp_path):
    """execute_collect (what a Ray worker runs; called here without Ray) returns every file
    of the run directory, the checkpoint in its subfolder too, and write_files puts them
    back where the run would have written them."""
    data = {**TIMING, "fl": {**TIMING["fl"], "checkpoint_every": 2}}
    run_dir = tmp_path / "run"
    task = backends.Task("r", scenario_from_data(data).model_dump(mode="json"), str(run_dir))
    outcome, files = backends.execute_collect(task)
    assert outcome.status == "completed"
    assert {"summary.json", "timeline.parquet", "checkpoint/state.ckpt"} <= set(files)
    backends.write_files(run_dir, files)
    written = {p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file()}
    assert written == set(files)
    assert (run_dir / "checkpoint" / "state.ckpt").read_bytes() == files["checkpoint/state.ckpt"]


def test_ray_resources():
    assert ray_resources("no", 4, 0.25) == {"num_cpus": 1.0, "num_gpus": 0.0}
    assert ray_resources("preferred", 0, 0.25) == {"num_cpus": 1.0, "num_gpus": 0.0}
    assert ray_resources("preferred", 2, 0.25) == {"num_cpus": 1.0, "num_gpus": 0.25}
    assert ray_resources("required", 1, 0.5)["num_gpus"] == 0.5
    with pytest.raises(NetflError, match="cluster has no GPUs"):
        ray_resources("required", 0, 0.25)


@pytest.mark.slow
def test_ray_backend_on_a_local_instance(timing_sweep, tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'netfl[ray]'")
    path = write_sweep(tmp_path, TIMING, {**STRATEGY_GRID, "seeds": [1]})
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        result = run_sweep(load_sweep(path), tmp_path / "out", backend="ray", progress="quiet")
    finally:
        ray.shutdown()
    assert len(result.index) == 2 and (result.index["status"] == "completed").all()
    for run_dir in result.index["run_dir"]:
        # Runs on Ray workers are the same runs, byte for byte.
        assert _files(tmp_path / "out" / run_dir) == _files(timing_sweep / run_dir)


def test_ray_backend_without_ray_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    path = write_sweep(tmp_path, TIMING, STRATEGY_GRID)
    assert main(["sweep", str(path), "--out", str(tmp_path / "o"), "--backend", "ray"]) == 2
    assert "the Ray backend needs Ray: pip install 'netfl[ray]'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_ray_without_a_cluster_at_the_address_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    """``--address auto`` with no cluster: ``ray.init`` raises ConnectionError ("Could not
    find any running Ray instance", as Ray 2 does): bad input naming --address, not "the
    run failed"."""
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'netfl[ray]'")

    def no_cluster(**kwargs):
        raise ConnectionError("Could not find any running Ray instance. Please specify ...")

    monkeypatch.setattr(ray, "init", no_cluster)
    path = write_sweep(tmp_path, TIMING, STRATEGY_GRID)
    args = ["sweep", str(path), "--out", str(tmp_path / "o"), "--backend", "ray"]
    assert main([*args, "--address", "auto", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("error: --address auto: cannot connect to a Ray cluster (Could not")
    assert (read_index(tmp_path / "o")["status"] == "pending").all()  # no run started


def test_resuming_a_finished_sweep_on_ray_does_not_start_ray(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'netfl[ray]'")
    path = write_sweep(tmp_path, TIMING, {**STRATEGY_GRID, "seeds": [1]})
    run_sweep(load_sweep(path), tmp_path / "out", progress="quiet")
    started = []
    monkeypatch.setattr(ray, "init", lambda **kwargs: started.append(kwargs))
    result = run_sweep(load_sweep(path), tmp_path / "out", backend="ray", progress="quiet")
    assert result.skipped == 2 and not started
