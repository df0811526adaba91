"""The multi-cell radio in FL runs: per-cell RBs, association, interference, FPC, outputs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import simpy

from netfl.cli import main
from netfl.radio.build import build_radio
from netfl.radio.multicell import DL, UL
from netfl.rng import Streams
from netfl.scenario import scenario_from_data
from netfl.trace.timeline import Timeline
from tests.protocol_helpers import group, run, scenario


def _multicell(**cell):
    data = scenario(
        [group("phones", 60, compute_sps=100.0, n_samples=50)],
        cell={"inter_site_distance_m": 200, "sites": 7, "sectors": 3, **cell},
        fl={"rounds": 3, "clients_per_round": 10, "model_size_bits": 2.0e6},
        selection={"name": "random"},
    )
    data["radio"] = {
        "model": "lte",
        "channel_model": "tr38901_umi",
        "carrier_frequency_hz": 3.5e9,
        "uplink": {"p0_dbm": -80.0, "alpha": 0.8},
    }
    return data


def _build(data):
    sc = scenario_from_data(data)
    env = simpy.Environment()
    return env, build_radio(sc, env, Streams(sc.seed), Timeline(), sc.devices.n_clients)


@pytest.mark.parametrize(
    ("cell", "key"),
    [
        ({"sectors": 2}, "cell.sectors"),
        ({"sites": 7, "wrap_around": True}, "cell.wrap_around"),
        ({"indoor_fraction": 1.5}, "cell.indoor_fraction"),
        ({"sites": 5}, "cell.sites"),
    ],
)
def test_bad_layouts_are_refused_naming_the_key(tmp_path, capsys, cell, key):
    import yaml

    data = _multicell(**cell)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and key in err[0], err


def test_devices_are_served_by_their_strongest_cell_in_every_cell():
    _, build = _build(_multicell())
    network = build.network
    gains = 10 * np.log10(network.devices.gain_mw)
    assert np.array_equal(build.columns["cell"], np.argmax(gains, axis=1))
    assert build.columns["coupling_loss_db"] == pytest.approx(-gains.max(axis=1))
    assert len(set(build.columns["cell"].tolist())) > 10  # spread over the 21 cells


def test_uplink_power_control_follows_ts_36_213():
    _, build = _build(_multicell())
    radio, cl = build.network.radio, build.columns["coupling_loss_db"]
    # P = min(23 - 10 log10(RBs), -80 + 0.8 CL) dBm per RB, all 50 RBs of 10 MHz.
    expected = np.minimum(23.0 - 10 * math.log10(50), -80.0 + 0.8 * cl)
    assert 10 * np.log10(build.network.devices.ul_power_mw) == pytest.approx(expected)
    assert radio.ul_power_rb_mw(np.array([200.0]))[0] == pytest.approx(
        10 ** ((23 - 10 * math.log10(50)) / 10)
    )


def test_an_upload_alone_in_an_idle_layout_takes_bits_over_its_noise_limited_rate():
    env, build = _build(_multicell())
    network = build.network
    client = 0
    cell = int(network.devices.serving[client])
    radio = network.radio
    gain = network.devices.gain_mw[client, cell]
    snr = network.devices.ul_power_mw[client] * gain / radio.noise_rb_mw[UL]
    rate = float(radio.rate_per_rb(np.array(snr), UL)) * radio.n_rb[UL]
    proc = network.upload(env, client, 4.0e6)
    env.run(until=proc)
    assert proc.value.duration_s == pytest.approx(4.0e6 / rate, rel=1e-9)


def test_uploads_in_different_cells_do_not_share_resource_blocks():
    env, build = _build(_multicell())
    network = build.network
    serving = network.devices.serving
    a = 0
    b = int(np.flatnonzero(serving != serving[a])[0])
    same = int(np.flatnonzero(serving == serving[a])[1])
    procs = [network.upload(env, c, 4.0e6) for c in (a, b, same)]
    env.run(until=env.timeout(network.radio.first_grant_s + 1e-9))  # after the first grants
    loads = {cell: len(s.active) for cell, s in enumerate(network.schedulers[UL]) if s.active}
    assert loads == {int(serving[a]): 2, int(serving[b]): 1}
    env.run(until=env.all_of(procs))


def test_interference_follows_what_the_other_cells_have_in_flight():
    _, build = _build(_multicell())
    network = build.network
    state, devices = network.state, network.devices
    client = 0
    cell = int(devices.serving[client])
    other = (cell + 4) % network.radio.layout.n_cells
    gain = devices.gain_mw[client]
    idle = state.dl_sinr(gain, cell)
    state.started(other, DL, None)
    loaded = state.dl_sinr(gain, cell)
    p, noise = network.radio.dl_power_rb_mw, network.radio.noise_rb_mw[DL]
    assert idle == pytest.approx(p * gain[cell] / noise)
    assert loaded == pytest.approx(p * gain[cell] / (p * gain[other] + noise))
    state.ended(other, DL, None)
    assert state.dl_sinr(gain, cell) == pytest.approx(idle)
    # Uplink: two flows in another cell put half of each device's power on each RB.
    contribution = np.array(
        [devices.ul_power_mw[1] * devices.gain_mw[1], devices.ul_power_mw[2] * devices.gain_mw[2]]
    )
    for row in contribution:
        state.started(other, UL, row)
    power = float(devices.ul_power_mw[client])
    expected = (
        power * gain[cell] / (contribution[:, cell].sum() / 2 + network.radio.noise_rb_mw[UL])
    )
    assert state.ul_sinr(gain, power, cell) == pytest.approx(expected)


def test_a_multicell_run_writes_the_cell_columns_and_is_deterministic(tmp_path):
    data = _multicell(wrap_around=False)
    data["traffic"] = {
        "sources": [
            {"kind": "ftp1", "direction": "downlink", "arrival_rate_hz": 0.5, "file_size_bits": 2e6}
        ]
    }
    first, second = run(data), run(data)
    assert [r.t_end_s for r in first.server.records] == [r.t_end_s for r in second.server.records]
    columns = first.client_columns
    for name in ("cell", "coupling_loss_db", "sinr_dl_db", "sinr_ul_db"):
        assert np.all(np.isfinite(np.asarray(columns[name], dtype=float))), name
    # Full-load downlink SINR of a 7 x 3 layout at ISD 200 m: the TR 38.901 UMi calibration's
    # geometry runs from -1.7 dB (5%) to 24.9 dB (95%) (R1-165974, docs/radio.md); with noise,
    # 7 sites instead of 19 and 60 devices the bounds are loose, a plausibility band only.
    sinr = pd.Series(columns["sinr_dl_db"])
    assert -8 < sinr.quantile(0.05) < sinr.median() < sinr.quantile(0.95) < 35


def test_simulate_and_report_a_small_layout_from_the_cli(tmp_path):
    import yaml

    data = _multicell()
    data["fl"]["rounds"] = 2
    path = tmp_path / "mc.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "run"
    assert main(["simulate", str(path), "--out", str(out), "--quiet"]) == 0
    clients = pd.read_parquet(out / "clients.parquet")
    assert {"cell", "coupling_loss_db", "sinr_dl_db", "sinr_ul_db"} <= set(clients.columns)
    assert clients["cell"].between(0, 20).all()
    assert main(["report", str(out)]) == 0
    for name in ("layout.png", "sinr_cdf.png"):
        assert (out / "report" / name).read_bytes()[:4] == b"\x89PNG"


def test_power_control_without_a_layout_is_refused(tmp_path, capsys):
    import yaml

    data = _multicell(sites=1, sectors=1)
    path = tmp_path / "single.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "radio.uplink.p0_dbm" in err[0], err


def test_nr_on_a_layout_is_refused_naming_the_key(tmp_path, capsys):
    import yaml

    data = _multicell()
    data["radio"] = {"model": "nr", "channel_model": "tr38901_umi", "carrier_frequency_hz": 3.5e9}
    path = tmp_path / "nr.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "radio.model" in err[0], err
