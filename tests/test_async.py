"""Asynchronous FL (fedasync, fedbuff): staleness, stale models, equivalence with FedAvg,
batched training, selection under asynchrony, bad input, checkpoint and resume."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from netfl.errors import ScenarioError
from netfl.fl.staleness import StalenessWeight
from netfl.scenario import scenario_from_data
from netfl.simulation import resume, simulate
from netfl.world import build_world
from tests.test_resume import assert_same_tables, stop_at


def run_world(data: dict[str, Any]):
    world = build_world(scenario_from_data(data))
    world.env.run(until=world.env.process(world.server.run()))
    return world


def timing(tiny: dict[str, Any], protocol: str, **fl: Any) -> dict[str, Any]:
    """The tiny scenario, timing-only, 12 devices, under ``protocol``."""
    tiny["learning"] = "none"
    tiny["devices"]["groups"][0]["count"] = 12
    tiny["fl"] = {"protocol": protocol, "rounds": 20, "model_size_bits": 1e6, **fl}
    return tiny


# -- the staleness function (Xie, Koyejo, Gupta 2019, Sec. 5) ---------------------------


def test_staleness_functions_are_the_papers():
    t = np.arange(10)
    assert np.array_equal(StalenessWeight("constant")(t), np.ones(10))
    np.testing.assert_allclose(StalenessWeight("polynomial", exponent=0.5)(t), 1 / np.sqrt(t + 1))
    hinge = StalenessWeight("hinge", hinge_a=10, hinge_b=4)(t)
    np.testing.assert_allclose(hinge[:5], 1.0)
    np.testing.assert_allclose(hinge[5:], 1 / (10 * (t[5:] - 4) + 1))


@given(
    kind=st.sampled_from(["constant", "polynomial", "hinge"]),
    a=st.floats(0, 5),
    b=st.integers(0, 20),
    t=st.lists(st.integers(0, 10_000), min_size=2, max_size=20),
)
def test_staleness_weights_are_in_0_1_start_at_1_and_never_grow(kind, a, b, t):
    s = StalenessWeight(kind, exponent=a, hinge_a=a, hinge_b=b)
    t = np.sort(np.asarray(t))
    w = s(t)
    assert s(np.array([0]))[0] == 1.0
    assert np.all((w > 0) & (w <= 1))
    assert np.all(np.diff(w) <= 1e-15)


# -- the protocol on the simulated clock --------------------------------------------------


def download_versions(timeline: pd.DataFrame) -> pd.DataFrame:
    return timeline[timeline["kind"] == "download_start"][["t_s", "round", "client"]]


@pytest.mark.parametrize("protocol", ["fedasync", "fedbuff"])
def test_staleness_columns_are_versions_since_each_updates_download(protocol, tiny, tmp_path):
    fl = {"concurrency": 6} if protocol == "fedasync" else {"concurrency": 6, "buffer_size": 2}
    run = simulate(scenario_from_data(timing(tiny, protocol, **fl)), tmp_path / "run").run_dir
    rounds = pd.read_parquet(run / "rounds.parquet")
    timeline = pd.read_parquet(run / "timeline.parquet")
    downloads = download_versions(timeline)
    uploads = timeline[timeline["kind"] == "upload_end"]
    assert len(rounds) == 20
    assert (rounds["n_completed"] == (1 if protocol == "fedasync" else 2)).all()
    consumed: dict[int, int] = {}  # each client's arrivals, applied in order
    for row in rounds.itertuples():
        staleness = []
        for client in row.completed:
            k = consumed[client] = consumed.get(client, -1) + 1
            arrived_s = uploads[uploads["client"] == client]["t_s"].iloc[k]
            mine = downloads[(downloads["client"] == client) & (downloads["t_s"] < arrived_s)]
            staleness.append(row.round - int(mine["round"].iloc[-1]))  # that update's download
        assert row.staleness_max == max(staleness)
        assert row.staleness_mean == pytest.approx(np.mean(staleness))
    assert rounds["staleness_max"].max() > 0  # asynchrony happened
    # Versions follow one another in time, each ending when the previous one is applied.
    assert np.all(np.diff(rounds["t_end_s"]) >= 0)
    np.testing.assert_array_equal(rounds["t_start_s"][1:], rounds["t_end_s"][:-1])


def test_concurrency_clients_train_at_any_time(tiny, tmp_path):
    data = timing(tiny, "fedasync", concurrency=5, rounds=30)
    run = simulate(scenario_from_data(data), tmp_path / "run").run_dir
    timeline = pd.read_parquet(run / "timeline.parquet")
    events = timeline[timeline["kind"].isin(["download_start", "upload_end", "cancel", "drop"])]
    step = np.where(events["kind"] == "download_start", 1, -1)
    in_flight = np.cumsum(step)
    assert in_flight.max() == 5
    # Between an arrival and the refill of its slot no simulated time passes.
    at_time = pd.Series(in_flight, index=events["t_s"].to_numpy()).groupby(level=0).last()
    assert (at_time.iloc[:-1] == 5).all()


def test_synchronous_rounds_have_no_staleness(tiny, tmp_path):
    run = simulate(scenario_from_data(tiny), tmp_path / "run").run_dir
    rounds = pd.read_parquet(run / "rounds.parquet")
    assert (rounds["staleness_mean"] == 0).all() and (rounds["staleness_max"] == 0).all()


# -- stale models are real ----------------------------------------------------------------


def identical(tiny: dict[str, Any], **fl: Any) -> dict[str, Any]:
    """Six devices that take the same time for everything (so they finish together)."""
    tiny = scenario_copy(tiny)
    tiny["radio"] = {"model": "fixed", "rate_ul_bps": 1e6, "rate_dl_bps": 1e7}
    group = tiny["devices"]["groups"][0]
    group["base_train_time_s"] = 2.0
    group.pop("compute_sps")
    tiny["fl"] = {"rounds": 3, "clients_per_round": 3, "request_fraction": 1.0, **fl}
    return tiny


def test_fedbuff_with_one_fresh_buffer_is_fedavg(tiny):
    """concurrency = buffer = m, s = 1, eta_g = 1 and clients that finish together: each
    buffer is a synchronous round, and FedBuff's model is FedAvg's (data-size weights)."""
    fedavg = run_world(identical(tiny))
    buff = identical(tiny, protocol="fedbuff", concurrency=3, buffer_size=3)
    buff["fl"]["staleness_weight"] = "constant"
    fedbuff = run_world(buff)
    sync_rounds = [r.completed for r in fedavg.server.records]
    assert [r.completed for r in fedbuff.server.records] == sync_rounds
    assert all(r.staleness_max == 0 for r in fedbuff.server.records)
    a, b = fedavg.learner.global_state, fedbuff.learner.global_state
    changed = any(not torch.equal(a[k], fedavg_initial(tiny)[k]) for k in a)
    assert changed
    for name in a:  # the same model, to the bit
        assert torch.equal(a[name], b[name]), name
    assert [r.accuracy for r in fedbuff.server.records] == pytest.approx(
        [r.accuracy for r in fedavg.server.records], abs=1e-9
    )


def scenario_copy(data: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(data))


def fedavg_initial(tiny: dict[str, Any]) -> dict[str, torch.Tensor]:
    data = identical(tiny)
    return build_world(scenario_from_data(data)).learner.global_state


def test_a_client_trains_on_the_version_it_downloaded(tiny, monkeypatch):
    """Every training batch starts from the state of the version its clients downloaded,
    and only versions still in use are kept (at most concurrency + 1)."""
    from netfl.learning.learner import TorchLearner

    seen: list[tuple[int, list[int]]] = []
    kept: list[int] = []
    train_from = TorchLearner._train_from

    def spy(self, state, version, clients, keys):
        assert state is self.versions.states[version]
        seen.append((version, clients.tolist()))
        kept.append(len(self.versions.states))
        return train_from(self, state, version, clients, keys)

    monkeypatch.setattr(TorchLearner, "_train_from", spy)
    tiny["devices"]["groups"][0]["count"] = 10
    tiny["fl"] = {"protocol": "fedbuff", "rounds": 8, "concurrency": 6, "buffer_size": 3}
    world = run_world(tiny)
    timeline = world.timeline.to_arrow().to_pandas()
    downloads = download_versions(timeline)
    for version, clients in seen:
        for c in clients:
            assert version in downloads[downloads["client"] == c]["round"].tolist()
    assert max(kept) <= 6 + 1
    # Several clients started on one version train in one batch.
    assert max(len(c) for _, c in seen) > 1
    # After the run only the versions of clients still in flight are held.
    assert set(world.learner.versions.states) <= {j.version for j in world.server.jobs.values()}


# -- selection under asynchrony and bad input ---------------------------------------------


@pytest.mark.parametrize("strategy", ["random", "fedcs", "oort"])
def test_async_strategies_run(strategy, tiny, tmp_path):
    data = timing(tiny, "fedbuff", concurrency=4, buffer_size=2, rounds=8)
    if strategy == "oort":
        data = tiny_with_learning(data)
    data["selection"] = {"name": strategy}
    result = simulate(scenario_from_data(data), tmp_path / "run")
    assert result.summary["status"] == "completed"
    assert result.summary["rounds"] == 8


def tiny_with_learning(data: dict[str, Any]) -> dict[str, Any]:
    data["learning"] = {"dataset": "digits", "model": "digits_mlp", "local_epochs": 1}
    data["fl"].pop("model_size_bits")
    return data


@pytest.mark.parametrize(
    ("fl", "key"),
    [
        ({"protocol": "fedbuff", "concurrency": 3, "buffer_size": 4}, "fl.buffer_size"),
        ({"protocol": "fedasync", "concurrency": 7}, "fl.concurrency"),
        ({"protocol": "fedasync", "staleness_exponent": -0.5}, "fl.staleness_exponent"),
        ({"protocol": "fedbuff", "over_selection": 0.5}, "fl.over_selection"),
        ({"protocol": "fedavg", "buffer_size": 2}, "fl.buffer_size"),
        ({"protocol": "fedbuff", "distribution": "multicast"}, "fl.distribution"),
        ({"protocol": "fedbuff", "mixing_alpha": 0.9}, "fl.mixing_alpha"),
        ({"protocol": "fedasync", "server_lr": 2.0}, "fl.server_lr"),
    ],
)
def test_bad_asynchronous_keys_are_refused_naming_the_key(fl, key, tiny):
    tiny["fl"].update(fl)
    with pytest.raises(ScenarioError) as error:
        scenario_from_data(tiny)
    assert key in str(error.value)


def test_a_strategy_without_async_support_is_refused(tiny, write_scenario):
    tiny["fl"].update({"protocol": "fedasync"})
    tiny["selection"] = {"name": "ucb_cs"}
    path = write_scenario(tiny)
    done = subprocess.run(
        [sys.executable, "-m", "netfl", "validate", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "selection.name" in lines[0] and "asynchronous" in lines[0]


# -- checkpoint and resume ----------------------------------------------------------------


def test_an_interrupted_async_run_resumes_to_the_same_rows(tiny, tmp_path, monkeypatch):
    from netfl.selection.random import RandomSelection

    tiny["devices"]["groups"][0]["count"] = 10
    tiny["devices"]["groups"][0]["availability"] = {
        "kind": "markov",
        "mean_on_s": 20,
        "mean_off_s": 5,
    }
    tiny["fl"] = {"protocol": "fedbuff", "rounds": 8, "concurrency": 5, "buffer_size": 2}
    simulate(scenario_from_data(tiny), tmp_path / "whole")
    tiny["fl"]["checkpoint_every"] = 2
    with monkeypatch.context() as patch:
        stop_at(patch, RandomSelection, 12)  # the 13th selection (one per freed slot)
        with pytest.raises(KeyboardInterrupt):
            simulate(scenario_from_data(tiny), tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert 0 < summary["checkpoint_round"] < 8
    assert resume(tmp_path / "run").summary["status"] == "completed"
    assert_same_tables(tmp_path / "whole", tmp_path / "run")


# -- outputs: staleness, uplink busy time, report and compare ------------------------------


def test_busy_fraction_is_the_union_of_the_upload_intervals():
    from netfl.trace.metrics import busy_fraction

    rows = [
        (0.0, "upload_start", 1),
        (1.0, "upload_start", 2),
        (2.0, "upload_end", 1),
        (3.0, "upload_end", 2),
        (5.0, "upload_start", 3),
        (5.5, "drop", 3),  # cut short: busy until it left
        (9.0, "upload_start", 4),  # still on the air at the end
    ]
    timeline = pd.DataFrame(rows, columns=["t_s", "kind", "client"])
    assert busy_fraction(timeline, "upload_start", "upload_end", 10.0) == pytest.approx(0.45)


def test_report_and_compare_show_sync_and_async_runs(tiny, tmp_path):
    runs = []
    for protocol, fl in [("fedavg", {}), ("fedbuff", {"concurrency": 6, "buffer_size": 3})]:
        data = timing(scenario_copy(tiny), protocol, **fl)
        data["name"] = protocol
        runs.append(simulate(scenario_from_data(data), tmp_path / protocol).run_dir)
    from netfl import load_run

    sync, buffered = (load_run(r) for r in runs)
    assert (sync.staleness() == 0).all() and len(sync.staleness()) == 20 * 5
    assert buffered.staleness().max() > 0 and len(buffered.staleness()) == 20 * 3
    assert 0 < buffered.uplink_busy_fraction() <= 1
    for run in runs:
        done = subprocess.run(
            [sys.executable, "-m", "netfl", "report", str(run)], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        # Synchronous runs are at staleness 0 by construction: no histogram (issue 34).
        drawn = (run / "report" / "staleness_histogram.png").exists()
        assert drawn == (run.name == "fedbuff")
    out = tmp_path / "cmp"
    done = subprocess.run(
        [sys.executable, "-m", "netfl", "compare", *map(str, runs), "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    table = (out / "comparison.csv").read_text()
    assert "staleness_mean_mean" in table and "uplink_busy_fraction_mean" in table
    assert (out / "staleness_histogram.png").exists()


def test_busy_fraction_counts_only_the_run():
    from netfl.trace.metrics import busy_fraction

    rows = [(8.0, "upload_start", 1), (12.0, "upload_end", 1)]
    timeline = pd.DataFrame(rows, columns=["t_s", "kind", "client"])
    assert busy_fraction(timeline, "upload_start", "upload_end", 10.0) == pytest.approx(0.2)


@pytest.mark.parametrize(("protocol", "c", "k"), [("fedasync", 6, 1), ("fedbuff", 8, 4)])
def test_mean_staleness_is_littles_law(tiny, tmp_path, protocol, c, k):
    """With c clients always training, a client's residence W and the arrival rate lambda
    satisfy c = lambda W (Little's law), so the others' arrivals during one residence are
    c - 1 on average: a mean staleness of (c - 1) / K versions (K = 1 for FedAsync)."""
    fl = {"concurrency": c, "rounds": 3000 // k, "request_fraction": 1.0}
    if k > 1:
        fl["buffer_size"] = k
    data = timing(tiny, protocol, **fl)
    data["devices"]["groups"][0]["count"] = 40
    run = simulate(scenario_from_data(data), tmp_path / "run").run_dir
    rounds = pd.read_parquet(run / "rounds.parquet")
    steady = np.concatenate(rounds["staleness"].to_numpy()[len(rounds) // 10 :])
    assert steady.mean() == pytest.approx((c - 1) / k, rel=0.05)


@pytest.mark.parametrize("protocol", ["fedasync", "fedbuff"])
def test_the_memory_estimate_counts_an_async_runs_timeline(tiny, tmp_path, protocol):
    """netfl/resources.py promises estimates within a factor of two; its row count of an
    asynchronous run (per update, per version, requests per epoch) is held to 25%."""
    from netfl.resources import estimate_memory

    fl = {"concurrency": 6, "rounds": 60, "request_fraction": 1.0}
    if protocol == "fedbuff":
        fl["buffer_size"] = 3
    scenario = scenario_from_data(timing(tiny, protocol, **fl))
    run = simulate(scenario, tmp_path / "run").run_dir
    rows = len(pd.read_parquet(run / "timeline.parquet"))
    assert estimate_memory(scenario).timeline_rows == pytest.approx(rows, rel=0.25)


def test_an_async_run_that_can_start_nobody_fails_instead_of_hanging(tiny, tmp_path, monkeypatch):
    from netfl.fl import asynchronous

    monkeypatch.setattr(asynchronous, "MAX_IDLE_TRIES", 20)
    data = timing(tiny, "fedasync", concurrency=2)
    data["devices"]["groups"][0]["availability"] = 0.0  # never available
    with pytest.raises(RuntimeError, match="no client could be started"):
        simulate(scenario_from_data(data), tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "failed"


def test_feedback_is_built_only_for_strategies_that_observe():
    from netfl.checkpoint.pilot import PilotStrategy
    from netfl.checkpoint.store import DecisionLog
    from netfl.selection.oort import Oort
    from netfl.selection.random import RandomSelection

    assert not RandomSelection().observes and Oort().observes
    assert PilotStrategy(Oort(), DecisionLog(), replaying=False).observes
    assert not PilotStrategy(RandomSelection(), DecisionLog(), replaying=False).observes
