"""Checkpoint and resume: a resumed run's files are byte-identical to an uninterrupted run's.

The world is busy on purpose: an LTE cell with uplink and downlink FTP background traffic,
devices that come and go (Markov availability) with background compute jobs, so that a
resumed run only matches if every in-flight flow, queue and availability process is
rebuilt exactly. Learning-aware strategies (ucb_cs learns from local losses, pow_d polls
the global model's losses, gpfl polls update vectors) and a system-aware one (rbcs_f) are
covered.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

from netfl import load_run
from netfl.checkpoint.store import checkpoint_path, read_checkpoint
from netfl.scenario import scenario_from_data
from netfl.simulation import resume, simulate
from tests.conftest import isolated

TABLES = ("timeline.parquet", "rounds.parquet", "clients.parquet", "strategy.parquet")

STRATEGIES = {
    "ucb_cs": ("netfl.selection.ucb_cs", "UCBCS", {}),
    "pow_d": ("netfl.selection.pow_d", "PowD", {}),
    "rbcs_f": ("netfl.selection.rbcs_f", "RBCSF", {"m": 3, "beta": 0.2}),
    # polls for update vectors (its initial projections) and learns from them
    "gpfl": ("netfl.selection.gpfl", "GPFL", {}),
}


def busy(tiny: dict[str, Any], strategy: str, **fl: Any) -> dict[str, Any]:
    """The tiny scenario on a busy LTE cell with devices that come and go."""
    isolated(tiny)
    tiny["traffic"] = {
        "sources": [
            # 88% of the uplink's RB-seconds under the standard LTE mapping (0.5 files/s
            # overloads it, and the run is refused)
            {"kind": "ftp1", "direction": "uplink", "arrival_rate_hz": 0.3},
            {
                "kind": "ftp1",
                "direction": "downlink",
                "arrival_rate_hz": 2.0,  # 89% of the downlink (3 files/s: 134%, refused)
                "file_size_bits": 8e6,
            },
        ]
    }
    group = tiny["devices"]["groups"][0]
    group["count"] = 8
    group["availability"] = {"kind": "markov", "mean_on_s": 30, "mean_off_s": 10}
    group["background"] = {
        "arrival_rate_hz": 0.1,
        "job_work_s": {"dist": "exponential", "mean": 2.0},
    }
    tiny["fl"].update({"rounds": 6, **fl})
    _, _, params = STRATEGIES[strategy]
    tiny["selection"] = {"name": strategy, "params": params}
    return tiny


def _strategy_class(name: str) -> type:
    module, cls, _ = STRATEGIES[name]
    return getattr(__import__(module, fromlist=[cls]), cls)


def stop_at(monkeypatch: pytest.MonkeyPatch, cls: type, round_: int) -> None:
    """Press Ctrl-C inside ``cls.select`` in round ``round_`` (mid-round)."""
    select = cls.select

    def stopping(self: Any, ctx: Any) -> Any:
        if ctx.round == round_:
            raise KeyboardInterrupt
        return select(self, ctx)

    monkeypatch.setattr(cls, "select", stopping)


def assert_same_tables(a, b) -> None:
    for name in TABLES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def whole_and_interrupted(
    data: dict[str, Any], tmp_path, monkeypatch, *, every: int, at: int, save: bool = True
) -> None:
    """Run ``data`` uninterrupted into ``whole``, then with checkpoints every ``every``
    rounds into ``run``, pressing Ctrl-C in round ``at`` (``save=False``: as if killed,
    without the chance to save a last checkpoint)."""
    from netfl.checkpoint.session import Checkpointer

    simulate(scenario_from_data(data), tmp_path / "whole")
    data["fl"]["checkpoint_every"] = every
    with monkeypatch.context() as patch:
        if not save:
            patch.setattr(Checkpointer, "save_latest", lambda self: None)
        stop_at(patch, _strategy_class(data["selection"]["name"]), at)
        with pytest.raises(KeyboardInterrupt):
            simulate(scenario_from_data(data), tmp_path / "run")


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_interrupted_then_resumed_run_matches_an_uninterrupted_one(
    strategy, tiny, tmp_path, monkeypatch
):
    whole_and_interrupted(busy(tiny, strategy), tmp_path, monkeypatch, every=2, at=3)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    # Interrupted in round 3: the last completed boundary (3) was saved, not only 2.
    assert summary["checkpoint_round"] == 3
    assert read_checkpoint(tmp_path / "run").round == 3

    result = resume(tmp_path / "run")
    assert result.summary["status"] == "completed"
    assert result.summary["resumed_from_round"] == 3
    assert result.summary["checkpoint_round"] == 6
    assert_same_tables(tmp_path / "whole", tmp_path / "run")
    assert_meaningful(tmp_path / "run", boundary=3)
    if strategy in ("pow_d", "gpfl"):  # polls were replayed
        timeline = pd.read_parquet(tmp_path / "run" / "timeline.parquet")
        polls = timeline[timeline["kind"] == "poll_upload_end"]
        assert (polls["round"] < 3).any()


def assert_meaningful(run, boundary: int) -> None:
    """The replay had something to get right: background flows in flight at the
    checkpoint's boundary, and learning outcomes (evaluations) on both sides of it."""
    timeline = pd.read_parquet(run / "timeline.parquet")
    t_s = pd.read_parquet(run / "rounds.parquet")["t_end_s"][boundary - 1]
    before = timeline[timeline["t_s"] <= t_s]["kind"]
    in_flight = (before == "background_flow_start").sum() - (before == "background_flow_end").sum()
    assert in_flight > 0
    evaluations = timeline[timeline["kind"] == "evaluate"]
    assert (evaluations["round"] < boundary).any() and (evaluations["round"] >= boundary).any()


def test_resume_from_a_periodic_checkpoint(tiny, tmp_path, monkeypatch):
    """A run killed without a chance to save (kill -9) resumes from the last periodic one."""
    whole_and_interrupted(busy(tiny, "pow_d"), tmp_path, monkeypatch, every=2, at=5, save=False)
    assert read_checkpoint(tmp_path / "run").round == 4
    assert resume(tmp_path / "run").summary["resumed_from_round"] == 4
    assert_same_tables(tmp_path / "whole", tmp_path / "run")


@pytest.mark.parametrize("killed", [True, False])
def test_a_streamed_run_resumes_from_its_parts(killed, tiny, tmp_path, monkeypatch):
    """Parts of 60 rows (a timeline part every round or two with background flows across
    its boundaries; RBCS-F's scores, 110 rows in 6 rounds: two score parts and a rest). A
    run killed in round 5 (nothing written at the end; checkpoint 4) or interrupted there
    (tables and checkpoint 5 written, the score parts kept) resumes: the timeline's parts
    are written again by the replay, the scores' before the checkpoint are kept and the
    later ones dropped, and the tables end byte-identical to an uninterrupted run's."""
    from netfl import simulation
    from netfl.checkpoint.session import Checkpointer
    from netfl.recorder import streaming

    monkeypatch.setattr(streaming, "PART_ROWS", 60)
    data = busy(tiny, "rbcs_f")
    simulate(scenario_from_data(data), tmp_path / "whole")
    data["fl"]["checkpoint_every"] = 2
    run = tmp_path / "run"
    with monkeypatch.context() as patch:
        if killed:  # kill -9: nothing written at the end, no last checkpoint
            patch.setattr(simulation, "write_results", lambda *args, **kwargs: None)
            patch.setattr(Checkpointer, "save_latest", lambda self: None)
        stop_at(patch, _strategy_class("rbcs_f"), 5)
        with pytest.raises(KeyboardInterrupt):
            simulate(scenario_from_data(data), run)
    scores = streaming.part_paths(run, streaming.STRATEGY)
    kept = read_checkpoint(run).score_log.n_drained
    assert kept > 0 and streaming.covers(run, streaming.STRATEGY, kept)
    if killed:
        timeline = streaming.part_paths(run)
        assert len(timeline) >= 2 and not (run / "timeline.parquet").exists()
        assert len(load_run(run).timeline) >= 60 * len(timeline)
        assert len(load_run(run).strategy) >= 60 * len(scores)
        timeline[-1].write_bytes(b"a part the resumed run must not keep")
    else:
        assert not (run / streaming.PARTS_DIR).exists()
        assert (run / "strategy.parquet").is_file()
    stale = streaming.parts_dir(run, streaming.STRATEGY) / f"part-{kept:012d}.arrow"
    assert stale.exists() != killed  # the interrupted run wrote its last rows out
    stale.write_bytes(b"a score part after the checkpoint: dropped")
    assert resume(run).summary["resumed_from_round"] == (4 if killed else 5)
    for table in (streaming.TIMELINE, streaming.STRATEGY):
        assert not streaming.parts_dir(run, table).exists()
    assert_same_tables(tmp_path / "whole", run)
    assert pq.ParquetFile(run / "timeline.parquet").metadata.num_row_groups >= 3
    assert pq.ParquetFile(run / "strategy.parquet").metadata.num_row_groups >= 2


def test_a_run_whose_score_parts_are_gone_is_not_resumed(tiny, tmp_path, monkeypatch):
    from netfl.checkpoint.resume import open_run
    from netfl.checkpoint.store import CheckpointError
    from netfl.recorder import streaming

    monkeypatch.setattr(streaming, "PART_ROWS", 30)
    whole_and_interrupted(busy(tiny, "rbcs_f"), tmp_path, monkeypatch, every=2, at=4)
    run = tmp_path / "run"
    first = streaming.part_paths(run, streaming.STRATEGY)[0]
    first.unlink()
    with pytest.raises(CheckpointError, match="does not hold the strategy's first"):
        open_run(run)


def test_a_resumed_run_can_be_interrupted_and_resumed_again(tiny, tmp_path, monkeypatch):
    data = busy(tiny, "ucb_cs", checkpoint_every=1)
    simulate(scenario_from_data(data), tmp_path / "whole")
    cls = _strategy_class("ucb_cs")
    for round_ in (2, 4):
        with monkeypatch.context() as patch, pytest.raises(KeyboardInterrupt):
            stop_at(patch, cls, round_)
            if round_ == 2:
                simulate(scenario_from_data(data), tmp_path / "run")
            else:
                resume(tmp_path / "run")
        assert read_checkpoint(tmp_path / "run").round == round_
    assert resume(tmp_path / "run").summary["resumed_from_round"] == 4
    assert_same_tables(tmp_path / "whole", tmp_path / "run")


def test_a_checkpoint_holds_the_boundary(tiny, tmp_path):
    data = busy(tiny, "ucb_cs", checkpoint_every=4)
    result = simulate(scenario_from_data(data), tmp_path / "run")
    checkpoint = read_checkpoint(tmp_path / "run")
    assert checkpoint.round == 4 and result.summary["checkpoint_round"] == 4
    assert len(checkpoint.decisions.rounds) == 4
    rounds = pd.read_parquet(tmp_path / "run" / "rounds.parquet")
    # The clock at the boundary is the end of round 3; the selections are round 0-3's.
    assert checkpoint.sim_time_s == rounds["t_end_s"][3]
    for r, decision in enumerate(checkpoint.decisions.rounds):
        assert sorted(decision.selected) == sorted(rounds["selected"][r].tolist())
    strategy = pickle.loads(checkpoint.strategy)
    assert type(strategy).__name__ == "UCBCS"


def test_without_checkpoint_every_no_checkpoint_is_written(tiny, tmp_path):
    result = simulate(scenario_from_data(busy(tiny, "rbcs_f")), tmp_path / "run")
    assert not checkpoint_path(tmp_path / "run").parent.exists()
    assert result.summary["checkpoint_round"] is None
    assert result.summary["resumed_from_round"] is None


def test_resume_with_a_time_budget_and_timed_evaluations(tiny, tmp_path, monkeypatch):
    """The evaluation schedule by simulated time has state (the next due time), and
    per-client losses (client_loss rows) come from the recorded evaluations."""
    data = busy(tiny, "ucb_cs")
    data["fl"].update({"rounds": None, "time_budget_s": 30.0})
    data["learning"].update({"eval_every_s": 4.0, "fairness_loss": "train"})
    whole_and_interrupted(data, tmp_path, monkeypatch, every=3, at=4)
    resume(tmp_path / "run")
    assert_same_tables(tmp_path / "whole", tmp_path / "run")
    timeline = pd.read_parquet(tmp_path / "run" / "timeline.parquet")
    assert (timeline["kind"] == "client_loss").any()


def test_resume_without_learning(tiny, tmp_path, monkeypatch):
    data = busy(tiny, "rbcs_f")
    data["learning"] = None
    data["fl"]["model_size_bits"] = 2e5
    data["devices"]["groups"][0]["n_samples"] = 50
    whole_and_interrupted(data, tmp_path, monkeypatch, every=2, at=3)
    assert resume(tmp_path / "run").summary["resumed_from_round"] == 3
    assert_same_tables(tmp_path / "whole", tmp_path / "run")
