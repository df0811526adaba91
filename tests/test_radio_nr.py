"""radio.model: nr: TDD time shares and waits against the analytic values, bad input."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import simpy

from channel_models.nr import NrCqi, TddPattern
from channel_models.rate import db_to_linear
from netfl.errors import ScenarioError
from netfl.radio.air import AirInterface
from netfl.radio.build import build_radio
from netfl.recorder.timeline import Timeline
from netfl.rng import Streams
from netfl.scenario import scenario_from_data
from tests.conftest import ISOLATED_CELL

BITS = 8e6
N = 12


def _data(**radio: Any) -> dict[str, Any]:
    return {
        "seed": 5,
        "cell": {**ISOLATED_CELL, "radius_m": 100.0},
        "radio": {"model": "nr", "channel_model": "umi_nlos", **radio},
        "devices": {"groups": [{"count": N, "n_samples": 50}]},
        "fl": {"rounds": 2, "clients_per_round": 3, "model_size_bits": BITS},
        "learning": None,
    }


def _upload_time_s(bits: float, **radio: Any) -> tuple[float, Any]:
    scenario = scenario_from_data(_data(**radio))
    env = simpy.Environment()
    build = build_radio(scenario, env, Streams(scenario.seed), Timeline(), N)
    proc = build.network.upload(env, 0, bits)
    env.run()
    assert proc.value is not None
    return env.now, build


def _analytic_rate_bps(build: Any, share: float, overhead: float = 0.08) -> float:
    """One device alone: 273 PRBs x 12 x 30 kHz x SE(SINR) x (1 - OH) x share."""
    sinr = db_to_linear(build.columns["sinr_ul_db"][0])
    efficiency = float(NrCqi().spectral_efficiency(np.array([sinr]))[0])
    assert efficiency > 0
    return 273 * 12 * 30e3 * efficiency * (1 - overhead) * share


def test_single_upload_in_an_idle_tdd_cell_matches_bits_over_rate_times_share():
    elapsed, build = _upload_time_s(BITS, tdd_pattern="DDDSU")
    share = 16 / 70  # 14 U symbols + 2 UL symbols of the 10:2:2 special slot, of 70
    expected = BITS / _analytic_rate_bps(build, share)
    assert elapsed == pytest.approx(expected, rel=0.01)


def test_dddsu_uplink_throughput_is_its_share_of_the_same_fdd_band():
    tdd, _ = _upload_time_s(BITS, tdd_pattern="DDDSU")
    fdd, _ = _upload_time_s(BITS, duplex="fdd")
    assert fdd / tdd == pytest.approx(16 / 70, rel=0.01)
    ddsuu, _ = _upload_time_s(BITS, tdd_pattern="DDSUU")
    assert fdd / ddsuu == pytest.approx(30 / 70, rel=0.01)


def test_a_short_upload_waits_for_its_slots_then_runs_at_the_full_rate():
    pattern = TddPattern.parse("DDDSU")
    wait = pattern.expected_wait_s("ul", 1)
    _, build = _upload_time_s(BITS, tdd_pattern="DDDSU")
    full_rate = _analytic_rate_bps(build, 1.0)
    bits = 0.1 * full_rate * 0.5e-3  # a tenth of a slot's worth at the full rate
    elapsed, _ = _upload_time_s(bits, tdd_pattern="DDDSU")
    assert elapsed == pytest.approx(wait + bits / full_rate, rel=1e-6)
    # Long transfers: no wait; the access delay formula at the boundary.
    air = AirInterface(
        time_share={"uplink": 0.25, "downlink": 0.75},
        expected_wait_s={"uplink": 1e-3, "downlink": 0.0},
    )
    assert air.access_delay_s("uplink", 0.0) == 1e-3
    assert air.access_delay_s("uplink", 1e-3 / 0.75) == pytest.approx(0.0)
    assert air.access_delay_s("downlink", 0.0) == 0.0


def test_fdd_carriers_take_their_prbs_and_power_per_bandwidth():
    radio = {"duplex": "fdd", "numerology": 0}
    radio |= {"uplink": {"bandwidth_hz": 20e6}, "downlink": {"bandwidth_hz": 50e6}}
    scenario = scenario_from_data(_data(**radio))
    up, down = scenario.radio.uplink, scenario.radio.downlink
    assert (up.rb_count, down.rb_count) == (106, 270)
    assert up.tx_power_dbm == 23.0  # power class 3
    # 44 dBm in 20 MHz (TR 38.901 Table 7.8-1) scaled to 50 MHz: 44 + 10 log10(2.5).
    assert down.tx_power_dbm == pytest.approx(44.0 + 10 * np.log10(2.5), abs=0.01)
    assert (up.noise_figure_db, down.noise_figure_db) == (5.0, 9.0)


def _problem(**radio: Any) -> tuple[str | None, str]:
    with pytest.raises(ScenarioError) as info:
        scenario_from_data(_data(**radio))
    problem = info.value.problems[0]
    assert "\n" not in str(info.value)
    return problem.key, problem.message


def test_bandwidth_not_allowed_for_the_scs():
    key, message = _problem(numerology=2, duplex="fdd", uplink={"bandwidth_hz": 5e6})
    assert key == "radio"
    assert message.startswith("uplink.bandwidth_hz: 5 MHz is not an NR channel bandwidth at 60 kHz")


def test_unknown_slot_letter_and_no_uplink_slot_name_the_key():
    key, message = _problem(tdd_pattern="DDXSU")
    assert key == "radio.tdd_pattern" and "unknown slot letter 'X'" in message
    key, message = _problem(tdd_pattern="DDDDD")
    assert key == "radio.tdd_pattern" and "no uplink symbol" in message
    key, message = _problem(tdd_pattern="DDDSD", tdd_special_slot="12:2:0")
    assert key == "radio.tdd_pattern" and "no uplink symbol" in message


def test_numerology_out_of_range_names_the_key():
    key, message = _problem(numerology=4)
    assert key == "radio.numerology" and "out of range" in message


def test_tdd_needs_one_carrier():
    key, message = _problem(uplink={"bandwidth_hz": 40e6})
    assert key == "radio" and "one carrier" in message


def test_report_states_model_numerology_and_pattern():
    from netfl.trace.report import radio_rows

    rows = dict(radio_rows({"model": "nr", "numerology": 1, "tdd_pattern": "DDDSU"}))
    assert rows["radio model"] == "nr"
    assert rows["numerology"] == "mu = 1 (30 kHz SCS, 0.5 ms slots)"
    assert rows["TDD pattern"].startswith("DDDSU (S = 10:2:2 DL:guard:UL symbols; UL share 0.229")
    assert dict(radio_rows({"model": "nr", "duplex": "fdd"}))["duplex"] == "fdd"
    assert radio_rows({"model": "lte"}) == [("radio model", "lte")]


def test_fr2_numerology_needs_an_fr2_carrier():
    key, message = _problem(numerology=3, duplex="fdd")
    assert key == "radio" and "FR2 only" in message
    fr2 = {"numerology": 3, "carrier_frequency_hz": 28e9, "channel_model": "tr38901_umi"}
    scenario = scenario_from_data(
        _data(**fr2, uplink={"bandwidth_hz": 400e6}, downlink={"bandwidth_hz": 400e6})
    )
    assert scenario.radio.uplink.rb_count == 264


def _slot_level_mean_s(pattern: TddPattern, t_on_s: float, mu: int = 1) -> float:
    """Reference: mean elapsed time of a transfer needing ``t_on_s`` of uplink air time,
    started uniformly over the period, stepped symbol by symbol (no fluid model)."""
    mask = pattern._mask("ul").astype(float)
    symbol_s = 1e-3 / 2**mu / 14
    reps = int(np.ceil(t_on_s / (mask.sum() * symbol_s))) + 3
    cum = np.concatenate([[0.0], np.cumsum(np.tile(mask, reps) * symbol_s)])
    t = np.arange(len(cum)) * symbol_s
    starts = np.linspace(0.0, len(mask) * symbol_s, 2000, endpoint=False)
    target = np.interp(starts, t, cum) + t_on_s - 1e-15
    i = np.searchsorted(cum, target, side="left")
    return float(np.mean(t[i - 1] + (target - cum[i - 1]) - starts))


@pytest.mark.parametrize("periods", [0.01, 0.3, 1.0, 2.0, 10.0, 40.0, 200.0])
def test_tdd_access_delay_against_a_slot_level_reference(periods):
    pattern = TddPattern.parse("DDDSU")
    share, wait = pattern.share("ul"), pattern.expected_wait_s("ul", 1)
    air = AirInterface(
        time_share={"uplink": share, "downlink": 1 - share},
        expected_wait_s={"uplink": wait, "downlink": 0.0},
    )
    t_on = periods * 16 * 0.5e-3 / 14  # `periods` times one period's uplink air time
    fluid = t_on / share
    model = air.access_delay_s("uplink", fluid) + fluid
    exact = _slot_level_mean_s(pattern, t_on)
    # Never off by more than the mean wait; within 1% from 40 periods (100 ms) on.
    assert abs(model - exact) <= wait + 1e-9
    if periods >= 40:
        assert model == pytest.approx(exact, rel=0.01)
    if periods <= 0.01:
        assert model == pytest.approx(exact, rel=0.01)  # short: wait + air time
