"""Partial work on the simulated clock (``fl.partial_work``, netfl/fl/partial.py): a
client stops at the deadline less the upload time it expects and uploads the whole local
steps it has done (Li et al., MLSys 2020: FedProx's tolerance of stragglers).

The hand-computed setting: devices at a constant 10 samples/s, no cold start, the model
(1 Mbit) instantly down and up at a fixed 1 Mbit/s (U = 1 s), two local epochs of
batches of 10, deadline 7.5 s. A device with 50 samples is asked 10 steps (100 samples,
10 s); it stops at 7.5 - 1 = 6.5 s with 65 samples done: 6 whole steps. One with 45
samples is asked 2 x 5 steps (the fifth of each pass holds 5 samples; 90 samples, 9 s); by
6.5 s it did a pass (45) and 20 samples more: 5 + 2 = 7 steps. Both uploads end at 7.5 s:
in time.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

from netfl.cli import main
from netfl.config.devices import BackgroundLoad
from netfl.errors import ScenarioWarning
from netfl.fl.background import BackgroundQueue
from netfl.scenario import load_scenario, scenario_from_data
from netfl.simulation import resume, simulate
from tests.test_resume import assert_same_tables, busy, whole_and_interrupted


def clocked(**fl: Any) -> dict[str, Any]:
    group = {"compute_sps": 10, "cold_start_s": 0}
    return {
        "name": "partial",
        "seed": 1,
        "radio": {"model": "fixed", "rate_ul_bps": 1e6, "rate_dl_bps": 1e6},
        "devices": {
            "groups": [
                {"name": "fifty", "count": 1, "n_samples": 50, **group},
                {"name": "forty_five", "count": 1, "n_samples": 45, **group},
            ]
        },
        "fl": {
            "rounds": 2,
            "clients_per_round": 2,
            "distribution": "instant",
            "model_size_bits": 1e6,
            "deadline_s": 7.5,
            "partial_work": True,
            **fl,
        },
        "learning": {"dataset": "digits", "model": "digits_mlp", "local_epochs": 2},
    }


def run_tables(data: dict[str, Any], tmp_path) -> tuple[pd.DataFrame, pd.DataFrame]:
    run = simulate(scenario_from_data(data), tmp_path / "run").run_dir
    return pd.read_parquet(run / "rounds.parquet"), pd.read_parquet(run / "timeline.parquet")


def by_client(rounds: pd.DataFrame, column: str, r: int = 0) -> dict[int, int]:
    row = rounds.iloc[r]
    return dict(zip(row["selected"].tolist(), row[column].tolist(), strict=True))


def test_a_straggler_uploads_the_steps_its_device_did_in_time(tmp_path, monkeypatch):
    from netfl.learning.learner import TorchLearner

    asked: list[list[int]] = []
    local_update = TorchLearner.local_update

    def spy(self, round, clients, want=frozenset(), steps=None):
        asked.append(dict(zip(clients.tolist(), steps.tolist(), strict=True)))
        return local_update(self, round, clients, want, steps)

    monkeypatch.setattr(TorchLearner, "local_update", spy)
    rounds, timeline = run_tables(clocked(), tmp_path)
    for r in range(2):
        assert by_client(rounds, "steps_planned", r) == {0: 10, 1: 10}
        assert by_client(rounds, "steps_done", r) == {0: 6, 1: 7}
        assert sorted(rounds["completed"][r].tolist()) == [0, 1]
    assert asked == [{0: 6, 1: 7}, {0: 6, 1: 7}]
    ends = timeline[(timeline["kind"] == "compute_end") & (timeline["round"] == 0)]
    assert np.allclose(ends["t_s"], 6.5) and np.allclose(ends["duration_s"], 6.5)
    assert sorted(ends["steps_done"].astype(int)) == [6, 7]
    uploads = timeline[(timeline["kind"] == "upload_end") & (timeline["round"] == 0)]
    assert np.allclose(uploads["t_s"], 7.5)


def test_without_partial_work_both_are_dropped(tmp_path):
    with pytest.warns(ScenarioWarning, match="shorter than the fastest possible round"):
        rounds, timeline = run_tables(clocked(partial_work=False), tmp_path)
    assert (rounds["n_completed"] == 0).all() and (rounds["n_deadline_miss"] == 2).all()
    assert "steps_done" not in rounds and "steps_done" not in timeline


def test_an_upload_slower_than_expected_still_misses(tmp_path):
    """FedCS uploads one after another: the second client waits for the first's upload
    (6.5 -> 7.5 s) and its own would end at 8.5 s: its 7 steps are lost (deadline_miss),
    recorded as done but not aggregated."""
    rounds, timeline = run_tables(clocked(protocol="fedcs"), tmp_path)
    first = rounds.iloc[0]
    assert first["n_completed"] == 1 and first["n_deadline_miss"] == 1
    assert by_client(rounds, "steps_done") == {0: 6, 1: 7}
    missed = timeline[(timeline["kind"] == "deadline_miss") & (timeline["round"] == 0)]
    assert missed["client"].tolist() == [1] and np.isclose(missed["t_s"].iloc[0], 7.5)


def test_a_client_with_no_step_done_in_time_sends_nothing(tmp_path):
    """Deadline 1.5 s: it must stop at 0.5 s with 5 samples of its first 10-sample batch
    (and the scenario warns: one step and the upload take 2 s)."""
    with pytest.warns(ScenarioWarning, match="about 2 s"):
        rounds, timeline = run_tables(clocked(deadline_s=1.5), tmp_path)
    assert (rounds["n_completed"] == 0).all()
    assert by_client(rounds, "steps_done") == {0: 0, 1: 0}
    assert not (timeline["kind"] == "upload_start").any()
    ends = timeline[timeline["kind"] == "compute_end"]
    assert np.allclose(ends["t_s"] - 1.5 * ends["round"], 0.5) and (ends["steps_done"] == 0).all()


def test_the_expected_upload_factor_stops_earlier(tmp_path):
    """factor 2: stop at 7.5 - 2 = 5.5 s: 55 samples, 5 steps; 45 + 10: 6 steps."""
    rounds, _ = run_tables(clocked(partial_work_upload_factor=2.0), tmp_path)
    assert by_client(rounds, "steps_done") == {0: 5, 1: 6}


def test_partial_clients_train_together_in_one_batched_call(tmp_path, monkeypatch):
    from netfl.learning.dense import DenseTrainer  # the digits MLP's path on CPU

    calls: list[list[int]] = []
    train = DenseTrainer.train

    def spy(self, state, x, y, indices, seeds, sgd, steps=None):
        calls.append(list(steps))
        return train(self, state, x, y, indices, seeds, sgd, steps)

    monkeypatch.setattr(DenseTrainer, "train", spy)
    run_tables(clocked(), tmp_path)
    assert calls == [[6, 7], [6, 7]]


# -- the device model: a job stopped early (netfl/fl/background.py) ----------------------


@pytest.mark.parametrize(
    ("discipline", "until_s", "expected"),
    [
        # PS: the FL job (3 s of work) shares the CPU with one job of 2 s until t = 4
        # (2 s of FL work done), then runs alone: done at 5 s.
        ("ps", 3.0, (0.0, 3.0, 1.5)),
        ("ps", 4.5, (0.0, 4.5, 2.5)),
        ("ps", 6.0, (0.0, 5.0, 3.0)),
        # FIFO: it starts after the 2 s ahead of it, done at 5 s.
        ("fifo", 3.5, (2.0, 3.5, 1.5)),
        ("fifo", 1.0, (1.0, 1.0, 0.0)),
        ("fifo", 9.0, (2.0, 5.0, 3.0)),
    ],
)
def test_a_job_stopped_early_did_the_work_of_its_time_on_the_cpu(discipline, until_s, expected):
    load = BackgroundLoad(
        arrival_rate_hz=0.0, job_work_s={"dist": "constant", "value": 2.0}, discipline=discipline
    )
    queue = BackgroundQueue(load, [2.0], 0.0, np.random.default_rng(0))
    assert np.allclose(queue.serve_until(0.0, 3.0, until_s), expected)


def test_serve_is_serve_until_never(tmp_path):
    """With background arrivals, a job not stopped gives what serve gives (same draws)."""
    load = BackgroundLoad(arrival_rate_hz=0.3, job_work_s={"dist": "exponential", "mean": 2.0})
    for discipline in ("ps", "fifo"):
        load = load.model_copy(update={"discipline": discipline})
        a = BackgroundQueue(load, [1.0, 0.5], 0.0, np.random.default_rng(4))
        b = BackgroundQueue(load, [1.0, 0.5], 0.0, np.random.default_rng(4))
        start, end = a.serve(0.3, 4.0)
        assert b.serve_until(0.3, 4.0, np.inf) == (start, end, 4.0)


# -- other protocols, refusals, resume -----------------------------------------------------


def test_fedbuff_trains_each_client_for_its_steps(tiny, tmp_path, monkeypatch):
    """Under FedBuff the learner trains lazily: each client for the steps its device did
    (the compute_end rows), with its version's other clients whose steps are known."""
    from netfl.learning.learner import TorchLearner

    trained: dict[tuple[int, int], int] = {}
    train_from = TorchLearner._train_from

    def spy(self, state, version, clients, keys, steps=None):
        assert steps is not None
        pairs = zip(clients.tolist(), steps.tolist(), strict=True)
        trained.update({(version, c): s for c, s in pairs})
        return train_from(self, state, version, clients, keys, steps)

    monkeypatch.setattr(TorchLearner, "_train_from", spy)
    tiny["devices"]["groups"][0]["count"] = 8
    tiny["fl"] = {
        "protocol": "fedbuff",
        "rounds": 6,
        "concurrency": 4,
        "buffer_size": 2,
        "deadline_s": 1.6,
        "partial_work": True,
    }
    _, timeline = run_tables(tiny, tmp_path)
    ends = timeline[timeline["kind"] == "compute_end"]
    rows = zip(ends["round"], ends["client"], ends["steps_done"], strict=True)
    done = {(r, c): int(s) for r, c, s in rows}
    # A client trained with its version's batch may still be computing when the run ends
    # (cancelled: no compute_end); every other one trained exactly its steps.
    finished = [key for key in trained if key in done]
    assert len(finished) >= len(trained) - 4
    assert all(done[key] == trained[key] for key in finished)
    assert (ends["steps_done"] < ends["steps_planned"]).any()


def test_hierarchical_edges_aggregate_partial_updates(tiny, tmp_path):
    tiny["fl"].update(protocol="hierarchical", kappa1=2, kappa2=2, deadline_s=2.5)
    tiny["fl"].update(partial_work=True, model_size_bits=1e5)
    tiny["fl"]["aggregation"] = {"name": "fednova"}
    rounds, _ = run_tables(tiny, tmp_path)
    planned = np.concatenate(rounds["steps_planned"].to_numpy())
    done = np.concatenate(rounds["steps_done"].to_numpy())
    assert (done <= planned).all() and (done < planned).any() and rounds["n_completed"].sum() > 0


def test_an_interrupted_run_with_a_server_optimizer_resumes_to_the_same_tables(
    tiny, tmp_path, monkeypatch
):
    """FedAdam's moments and partial work's steps: a resumed run ends byte-identical."""
    data = busy(tiny, "ucb_cs", deadline_s=3.0, partial_work=True)
    data["fl"]["aggregation"] = {"name": "fedadam", "params": {"eta": 0.05}}
    data["learning"]["prox_mu"] = 0.1
    whole_and_interrupted(data, tmp_path, monkeypatch, every=2, at=3)
    assert resume(tmp_path / "run").summary["status"] == "completed"
    assert_same_tables(tmp_path / "whole", tmp_path / "run")
    rounds = pd.read_parquet(tmp_path / "whole" / "rounds.parquet")
    done = np.concatenate(rounds["steps_done"].to_numpy())
    planned = np.concatenate(rounds["steps_planned"].to_numpy())
    assert ((done > 0) & (done < planned)).any()  # partial updates were made


@pytest.mark.parametrize(
    ("sets", "key"),
    [
        (["learning.prox_mu=-0.1"], "learning.prox_mu"),
        (["fl.aggregation={name: fedadam, params: {beta1: 1.0}}"], "fl.aggregation.params.beta1"),
        (["fl.aggregation={name: fedyogi, params: {beta2: -0.1}}"], "fl.aggregation.params.beta2"),
        (["fl.aggregation={name: fedadagrad, params: {tau: 0}}"], "fl.aggregation.params.tau"),
        (["fl.aggregation={name: fedavgm, params: {eta: 0}}"], "fl.aggregation.params.eta"),
        (["fl.aggregation={name: fedadam, params: {rho: 1}}"], "fl.aggregation.params.rho"),
        (["fl.aggregation.name=fedadm"], "fl.aggregation.name"),
        (["fl.partial_work=true"], "fl.partial_work"),
        (["fl.partial_work_upload_factor=2"], "fl.partial_work_upload_factor"),
        (["fl.protocol=hierarchical", "fl.aggregation.name=fedadam"], "fl.aggregation.name"),
        (["fl.protocol=fedbuff", "fl.aggregation.name=fednova"], "fl.aggregation.name"),
        (
            ["fl.partial_work=true", "fl.deadline_s=5", "fl.partial_work_upload_factor=0.5"],
            "fl.partial_work_upload_factor",
        ),
    ],
)
def test_bad_values_are_refused_in_one_line_naming_the_key(sets, key, capsys):
    args = ["validate", "quickstart"] + [a for s in sets for a in ("--set", s)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and key in err[0], err


def test_learning_none_refuses_partial_work_and_rules(tiny, write_scenario, capsys):
    tiny["learning"] = "none"
    tiny["fl"].update(model_size_bits=1e6, deadline_s=5.0, partial_work=True)
    tiny["fl"]["aggregation"] = {"name": "fedadam"}
    assert main(["validate", str(write_scenario(tiny))]) == 2
    err = capsys.readouterr().err
    assert "fl.partial_work" in err and "fl.aggregation.name" in err


def test_the_report_shows_the_local_work(tmp_path):
    run = simulate(scenario_from_data(clocked()), tmp_path / "run").run_dir
    assert main(["report", str(run)]) == 0
    page = (run / "report" / "report.html").read_text()
    assert "Local work (fl.partial_work)" in page and "partial updates aggregated" in page
    table = pd.read_csv(run / "report" / "local_work.csv")
    assert table["steps_done"].tolist() == [6, 7, 6, 7]


@pytest.mark.parametrize(
    ("sweep", "runs"),
    [("examples/fedprox_synthetic_sweep.yaml", 72), ("examples/partial_work_lte_sweep.yaml", 32)],
)
def test_the_reproduction_sweeps_plan(sweep, runs, capsys):
    assert main(["sweep", sweep, "--dry-run"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == runs


def test_the_fedprox_scenario_makes_the_papers_stragglers(tmp_path):
    """scenarios/fedprox_synthetic.yaml, small (E = 4 epochs, straggler speeds x/4): a
    straggler uploads x whole epochs, 1 <= x < E (the paper's x ~ U{1, ..., E - 1}); FedAvg
    (no partial work) aggregates exactly the others, the same devices in both runs."""
    speeds = "{dist: choice, values: [1.0, 0.25, 0.5, 0.75], p: [0.25, 0.25, 0.25, 0.25]}"
    sets = [
        "fl.rounds=1",
        "fl.clients_per_round=6",
        "learning.local_epochs=4",
        "learning.fairness_loss=none",
        f"devices.groups.0.available_cpu_ratio={speeds}",
    ]
    from netfl.scenario import load_scenario

    runs = {}
    for partial in ("true", "false"):
        sc = load_scenario("fedprox_synthetic", [*sets, f"fl.partial_work={partial}"])
        run = simulate(sc, tmp_path / partial).run_dir
        runs[partial] = pd.read_parquet(run / "rounds.parquet")
        clients = pd.read_parquet(run / "clients.parquet").set_index("client")["n_samples"]
    row = runs["true"].iloc[0]
    assert sorted(row["completed"].tolist()) == sorted(row["selected"].tolist())
    full = []
    for c, planned, done in zip(
        row["selected"], row["steps_planned"], row["steps_done"], strict=True
    ):
        per_epoch = -(-int(clients[c]) // 10)
        assert planned == 4 * per_epoch and done % per_epoch == 0 and done > 0
        if done == planned:
            full.append(int(c))
    assert 0 < len(full) < len(row["selected"])  # seed 1 draws stragglers and full-speed ones
    assert sorted(runs["false"].iloc[0]["completed"].tolist()) == sorted(full)


def test_a_client_nominally_below_the_lowest_mcs_sends_nothing(tmp_path):
    """On the calibrated network with the fixed power per RB (quickstart with
    ``uplink_power_control.mode: fixed_per_rb``; issue 33's power control lifts it), the nominal
    uplink SINR of a deep-indoor device at full interference is below MCS 0 of lte_tbs: its
    nominal uplink rate is 0, so under partial work it expects an upload that never ends
    and trains nothing (it may still upload in a run without partial work, whose real
    interference is lighter). No division by zero, no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        run = simulate(
            load_scenario(
                "quickstart",
                [
                    "fl.partial_work=true",
                    "fl.deadline_s=20",
                    "fl.rounds=6",
                    "radio.uplink_power_control.mode=fixed_per_rb",
                ],
            ),
            tmp_path / "run",
        ).run_dir
    clients = pd.read_parquet(run / "clients.parquet")
    below = clients[clients["rate_ul_bps"] == 0]
    assert len(below) and (below["n_selected"] > 0).any(), "quickstart lost its test case"
    assert (below["n_completed"] == 0).all()
    assert (below["n_deadline_miss"] == below["n_selected"]).all()
    rounds = pd.read_parquet(run / "rounds.parquet")
    for _, row in rounds.iterrows():
        steps = dict(zip(row["selected"].tolist(), row["steps_done"].tolist(), strict=True))
        assert all(steps[c] == 0 for c in below["client"] if c in steps)
