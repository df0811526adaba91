"""Cross-component wiring: strategy scores on disk, data contexts, radio context features."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from netfl.cli import main
from netfl.fl.contexts import N_HASHES
from netfl.selection.context import BITS_PER_CONTEXT_VALUE


def _run(write_scenario, data, tmp_path, name="run"):
    out = tmp_path / name
    assert main(["simulate", str(write_scenario(data)), "--out", str(out), "--quiet"]) == 0
    return out


def test_strategy_scores_are_written(write_scenario, tiny, tmp_path):
    tiny["selection"] = {"name": "mab_cs_elementwise"}
    tiny["fl"]["rounds"] = 4
    out = _run(write_scenario, tiny, tmp_path)
    scores = pd.read_parquet(out / "strategy.parquet")
    assert list(scores.columns) == ["round", "t_s", "client", "score", "value"]
    rounds = pd.read_parquet(out / "rounds.parquet")
    # Scores are recorded at each selection, for clients tried before (round >= 1).
    assert set(scores["round"]) <= set(rounds["round"])
    assert set(scores["score"].astype(str)) >= {"tau_update", "tau_upload", "ucb"}
    starts = rounds.set_index("round")["t_start_s"]
    assert (scores["t_s"].to_numpy() >= starts.loc[scores["round"]].to_numpy()).all()


def test_random_writes_an_empty_score_table(write_scenario, tiny, tmp_path):
    out = _run(write_scenario, tiny, tmp_path)
    assert len(pd.read_parquet(out / "strategy.parquet")) == 0


def test_data_contexts_travel_once_with_the_first_response(write_scenario, tiny, tmp_path):
    tiny["selection"] = {"name": "nccb", "params": {"clusters": 2, "threshold": 1}}
    tiny["fl"]["rounds"] = 4
    out = _run(write_scenario, tiny, tmp_path)
    timeline = pd.read_parquet(out / "timeline.parquet")
    responses = timeline[timeline["kind"] == "response"]
    context_bits = N_HASHES * BITS_PER_CONTEXT_VALUE
    sent = responses[responses["bits"] > 0]
    # Each client pays for its context exactly once, in its first response.
    assert sent["client"].is_unique
    assert (sent["bits"] == context_bits).all()
    first = responses.groupby("client")["t_s"].min()
    assert (sent.set_index("client")["t_s"] == first.loc[sent["client"]]).all()
    assert set(sent["client"]) == set(responses["client"])


def test_lte_reports_the_allocated_bandwidth():
    from netfl.scenario import load_scenario
    from netfl.world import build_world

    scenario = load_scenario("mab_cs_paper", ["learning=none"])
    world = build_world(scenario)
    clients = np.array([0, 5, 9])
    features = world.network.features(clients)
    # 10 RBs of 180 kHz: the paper's 1.8 MHz per client (002 Sec. IV-A).
    assert features["bandwidth_hz"] == pytest.approx(np.full(3, 1.8e6))


def test_group_links_keep_the_lte_bandwidth_of_the_other_devices():
    from netfl.scenario import scenario_from_data
    from netfl.world import build_world
    from tests.protocol_helpers import group, scenario

    link = {"snr": 10.0, "bandwidth_hz": {"dist": "uniform", "low": 2e6, "high": 4e6}}
    data = scenario([group("cell", 3), group("linked", 2, link=link)])
    data["radio"] = {"model": "lte"}
    network = build_world(scenario_from_data(data)).network
    network.start_round(0)
    clients = np.arange(5)
    bandwidth = network.features(clients)["bandwidth_hz"]
    assert bandwidth[:3] == pytest.approx(network.base.features(clients)["bandwidth_hz"][:3])
    assert bandwidth[:3] == pytest.approx(np.full(3, bandwidth[0]))  # the cell's RB cap
    assert np.all((bandwidth[3:] >= 2e6) & (bandwidth[3:] <= 4e6))  # drawn this round


def test_rbcs_f_runs_on_the_lte_cell(write_scenario, tiny, tmp_path):
    tiny["radio"] = {"model": "lte"}
    tiny["selection"] = {"name": "rbcs_f", "params": {"m": 3, "beta": 0.2}}
    tiny["fl"]["rounds"] = 5
    out = _run(write_scenario, tiny, tmp_path)
    scores = pd.read_parquet(out / "strategy.parquet")
    backlog = scores[scores["score"] == "backlog"]
    assert backlog["client"].nunique() == 6
    assert backlog["value"].max() > 0


def test_over_selection_cancels_appear_as_cut_phases(write_scenario, tiny, tmp_path):
    import netfl

    tiny["fl"].update({"clients_per_round": 2, "over_selection": 1.0, "rounds": 4})
    out = _run(write_scenario, tiny, tmp_path)
    phases = netfl.load_run(out).phases()
    cancelled = phases[phases["outcome"] == "cancel"]
    assert len(cancelled) > 0
    # A cancelled client's work ends at the cut, before any upload arrives.
    assert (cancelled["end_s"] == cancelled["cut_s"]).all()
    kept = phases[phases["outcome"] == "completed"].groupby("round").size()
    assert (kept == 2).all()
