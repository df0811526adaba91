"""Hierarchical FL (HierFAVG, Liu et al. ICC 2020): reduction to FedAvg, kappa_1 local
updates, the edge -> cloud backhaul's cost, edges per cell, bad input, resume."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch

from netfl.errors import ScenarioError
from netfl.scenario import scenario_from_data
from netfl.simulation import resume, simulate
from netfl.world import build_world
from tests.conftest import isolated
from tests.test_resume import assert_same_tables, stop_at


def copy(data: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(data))


def run_world(data: dict[str, Any]):
    world = build_world(scenario_from_data(data))
    world.env.run(until=world.env.process(world.server.run()))
    return world


def fixed_compute(tiny: dict[str, Any]) -> dict[str, Any]:
    tiny = copy(tiny)
    tiny["devices"]["groups"][0]["compute_sps"] = 40
    tiny["fl"]["rounds"] = 3
    return tiny


def test_one_edge_one_edge_round_is_fedavg(tiny):
    """kappa2 = 1, one cell, no backhaul cost: the cloud's model is the one edge's, which is
    FedAvg's round for round (same requests, selections and updates), to the bit."""
    fedavg = run_world(fixed_compute(tiny))
    data = fixed_compute(tiny)
    data["fl"].update(protocol="hierarchical", kappa1=1, kappa2=1)
    data["cell"] = {"backhaul": {"edge_cloud_latency_s": 0, "edge_cloud_capacity_bps": None}}
    hier = run_world(data)
    assert [r.completed for r in hier.server.records] == [
        r.completed for r in fedavg.server.records
    ]
    assert [r.t_end_s for r in hier.server.records] == [r.t_end_s for r in fedavg.server.records]
    a, b = fedavg.learner.global_state, hier.learner.global_state
    for name in a:
        assert torch.equal(a[name], b[name]), name


def compute_times(run) -> np.ndarray:
    timeline = pd.read_parquet(run / "timeline.parquet")
    return timeline[timeline["kind"] == "compute_end"]["duration_s"].to_numpy()


def test_kappa1_local_updates_take_kappa1_times_the_work(tiny, tmp_path):
    one, two = fixed_compute(tiny), fixed_compute(tiny)
    one["fl"].update(protocol="hierarchical", kappa1=1, kappa2=2)
    two["fl"].update(protocol="hierarchical", kappa1=3, kappa2=2)
    a = simulate(scenario_from_data(one), tmp_path / "a").run_dir
    b = simulate(scenario_from_data(two), tmp_path / "b").run_dir
    # Same devices, same selections (the work does not feed the draws): 3x the compute.
    np.testing.assert_allclose(compute_times(b), 3 * compute_times(a))
    rounds = pd.read_parquet(b / "rounds.parquet")
    assert (rounds["n_selected"] == 2 * 3).all()  # kappa2 edge rounds of m = 3 clients


@pytest.mark.parametrize("sectors", [1, 3])
def test_the_cloud_sync_shares_the_edge_cloud_link(tiny, tmp_path, sectors):
    """n edges send models of M bits up a link of capacity C and latency L, all at once
    (equal sharing), then the cloud's model down: 2 (n M / C + L)."""
    data = copy(tiny)
    data["learning"] = "none"
    isolated(data)
    data["cell"]["sectors"] = sectors
    if sectors > 1:
        data["cell"].pop("radius_m")
        data["cell"]["inter_site_distance_m"] = 200
    data["cell"]["backhaul"] = {"edge_cloud_latency_s": 0.05, "edge_cloud_capacity_bps": 1e8}
    data["devices"]["groups"][0]["count"] = 30
    data["fl"] = {
        "protocol": "hierarchical",
        "rounds": 2,
        "clients_per_round": 2,
        "model_size_bits": 4e6,
    }
    run = simulate(scenario_from_data(data), tmp_path / "run").run_dir
    clients = pd.read_parquet(run / "clients.parquet")
    edges = clients["cell"].nunique()
    assert edges == sectors
    timeline = pd.read_parquet(run / "timeline.parquet")
    sync = timeline[timeline["kind"] == "cloud_sync"]
    assert len(sync) == 2
    np.testing.assert_allclose(sync["duration_s"], 2 * (edges * 4e6 / 1e8 + 0.05))
    aggregated = timeline[timeline["kind"] == "edge_aggregate"]
    assert set(aggregated["client"]) == set(clients["cell"])  # every edge aggregated


@pytest.mark.parametrize(
    ("fl", "cell", "key"),
    [
        ({"protocol": "hierarchical", "kappa1": 0}, {}, "kappa1"),
        ({"protocol": "hierarchical", "kappa2": 0}, {}, "kappa2"),
        ({"protocol": "fedavg", "kappa2": 3}, {}, "fl.kappa2"),
        ({"protocol": "hierarchical"}, {"backhaul": {"aggregator": "cloud"}}, "aggregator"),
    ],
)
def test_bad_hierarchical_input_is_refused_naming_the_key(tiny, fl, cell, key):
    tiny["fl"].update(fl)
    tiny["cell"] = cell
    with pytest.raises(ScenarioError) as error:
        scenario_from_data(tiny)
    assert key in str(error.value)


def test_an_interrupted_hierarchical_run_resumes_to_the_same_rows(tiny, tmp_path, monkeypatch):
    from netfl.selection.random import RandomSelection

    tiny["fl"].update(protocol="hierarchical", rounds=4, kappa2=2)
    simulate(scenario_from_data(tiny), tmp_path / "whole")
    tiny["fl"]["checkpoint_every"] = 1
    with monkeypatch.context() as patch:
        stop_at(patch, RandomSelection, 5)  # the third cloud round's first edge round
        with pytest.raises(KeyboardInterrupt):
            simulate(scenario_from_data(tiny), tmp_path / "run")
    assert resume(tmp_path / "run").summary["resumed_from_round"] == 2
    assert_same_tables(tmp_path / "whole", tmp_path / "run")
