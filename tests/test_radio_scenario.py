"""Radio scenario keys: bad input names the key; the mab_cs_paper cell's calibration; a run
through the CLI fills the radio columns and summary figures."""

from __future__ import annotations

import json
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import simpy

from channel_models.itu_m2135 import UMI_NLOS
from netfl.cli import main
from netfl.errors import RadioWarning, ScenarioError
from netfl.radio.background_load import MIN_USERS, PLANNING_SEED, background_load
from netfl.radio.build import build_radio, radio_system
from netfl.radio.cells import DL, UL
from netfl.radio.system import drop_users
from netfl.recorder.timeline import Timeline
from netfl.rng import Streams
from netfl.scenario import load_scenario, scenario_from_data
from netfl.simulation import simulate
from tests.conftest import ISOLATED_CELL, ISOLATED_RADIO

PAPER = ["learning=none"]


def _base(**sections: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "cell": {**ISOLATED_CELL, "radius_m": 300.0},
        "radio": dict(ISOLATED_RADIO),
        "devices": {"groups": [{"count": 10, "n_samples": 50}]},
        "fl": {"rounds": 2, "clients_per_round": 2, "model_size_bits": 1e6},
        "learning": None,
    }
    data.update(sections)
    return data


def _key_of(overrides: list[str], data: dict[str, Any] | None = None) -> str | None:
    with pytest.raises(ScenarioError) as info:
        scenario_from_data(data or _base(), overrides=overrides)
    return info.value.problems[0].key


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("radio.carrier_frequency_hz=1.5 GHz", "radio.carrier_frequency_hz"),
        ("radio.carrier_frequency_hz=7e9", "radio.carrier_frequency_hz"),
        ("cell.radius_m=2500", "cell.radius_m"),
        ("cell.min_distance_m=5", "cell.min_distance_m"),
        ("radio.uplink.bandwidth_hz=0", "radio.uplink.bandwidth_hz"),
        ("radio.uplink.bandwidth_hz=-5e6", "radio.uplink.bandwidth_hz"),
        ("radio.downlink.bandwidth_hz=7 MHz", "radio.downlink.bandwidth_hz"),
        ("radio.uplink.rb_per_flow=51", "radio.uplink.rb_per_flow"),
        ("radio.uplink.n_rb=101", "radio.uplink.n_rb"),
        ("radio.uplink.tx_power_dbm=.nan", "radio.uplink.tx_power_dbm"),
        ("radio.downlink.tx_power_dbm=120", "radio.downlink.tx_power_dbm"),
        ("radio.channel_model=umi_nlso", "radio.channel_model"),
        ("radio.channel_model=lte_cqi", "radio.channel_model"),
        ("radio.fluctuation_eta=2.0", "radio.fluctuation_eta"),
        ("cell.inter_site_distance_m=100", "cell"),
    ],
)
def test_bad_radio_input_names_the_key(override, key):
    assert _key_of([override]) == key


def test_a_plugin_path_loss_model_needs_every_method_of_the_protocol(monkeypatch):
    """``radio.channel_model: package.module:attribute`` loads a user's model; one that
    lacks a ChannelModel method is refused naming the key (not an AttributeError)."""
    full = UMI_NLOS
    partial = types.SimpleNamespace(pathloss_db=full.pathloss_db, problems=full.problems)
    module = types.ModuleType("user_pathloss")
    module.FULL, module.PARTIAL = full, partial  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "user_pathloss", module)
    scenario_from_data(_base(), overrides=["radio.channel_model=user_pathloss:FULL"])
    assert _key_of(["radio.channel_model=user_pathloss:PARTIAL"]) == "radio.channel_model"


def test_rb_per_flow_is_checked_against_n_rb():
    assert _key_of(["radio.uplink.n_rb=10", "radio.uplink.rb_per_flow=11"]) == (
        "radio.uplink.rb_per_flow"
    )


def test_los_breakpoint_with_a_1m_ue_is_refused_naming_the_height():
    with pytest.raises(ScenarioError, match="h' = h - 1 m") as info:
        scenario_from_data(_base(), overrides=["cell.ue_height_m=1", "radio.channel_model=umi"])
    assert info.value.problems[0].key == "cell.ue_height_m"
    # The NLOS hexagonal model has no height term: fine with 1 m.
    scenario_from_data(_base(), overrides=["cell.ue_height_m=1"])


def test_clip_accepts_distances_beyond_the_model():
    # A 2 km cell is beyond the standard LTE mapping's coverage; Shannon with loss never
    # gives a zero rate, which keeps this test on clipping.
    scenario = scenario_from_data(
        _base(),
        overrides=[
            "cell.radius_m=2500",
            "radio.out_of_range=clip",
            "radio.rate_mapping={kind: shannon_with_loss}",
        ],
    )
    build = build_radio(scenario, simpy.Environment(), Streams(0), Timeline(), 10)
    assert np.all(np.isfinite(build.columns["pathloss_db"]))


def test_inter_site_distance_sets_the_radius():
    scenario = scenario_from_data(
        _base(cell={**ISOLATED_CELL, "radius_m": None, "inter_site_distance_m": "1 km"})
    )
    assert scenario.cell.radius_m == pytest.approx(1000 / np.sqrt(3))
    again = scenario_from_data(scenario.model_dump(mode="json"))
    assert again.cell == scenario.cell


def test_background_traffic_needs_the_lte_model():
    data = _base(traffic={"sources": [{"kind": "ftp1", "arrival_rate_hz": 1.0}]})
    data["radio"] = {"model": "fixed"}
    assert _key_of([], data) == "traffic.sources"


OVERLOAD = {"sources": [{"kind": "ftp1", "direction": "uplink", "arrival_rate_hz": 50.0}]}


def test_background_load_at_capacity_without_deadline_is_an_error():
    with pytest.raises(ScenarioError, match=r"may never finish; set fl\.deadline_s") as info:
        scenario_from_data(_base(traffic=OVERLOAD))
    assert info.value.problems[0].key == "traffic.sources.0.arrival_rate_hz"
    constant = {"sources": [{"kind": "constant", "direction": "downlink", "load_fraction": 1.0}]}
    assert _key_of([], _base(traffic=constant)) == "traffic.sources.0.load_fraction"
    full = {"sources": [{"kind": "full_buffer", "direction": "uplink"}]}
    assert _key_of(["radio.uplink.scheduler=fifo"], _base(traffic=full)) == (
        "traffic.sources.0.users"
    )
    # Under equal sharing full-buffer users only take a share: no problem.
    scenario_from_data(_base(traffic=full))


def test_background_load_at_capacity_with_deadline_warns():
    data = _base(traffic=OVERLOAD)
    data["fl"]["deadline_s"] = 60.0
    with pytest.warns(RadioWarning, match="traffic.sources.0.arrival_rate_hz"):
        scenario_from_data(data)
    light = _base(traffic={"sources": [{**OVERLOAD["sources"][0], "arrival_rate_hz": 0.05}]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scenario_from_data(light)


def test_background_load_counts_only_background_users_with_coverage():
    """Users without coverage (rate 0 under lte_cqi at the edge of a 2 km cell) are never
    drawn (CellUsers skips them): they must not make the estimate infinite."""
    data = _base(traffic={"sources": [{**OVERLOAD["sources"][0], "arrival_rate_hz": 0.01}]})
    data["cell"]["radius_m"] = 2000.0
    data["radio"]["rate_mapping"] = {"kind": "lte_cqi"}
    scenario = scenario_from_data(data)
    system = radio_system(scenario)
    rng = np.random.default_rng(PLANNING_SEED)  # the planning's drop, redone
    gains = system.gains(drop_users(system, MIN_USERS, rng), rng, rng, rng)
    loss = gains.coupling_loss_db
    snr = system.ul_power_db(loss) - loss - system.noise_db[UL]
    rates = system.rate_per_rb(UL, snr)
    assert np.any(rates == 0)  # the case this test is about
    share = background_load(scenario)["uplink"].expected[0]
    # One cell, nothing to interfere: λ E[S] E[1/r | r > 0] / n_rb, with E[S] = 4e6 bit
    # (0.5 MB, constant) and 50 RBs (10 MHz); the plan reads the rates from a table over
    # SINR at the nearest 0.02 dB (lte_cqi is a staircase: the few users within 0.01 dB of
    # a step take its other side; 0.6% with these 129 covered users), hence the tolerance.
    covered = rates[rates > 0]
    assert share == pytest.approx(0.01 * 4e6 * np.mean(1 / covered) / 50, rel=1e-2)
    assert 0 < share < 1


# -- the MAB-CS paper's cell -----------------------------------------------------------------


def _paper_rates(n: int, seed: int | None = None) -> np.ndarray:
    overrides = [*PAPER] + ([f"seed={seed}"] if seed is not None else [])
    scenario = load_scenario("mab_cs_paper", overrides)
    build = build_radio(scenario, simpy.Environment(), Streams(scenario.seed), Timeline(), n)
    return build.network.rate_ul_bps


def test_mab_cs_paper_client_rates_mean_and_max():
    """Sec. IV-A: mean 1.4 Mbit/s, max 8.6 Mbit/s (= 1.8 MHz x ρ_max 4.8) over K = 100."""
    rates = _paper_rates(100)
    assert rates.size == 100
    assert rates.mean() == pytest.approx(1.4e6, rel=0.10)
    # docs/radio.md: the scenario's own drop (seed 1) has a mean of 1.50 Mbit/s.
    assert rates.mean() == pytest.approx(1.50e6, rel=0.005)
    assert rates.max() == pytest.approx(8.64e6)


def test_mab_cs_paper_calibration_holds_in_expectation():
    """The noise figure was solved for a population mean of 1.4 Mbit/s (docs/radio.md): a
    large drop (not the scenario's 100) gives it within 2%."""
    rates = _paper_rates(40_000, seed=11)
    assert rates.mean() == pytest.approx(1.4e6, rel=0.02)
    # About 8% of clients sit close enough to the BS to hit the ρ_max cap: 8.1% over
    # 200,000 drops at a 2.7 dB noise figure (docs/radio.md, calibration table).
    assert np.mean(rates >= 8.64e6 - 1) == pytest.approx(0.081, abs=0.01)


def test_mab_cs_paper_runs_timing_only_through_the_cli(tmp_path: Path):
    out = tmp_path / "run"
    code = main(
        [
            "simulate",
            "mab_cs_paper",
            "--set",
            "learning=none",
            "--set",
            "fl.rounds=3",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rate_ul_mean_bps"] == pytest.approx(_paper_rates(100).mean())
    assert summary["rate_ul_max_bps"] == pytest.approx(8.64e6)
    assert 0 < summary["rb_utilisation_ul"] <= 1 and 0 < summary["rb_utilisation_dl"] <= 1
    clients = pd.read_parquet(out / "clients.parquet")
    for column in (
        "x_m",
        "y_m",
        "distance_m",
        "pathloss_db",
        "shadowing_db",
        "snr_ul_db",
        "rate_ul_bps",
        "rate_dl_bps",
    ):
        assert clients[column].notna().all(), column
    assert (clients.los == False).all()  # noqa: E712 (NLOS model)
    assert clients.distance_m.between(10, 2000).all()
    timeline = pd.read_parquet(out / "timeline.parquet")
    uploads = timeline[timeline.kind == "upload_end"]
    rate = clients.set_index("client").rate_ul_bps
    # An upload alone in the cell lasts M / θ_k (eq. (11)); shared ones last longer.
    # M = model_size_bits = 18.3 MB = 18.3e6 * 8 = 146.4e6 bit.
    assert (uploads.duration_s >= 146.4e6 / rate[uploads.client].to_numpy() - 1e-6).all()


def _busy_cell(tmp_path: Path, name: str, **fl: Any) -> Path:
    data = _base(
        traffic={
            "sources": [
                {"kind": "ftp1", "direction": "uplink", "arrival_rate_hz": 0.5},
                {
                    "kind": "ftp1",
                    "direction": "downlink",
                    "arrival_rate_hz": 1.0,
                    "file_size_bits": {"dist": "exponential", "mean": 4e6},
                },
                {"kind": "full_buffer", "direction": "downlink", "users": 1},
            ]
        },
    )
    # Block fading under the standard LTE mapping can hold a transfer at rate 0 (below MCS
    # 0) and needs a deadline; these tests are about traffic and RB accounting.
    data["radio"].update(
        {
            "fast_fading": "rayleigh_block",
            "fluctuation_eta": 1.9,
            "record_rb_allocations": True,
            "rate_mapping": {"kind": "shannon_with_loss"},
        }
    )
    data["fl"].update({"rounds": 4, **fl})
    path = tmp_path / f"{name}.yaml"
    path.write_text(json.dumps(data))  # JSON is YAML
    return path


def test_lte_runs_with_background_traffic_are_reproducible(tmp_path: Path):
    path = _busy_cell(tmp_path, "busy")
    for run in ("a", "b"):
        assert main(["simulate", str(path), "--out", str(tmp_path / run), "--quiet"]) == 0
    for name in ("timeline.parquet", "rounds.parquet", "clients.parquet"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    timeline = pd.read_parquet(tmp_path / "a" / "timeline.parquet")
    kinds = set(timeline.kind)
    assert {"background_flow_start", "background_flow_end", "upload_end"} <= kinds
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    # The full-buffer user keeps the downlink busy the whole run.
    assert summary["rb_utilisation_dl"] == pytest.approx(1.0)
    assert 0 < summary["rb_utilisation_ul_fl"] <= summary["rb_utilisation_ul"] <= 1


def test_deadline_interrupts_lte_transfers_cleanly(tmp_path: Path):
    path = _busy_cell(tmp_path, "tight", deadline_s=0.05, model_size_bits=1e8)
    assert main(["simulate", str(path), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    timeline = pd.read_parquet(tmp_path / "run" / "timeline.parquet")
    assert (timeline.kind == "deadline_miss").sum() == 4 * 2
    assert (timeline.kind == "upload_end").sum() == 0


def test_list_shows_the_channel_models(capsys):
    assert main(["list", "channel-models"]) == 0
    out = capsys.readouterr().out
    for name in ("umi_nlos", "umi_los", "umi", "uma_nlos", "shannon_with_loss", "lte_cqi"):
        assert f"  {name} " in out


def test_devices_without_coverage_are_out_of_service(tmp_path):
    """A device below the lowest CQI even alone in the cell (600 m radius, lte_cqi) could
    never finish a transfer: it never answers a resource request, so no round waits for it
    (before, a round without deadline hung until the time budget), and the build says so
    once. A cell where no device has coverage is refused."""
    overrides = ["cell.radius_m=600", "radio.rate_mapping={kind: lte_cqi}", "fl.rounds=30"]
    overrides.append("fl.time_budget_s=3600")  # bounds the run were a round to hang
    scenario = scenario_from_data(_base(), overrides=overrides)
    with pytest.warns(RadioWarning, match="no coverage"):
        build = build_radio(scenario, simpy.Environment(), Streams(0), Timeline(), 10)
    alone = build.network.devices.alone_rate_per_rb_bps
    dead = np.flatnonzero((alone[UL] <= 0) | (alone[DL] <= 0))
    assert 0 < len(dead) < 10  # the case this test is about
    assert not build.network.covered(dead).any()
    with pytest.warns(RadioWarning, match="no coverage"):
        run = simulate(scenario, tmp_path / "run").run_dir
    timeline = pd.read_parquet(run / "timeline.parquet")
    answered = timeline[timeline.kind == "response"]["client"]
    assert len(answered) and not answered.isin(dead).any()
    assert (pd.read_parquet(run / "rounds.parquet")["n_completed"] > 0).all()
    far = scenario_from_data(_base(), overrides=[*overrides, "cell.radius_m=2000"])
    with pytest.raises(ScenarioError, match="no coverage") as info:
        build_radio(far, simpy.Environment(), Streams(0), Timeline(), 10)
    assert info.value.problems[0].key == "radio.rate_mapping"


def test_devices_without_coverage_under_load_are_said_where_no_deadline_bounds_a_round():
    """nr_tdd at seed 3: devices covered alone but below CQI 1 while the other cells
    transmit at the nominal load. Without fl.deadline_s a round that selected one waited
    at rate 0 for the rest of the 2,400 s budget (the sweep of 2026-11-28), so the build
    says how many there are, naming the key; with the scenario's deadline it does not."""
    bare = load_scenario("nr_tdd", overrides=["seed=3", "fl.deadline_s=null"])
    with pytest.warns(RadioWarning, match=r"^fl\.deadline_s: (\d+) of 40 devices") as caught:
        build = build_radio(bare, simpy.Environment(), Streams(3), Timeline(), 40)
    nominal = build.network.devices.nominal_rate_per_rb_bps
    loaded = int(((nominal[UL] <= 0) | (nominal[DL] <= 0)).sum())
    said = [str(w.message) for w in caught if str(w.message).startswith("fl.deadline_s")]
    assert loaded > 0 and said == [said[0]] and said[0].startswith(f"fl.deadline_s: {loaded} of")
    bounded = load_scenario("nr_tdd", overrides=["seed=3"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RadioWarning)
        build_radio(bounded, simpy.Environment(), Streams(3), Timeline(), 40)


def _rb_in_use(timeline: pd.DataFrame, direction: str) -> tuple[np.ndarray, np.ndarray]:
    """Step function of RBs held, from rb_allocation rows (latest holding of each flow)."""
    rows = timeline[(timeline.kind == "rb_allocation") & (timeline.direction == direction)]
    holding: dict[tuple[int, int], float] = {}
    times, used = [], []
    for t, group in rows.groupby("t_s", sort=True):
        for flow, client, n_rb in zip(group.flow, group.client, group.n_rb, strict=True):
            holding[(flow, client)] = n_rb
        times.append(t)
        used.append(sum(holding.values()))
    return np.asarray(times), np.asarray(used)


def test_rb_allocation_rows_conserve_rbs_and_give_the_utilisation(tmp_path: Path):
    path = _busy_cell(tmp_path, "rb")
    assert main(["simulate", str(path), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    timeline = pd.read_parquet(tmp_path / "run" / "timeline.parquet")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    end_s = summary["sim_time_s"]
    other = timeline[timeline.kind != "rb_allocation"]
    assert other.n_rb.isna().all() and other.direction.isna().all()
    for direction in ("ul", "dl"):
        times, used = _rb_in_use(timeline, direction)
        total = timeline[timeline.direction == direction].n_rb_total.iloc[0]
        assert total == 50 and np.all(used <= total + 1e-9) and np.all(used >= -1e-9)
        widths = np.diff(np.append(np.clip(times, 0, end_s), end_s))
        average = float(np.sum(widths * used) / (total * end_s))
        assert average == pytest.approx(summary[f"rb_utilisation_{direction}"], rel=1e-6)


def test_rb_allocation_rows_can_be_switched_off(tmp_path: Path):
    data = json.loads(_busy_cell(tmp_path, "quiet").read_text())
    data["radio"]["record_rb_allocations"] = False
    path = tmp_path / "quiet.yaml"
    path.write_text(json.dumps(data))
    assert main(["simulate", str(path), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    timeline = pd.read_parquet(tmp_path / "run" / "timeline.parquet")
    assert "rb_allocation" not in set(timeline.kind) and "n_rb" not in timeline.columns


def test_block_fading_under_a_mapping_with_a_floor_needs_a_deadline():
    data = _base()
    data["radio"]["fast_fading"] = "rayleigh_block"
    with pytest.raises(ScenarioError) as info:
        scenario_from_data(data)
    assert [p.key for p in info.value.problems] == ["radio.fast_fading"]
    data["fl"]["deadline_s"] = 5.0
    build_radio(scenario_from_data(data), simpy.Environment(), Streams(0), Timeline(), 10)


@pytest.mark.parametrize(
    "size",
    [
        {"dist": "normal", "mean": 4e6, "std": 1e6},  # draws below 0 now and then
        {"dist": "uniform", "low": -1, "high": 4e6},
        0,
    ],
)
def test_file_sizes_that_can_be_negative_or_zero_are_refused_naming_the_key(size):
    source = {"kind": "ftp1", "direction": "uplink", "arrival_rate_hz": 1.0}
    data = _base(traffic={"sources": [{**source, "file_size_bits": size}]})
    assert _key_of([], data) == "traffic.sources.0.file_size_bits"
    accepted = {"dist": "truncnormal", "mean": 4e6, "std": 1e6, "low": 1, "high": 8e6}
    scenario_from_data(_base(traffic={"sources": [{**source, "file_size_bits": accepted}]}))
