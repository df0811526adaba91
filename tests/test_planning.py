"""Load planning (netfl/planning.py): background load over capacity and the FL room, in
netfl validate and against what a run measures."""

from __future__ import annotations

import copy
import json

import pytest

from netfl.cli import main
from netfl.planning import cell_kind, describe, load_plan
from netfl.scenario import load_scenario, scenario_from_data
from netfl.simulation import simulate
from netfl.trace.report import load_table
from netfl.trace.run import Run

#: One LTE cell without FL traffic to speak of: 4 devices, a 1 kbit model.
QUIET_CELL = {
    "name": "load",
    "seed": 5,
    "cell": {"sites": 1, "sectors": 1, "indoor_fraction": 0.0, "radius_m": 300},
    "devices": {"groups": [{"name": "a", "count": 4, "n_samples": 50, "compute_sps": 100}]},
    "fl": {
        "rounds": 1000,
        "clients_per_round": 2,
        "model_size_bits": 1000.0,
        "time_budget_s": 2000.0,
    },
    "learning": "none",
}


def _with_sources(*sources: dict) -> dict:
    data = copy.deepcopy(QUIET_CELL)
    data["traffic"] = {"sources": list(sources), "record_flows": False}
    return data


def test_ftp_load_times_capacity_is_the_offered_bit_rate():
    """load = λ E[S] E[1/r] / n_RB and C = n_RB / E[1/r] (both from the same user draws),
    so load x C is λ E[S] exactly: the bits a second the source offers."""
    source = {
        "kind": "ftp1",
        "direction": "uplink",
        "arrival_rate_hz": 0.3,
        "file_size_bits": 2.0e6,
    }
    up, down = load_plan(scenario_from_data(_with_sources(source)))
    assert (up.direction, down.direction) == ("uplink", "downlink")
    assert up.background_fraction * up.capacity_bps == pytest.approx(0.3 * 2.0e6, rel=1e-9)
    assert up.keys == ("traffic.sources.0.arrival_rate_hz",)
    assert down.background_fraction == 0.0 and down.room_fraction == 1.0
    assert up.room_bps == pytest.approx((1 - up.background_fraction) * up.capacity_bps)
    assert up.transfers_per_s == pytest.approx(up.room_bps / 1000.0)


def test_a_constant_load_is_its_fraction_and_an_overload_leaves_no_room():
    constant = {"kind": "constant", "direction": "downlink", "load_fraction": 0.4}
    _, down = load_plan(scenario_from_data(_with_sources(constant)))
    assert down.background_fraction == pytest.approx(0.4)
    assert down.room_fraction == pytest.approx(0.6)
    # Without FTP users no user drop is made: the room is in RBs only.
    assert down.capacity_bps is None and down.transfers_per_s is None
    assert down.line().endswith("background 40% (traffic.sources.0) of its 50 RBs; FL room 60%")
    heavy = {"kind": "ftp1", "direction": "downlink", "arrival_rate_hz": 500.0}
    with pytest.warns(UserWarning, match="background load in the downlink"):
        _, down = load_plan(scenario_from_data(_with_sources(heavy)))
    assert down.background_fraction > 1 and down.room_bps == 0.0
    assert "FL room: none" in down.line()


def test_the_fixed_radio_has_no_shared_capacity():
    data = copy.deepcopy(QUIET_CELL)
    data["radio"] = {"model": "fixed"}
    scenario = scenario_from_data(data)
    assert load_plan(scenario) == []
    assert "radio.model fixed" in describe(scenario)[0]


def test_cell_kinds_name_the_air_interface_and_the_layout():
    assert cell_kind(scenario_from_data(QUIET_CELL)) == "LTE cell"
    nr = {**copy.deepcopy(QUIET_CELL), "radio": {"model": "nr"}}
    assert cell_kind(scenario_from_data(nr)) == "NR TDD cell"
    assert cell_kind(load_scenario("nr_tdd")) == "each of the 57 NR TDD cells"
    assert cell_kind(load_scenario("multicell")) == "each of the 57 LTE cells"


def test_validate_prints_the_uplink_and_downlink_load(capsys):
    assert main(["validate", "compare_selection"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("load (")
    up, down = out[2], out[3]
    cells = "each of the 57 LTE cells"  # the default layout
    assert up.startswith(f"  uplink, {cells}: background ") and "(traffic.sources.1)" in up
    assert down.startswith(f"  downlink, {cells}: background ") and "(traffic.sources.0)" in down
    assert "uploads/s of the 1 MB model" in up and "downloads/s" in down


def test_a_run_takes_the_planned_share_of_the_downlink(tmp_path):
    """FTP Model 1 at 40% planned load: the time-average RB utilisation of the background
    over 2,000 s (about 8,000 files) is that share, within 10% (measured 0.378, 0.391,
    0.401 and 0.423 with seeds 5 to 8, mean 0.398: the run draws its own users, the plan
    averages 4,000)."""
    plan_source = {"kind": "ftp1", "direction": "downlink", "arrival_rate_hz": 1.0}
    scenario = scenario_from_data(_with_sources(plan_source))
    _, down = load_plan(scenario)
    rate = 0.4 / down.background_fraction  # files a second that offer 40%
    source = {**plan_source, "arrival_rate_hz": rate}
    scenario = scenario_from_data(_with_sources(source))
    planned = load_plan(scenario)[1].background_fraction
    assert planned == pytest.approx(0.4)
    run = simulate(scenario, tmp_path / "run").run_dir
    summary = json.loads((run / "summary.json").read_text())
    measured = summary["rb_utilisation_dl"] - summary["rb_utilisation_dl_fl"]
    assert measured == pytest.approx(planned, rel=0.1)
    # One cell, which carries FL: the background's share there is the same figure.
    assert summary["rb_utilisation_dl_background"] == pytest.approx(measured, rel=1e-9)
    # netfl report's load table is the plan of the run's resolved scenario, beside what
    # the run realised.
    table = load_table(Run(run)).set_index("direction")
    assert table.loc["downlink", "background_fraction"] == pytest.approx(planned)
    assert table.loc["downlink", "realised_background_fraction"] == pytest.approx(measured)
    assert table.loc["uplink", "realised_background_fraction"] == pytest.approx(0.0, abs=1e-12)
    assert table.loc["uplink", "fl_room_fraction"] == 1.0
