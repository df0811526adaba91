"""Moving devices in the one radio engine: boundary crossings, transfers through
handovers, radio link failure, what strategies see and what a run writes."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
import simpy

from netfl.cli import main
from netfl.features import Feature
from netfl.radio.build import build_radio
from netfl.recorder.timeline import OPTIONAL_COLUMNS, Timeline
from netfl.rng import Streams
from netfl.scenario import scenario_from_data
from tests.protocol_helpers import group, run, scenario

#: Handover on the geometric boundary: no offset, hysteresis, time-to-trigger or filter.
INSTANT = {
    "a3_offset_db": 0.0,
    "hysteresis_db": 0.0,
    "time_to_trigger_s": 0.0,
    "filter_coefficient": 0,
    "interruption_s": 0.0,
}


def _network(data: dict[str, Any]) -> tuple[simpy.Environment, Any, Timeline, Any]:
    sc = scenario_from_data(data)
    env = simpy.Environment()
    timeline = Timeline(optional=OPTIONAL_COLUMNS)
    build = build_radio(sc, env, Streams(sc.seed), timeline, sc.devices.n_clients)
    return env, build.network, timeline, sc


def _data(mobility: dict[str, Any], count: int, **radio: Any) -> dict[str, Any]:
    data = scenario(
        [group("walkers", count, compute_sps=100.0, n_samples=50, mobility=mobility)],
        cell={"sectors": 1, "indoor_fraction": 0.0, "device_sites": "all"},
        fl={"rounds": 3, "clients_per_round": 2, "model_size_bits": 1.0e6},
        selection={"name": "random"},
    )
    data["radio"] = {"model": "lte", "channel_model": "umi_nlos", "shadowing": False, **radio}
    return data


def test_random_direction_devices_cross_cells_at_the_fluid_flow_rate():
    """Thomas et al. 1988: devices uniform in the plane with uniform directions at speed v
    cross the boundary of a region of perimeter L and area A at v L / (pi A) per device;
    for a hexagon of circumradius R that is 4 v / (sqrt(3) pi R). On the wrap-around
    19-site omni layout without shadowing, with NLOS everywhere and A3 on the geometric
    boundary, the engine's handovers come at that rate (within 5%)."""
    v = 20.0
    data = _data(
        {"model": "random_direction", "speed_mps": v, "travel_s": 1e6, "pause_s": 0.0},
        120,
        handover=INSTANT,
    )
    env, _, timeline, sc = _network(data)
    duration = 200.0
    env.run(until=duration)
    handovers = (timeline.to_arrow().to_pandas()["kind"] == "handover").sum()
    expected = 120 * duration * 4 * v / (math.sqrt(3) * math.pi * sc.cell.radius_m)
    assert handovers == pytest.approx(expected, rel=0.05)


def test_a_transfer_continues_in_the_target_cell_after_the_interruption():
    """A vehicle crossing the layout uploads 400 Mbit: the upload hands over, pauses for
    the interruption each time and still delivers every bit (end - start covers them)."""
    road = {"model": "constant_velocity", "start_m": [0.0, 0.0], "heading_deg": 0.0}
    data = _data({**road, "speed_mps": 30.0, "placement": "at_start"}, 1, handover=INSTANT)
    data["radio"]["handover"] = {**INSTANT, "interruption_s": 0.05}
    data["fl"]["clients_per_round"] = 1
    env, network, timeline, _ = _network(data)
    proc = network.upload(env, 0, 4.0e8)
    env.run(until=proc)
    transfer = proc.value
    rows = timeline.to_arrow().to_pandas()
    during = rows[(rows["kind"] == "handover") & (rows["t_s"] <= transfer.end_s)]
    assert len(during) >= 1
    assert transfer.bits == 4.0e8 and transfer.end_s > transfer.start_s
    # Each handover pauses it: the transfer takes at least the interruptions.
    assert transfer.duration_s >= 0.05 * len(during)
    assert network.devices.serving[0] == during["cell"].iloc[-1]


def test_a_radio_link_failure_loses_the_update_and_the_device_comes_back():
    """A base station at -40 dBm puts every device's downlink SINR below Qout (-8 dB): it is
    out of sync at once, T310 (0.1 s) later its link fails, the transfer in flight is lost
    (the client leaves with radio_link_lost), and reestablishment_s later it is attached
    again."""
    data = _data(
        {"model": "random_direction", "speed_mps": 1.0},
        4,
        handover={"t310_s": 0.1, "reestablishment_s": 0.5},
        downlink={"tx_power_dbm": -40.0, "noise_figure_db": 9.0},
        rate_mapping={"kind": "shannon"},
    )
    data["fl"]["clients_per_round"] = 4
    world = run(data)
    table = world.timeline.to_arrow().to_pandas()
    kinds = set(table["kind"])
    assert {"radio_link_failure", "reattach"} <= kinds
    assert "radio_link_lost" in kinds
    failures = table[table["kind"] == "radio_link_failure"]
    reattach = table[table["kind"] == "reattach"]
    first = failures.groupby("client")["t_s"].min()
    back = reattach.groupby("client")["t_s"].min()
    assert ((back - first).dropna() >= 0.5 - 1e-9).all()


def test_strategies_see_speed_serving_cell_and_handovers():
    data = _data({"model": "random_direction", "speed_mps": 5.0}, 10)
    world = run(data)
    features = world.server.network.features(np.arange(10))
    assert np.all(features[Feature.SPEED_MPS] == pytest.approx(5.0))
    serving = np.asarray(world.server.network.devices.serving)
    assert np.array_equal(features[Feature.SERVING_CELL], serving.astype(float))
    assert np.all(features[Feature.HANDOVERS] >= 0)


def test_a_moving_run_writes_handovers_positions_and_counters(tmp_path):
    import yaml

    data = _data({"model": "random_direction", "speed_mps": 15.0}, 12, shadowing=True)
    data["fl"]["rounds"] = 12  # about 7 s: handovers come every ~10 s a device
    data["output"] = {"trajectory_every_s": 1.0}
    path = tmp_path / "mob.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "run"
    assert main(["simulate", str(path), "--out", str(out), "--quiet"]) == 0
    clients = pd.read_parquet(out / "clients.parquet")
    timeline = pd.read_parquet(out / "timeline.parquet")
    handovers = timeline[timeline["kind"] == "handover"]
    assert clients["n_handovers"].sum() == len(handovers) > 0
    assert (clients["n_ping_pongs"] <= clients["n_handovers"]).all()
    positions = timeline[timeline["kind"] == "position"]
    assert positions["client"].nunique() == 12 and positions[["x_m", "y_m"]].notna().all().all()
    assert (handovers["cell"] != handovers["source_cell"]).all()
    # A device walks 15 m/s at each radio update, but for steps refused at the layout's
    # edge (no wrap-around here).
    summary = json.loads((out / "summary.json").read_text())
    walked = 15.0 * 0.1 * np.floor(summary["sim_time_s"] / 0.1 + 1e-9)
    assert (clients["travelled_m"] <= walked + 1e-9).all()
    assert clients["travelled_m"].median() == pytest.approx(walked)
    # The report puts the fluid-flow rate of that distance beside the measured rate:
    # 4 / (sqrt(3) pi R) crossings per metre on these omni cells.
    assert main(["report", str(out)]) == 0
    page = (out / "report" / "report.html").read_text()
    hours = summary["sim_time_s"] / 3600
    reference = clients["travelled_m"].sum() * 4 / (math.sqrt(3) * math.pi * 115.47) / 12 / hours
    assert f"fluid-flow reference {reference:.1f}" in page


@pytest.mark.parametrize(
    "radio, key, message",
    [
        (
            {"update_interval_s": 0.25},
            "radio.handover.measurement_period_s",
            "shorter than radio.update_interval_s",
        ),
        (
            {"handover": {"time_to_trigger_s": 0.1}},
            "radio.handover.measurement_period_s",
            "longer than time_to_trigger_s",
        ),
        ({"handover": {"measured_cells": 20}}, "radio.handover.measured_cells", "19 cells"),
        ({"handover": {"measured_cells": 0}}, "radio.handover.measured_cells", "greater than"),
    ],
)
def test_handover_measurements_the_device_cannot_make_are_refused(
    tmp_path, capsys, radio, key, message
):
    """A measurement period shorter than the radio update or longer than the time-to-trigger
    allows, and a measured-cell count of 0 or above the layout's 19 omni cells: one line
    naming the key, exit 2 (8 on a smaller layout measures every cell: no refusal)."""
    import yaml

    data = _data({"model": "random_direction", "speed_mps": 5.0}, 4)
    for name, value in radio.items():
        data["radio"][name] = value
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "run"
    assert main(["simulate", str(path), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and key in err[0] and message in err[0], err
    assert not out.exists()
    fine = _data({"model": "random_direction", "speed_mps": 5.0}, 4, handover={"measured_cells": 8})
    fine["cell"]["sites"] = 7  # 7 cells: all measured
    path.write_text(yaml.safe_dump(fine))
    assert main(["validate", str(path)]) == 0


def test_every_moving_device_measures_its_serving_cell_and_the_strongest_from_the_start():
    """After the first radio update each moving device measures 8 distinct cells, its
    serving cell and the 7 strongest others by its gains, the slow walkers (which have not
    yet moved a channel step) as well as the fast."""
    data = _data({"model": "random_direction", "speed_mps": 0.5}, 20)
    data["devices"]["groups"].append(
        group(
            "fast",
            20,
            compute_sps=100.0,
            n_samples=50,
            mobility={"model": "random_direction", "speed_mps": 20.0},
        )
    )
    env, network, _, _ = _network(data)
    env.run(until=0.15)
    handover = network.motion.handover
    gains = network.devices.gain_db
    for i, cells in enumerate(handover.measured_cells.tolist()):
        serving = int(network.devices.serving[i])
        others = np.delete(np.arange(gains.shape[1]), serving)
        strongest = others[np.argsort(-gains[i, others])[:7]]
        assert len(set(cells)) == 8 and set(cells) == {serving, *strongest.tolist()}


def test_the_links_a_search_re_evaluates_are_the_drops_formula_at_the_new_place():
    """At a cell search every link of a device that moved is re-evaluated one link at a time
    (netfl.radio.motion); the gains are what the drop's devices x sites computation gives at
    the device's new place with its LOS states and shadowing now (to 1e-9 dB)."""
    from netfl.radio.propagation import coupling_gains, site_geometry

    road = {"model": "constant_velocity", "start_m": [0.0, 0.0], "heading_deg": 20.0}
    data = _data({**road, "speed_mps": 15.0, "at_edge": "wrap"}, 30, shadowing=True)
    data["cell"] = {"sectors": 3, "indoor_fraction": 0.0, "device_sites": "all"}
    data["radio"]["channel_model"] = "tr38901_umi"
    env, network, _, _ = _network(data)
    env.run(until=1.75)  # the search at 1.7 s re-evaluated every vehicle (12 m since 0.9 s)
    motion = network.motion
    system = motion.system
    rows = motion.rows
    geometry = site_geometry(system.layout, motion.xy_m[rows], motion._heights, system.environment)
    shadow = motion.shadowing.shadowing_db.astype(float)
    expected, _ = coupling_gains(
        system.layout,
        geometry,
        motion._heights,
        system.environment,
        motion.los,
        shadow,
        motion.o2i_db,
    )
    np.testing.assert_allclose(network.devices.gain_db[rows], expected, atol=1e-9)
