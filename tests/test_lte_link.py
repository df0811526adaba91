"""The standard LTE link abstraction (``channel_models/lte.py``) against TS 36.211/212/213.

The cross-check against ns-3 LENA is ``tests/test_ns3_crosscheck.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from channel_models.lte import (
    DL_MCS_ITBS,
    FIRST_GRANT_LATENCY_S,
    UL_MCS_ITBS,
    LteTbs,
    block_error,
    code_blocks,
    data_res_per_prb,
    tbs_bits,
)
from netfl.config.radio import LteRadioConfig, LteTbsConfig
from netfl.radio.build import build_radio
from netfl.radio.link import rate_mapping
from netfl.recorder.timeline import Timeline
from netfl.rng import Streams
from netfl.scenario import scenario_from_data
from tests.conftest import isolated


def test_tbs_table_entries_of_ts36213_table_7_1_7_2_1_1():
    # Corners and entries read from TS 36.213 V12.13.0 Table 7.1.7.2.1-1.
    assert tbs_bits(0, 1) == 16 and tbs_bits(26, 1) == 712
    assert tbs_bits(0, 110) == 3112 and tbs_bits(26, 110) == 75376
    assert tbs_bits(26, 50) == 36696 and tbs_bits(9, 50) == 7992 and tbs_bits(6, 1) == 328
    table = np.array([tbs_bits(i, n) for i in range(27) for n in range(1, 111)]).reshape(27, 110)
    # More PRBs or a higher TBS index never carry fewer bits, except the TS's own outlier
    # at (I_TBS 6, N_PRB 1), 328 where its neighbours are 72 and 104 (ns-3 LENA uses 88).
    table[6, 0] = 88
    assert np.all(np.diff(table, axis=1) >= 0) and np.all(np.diff(table, axis=0) >= 0)
    with pytest.raises(ValueError, match=r"1\.\.110"):
        tbs_bits(0, 111)


def test_mcs_tables_of_ts36213():
    # Table 7.1.7.1-1: MCS 9 and 10 share I_TBS 9, MCS 16 and 17 share 15; Table 8.6.1-1:
    # MCS 10/11 share 10 and 20/21 share 19; both end at I_TBS 26.
    assert DL_MCS_ITBS[[9, 10, 16, 17, 28]].tolist() == [9, 9, 15, 15, 26]
    assert UL_MCS_ITBS[[10, 11, 20, 21, 28]].tolist() == [10, 10, 19, 19, 26]


@pytest.mark.parametrize(
    ("direction", "control", "ports", "srs", "res"),
    [
        ("downlink", 2, 2, 0, 168 - 24 - 12),  # 12 CRS REs in symbols 4, 7, 11
        ("downlink", 1, 1, 0, 168 - 12 - 6),
        ("downlink", 3, 4, 0, 168 - 36 - 16),  # 4 ports: symbols 4, 7, 8, 11 in the data region
        ("downlink", 1, 4, 0, 168 - 12 - 20),
        ("uplink", 2, 2, 0, 144),  # 2 DMRS symbols of 14
        ("uplink", 2, 2, 1, 132),  # plus the SRS symbol in every subframe
        ("uplink", 2, 2, 10, 144 - 1.2),
    ],
)
def test_data_res_per_prb_of_ts36211(direction, control, ports, srs, res):
    assert data_res_per_prb(direction, control, ports, srs) == pytest.approx(res)


def test_code_block_segmentation_of_ts36212():
    # B = TBS + 24 <= 6144 is one block; above, C = ceil(B / 6120).
    assert code_blocks(np.array([6120, 6121, 36696, 36697, 75376])).tolist() == [1, 2, 6, 7, 13]


@pytest.mark.parametrize("direction", ["uplink", "downlink"])
def test_the_chosen_mcs_meets_the_target_at_its_threshold(direction):
    mapping = LteTbs(direction, n_prb=25)
    table = mapping._mcs
    used = np.isfinite(mapping.mcs_thresholds_db)
    for m in np.flatnonzero(used):
        bler = block_error(
            mapping.mcs_thresholds_db[m],
            table["efficiency"][m],
            table["res"][m] / table["blocks"][m],
            table["blocks"][m],
            {2: 1.6, 4: 2.0, 6: 2.6}[int(table["qm"][m])],
        )
        assert bler == pytest.approx(0.1, abs=2e-3)
    # Nothing above a code rate of 0.930 (TS 36.213 Sec. 7.1.7).
    rate = table["efficiency"] / table["qm"]
    assert np.all(rate[used] <= 0.930)


def test_the_control_region_sets_the_downlink_top_mcs():
    # Two control symbols, two CRS ports: 132 REs; MCS 28 (I_TBS 26) on 50 PRBs is a code
    # rate of 0.931, above 0.930, so the downlink tops out at MCS 27; with one control
    # symbol (150 REs) it is 0.82 and MCS 28 is used.
    high = np.array([1e4])
    assert LteTbs("downlink", n_prb=50).mcs(high)[0] == 27
    assert LteTbs("downlink", n_prb=50, dl_control_symbols=1).mcs(high)[0] == 28
    assert not np.isfinite(LteTbs("downlink", n_prb=50).mcs_thresholds_db[28])


def test_uplink_peak_rate_is_the_largest_transport_block():
    # 36,696 bit per ms on 50 PRBs, less the PUCCH's 8% of the RBs and 46 header bytes per
    # 1,460-byte packet.
    mapping = LteTbs("uplink", n_prb=50)
    rate = mapping.rate_bps(np.array([1e5]), 180e3)[0] * 50
    assert rate == pytest.approx(36.696e6 * 0.92 * 1460 / 1506, rel=1e-9)
    assert mapping.rate_bps(np.array([1e-2]), 180e3)[0] == 0.0  # below MCS 0: no coverage


def test_below_mcs_0_a_device_concentrates_its_power():
    # Spread over 50 RBs, a device below MCS 0's threshold puts its power on fewer RBs:
    # the goodput per RB of the 50 falls with the SINR, to 0 once one RB cannot reach MCS 0.
    mapping = LteTbs("uplink", n_prb=50, power_rbs=50)
    threshold_db = mapping.mcs_thresholds_db[0]

    def rate(db: float) -> float:
        return float(mapping.rate_bps(np.array([10 ** (db / 10)]), 180e3)[0])

    assert rate(threshold_db - 3) == pytest.approx(rate(threshold_db + 0.005) / 2, rel=0.01)
    assert rate(threshold_db - 10 * np.log10(50) + 0.05) > 0
    assert rate(threshold_db - 10 * np.log10(50) - 0.05) == 0
    assert (
        LteTbs("uplink", n_prb=50).rate_bps(np.array([10 ** ((threshold_db - 1) / 10)]), 1)[0] == 0
    )


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["uplink", "downlink"]),
    st.integers(min_value=6, max_value=100),
    st.floats(min_value=0.01, max_value=0.3),
)
def test_goodput_never_falls_as_the_sinr_rises(direction, n_prb, bler):
    mapping = LteTbs(direction, n_prb=n_prb, target_bler=bler)
    sinr_db = np.linspace(-10, 35, 451)
    rate = mapping.rate_bps(10 ** (sinr_db / 10), 180e3)
    mcs = mapping.mcs(10 ** (sinr_db / 10))
    # Each MCS's goodput rises with the SINR and the best of them is taken.
    assert np.all(np.diff(rate) >= -1e-9 * rate.max())
    assert np.all(mcs[rate > 0] >= 0) and np.all(mcs[rate == 0] == -1)


def test_config_builds_one_mapping_per_direction_from_its_link():
    config = LteRadioConfig(uplink={"rb_per_flow": 10})
    assert isinstance(config.rate_mapping, LteTbsConfig)  # the default
    up, down = rate_mapping(config, "ul"), rate_mapping(config, "dl")
    assert (up.direction, up.n_prb, down.direction, down.n_prb) == ("uplink", 10, "downlink", 50)
    assert up.target_bler == 0.1 and up.implementation_loss_db == (1.6, 2.0, 2.6)


def _cell(mapping):
    data = {
        "seed": 3,
        "cell": {"radius_m": 150},
        "devices": {"groups": [{"name": "p", "count": 4, "compute_sps": 100.0, "n_samples": 50}]},
        "fl": {"rounds": 1, "clients_per_round": 2, "model_size_bits": 2e6},
        "learning": None,
    }
    return scenario_from_data(isolated(data, rate_mapping=mapping))


def test_an_upload_waits_for_its_first_grant_then_runs_at_its_rate():
    sc = _cell({"kind": "lte_tbs", "ul_first_grant_latency_s": 0.02})
    env = simpy.Environment()
    network = build_radio(sc, env, Streams(sc.seed), Timeline(), 4).network
    proc = network.upload(env, 0, 2e6)
    env.run(until=proc)
    assert env.now == pytest.approx(0.02 + 2e6 / network.rate_ul_bps[0], rel=1e-9)
    down = network.download(env, 0, 2e6)
    start = env.now
    env.run(until=down)  # downloads do not wait for an uplink grant
    assert env.now - start == pytest.approx(2e6 / network.rate_dl_bps[0], rel=1e-9)
    assert pytest.approx(0.0085) == FIRST_GRANT_LATENCY_S


def test_a_pinned_paper_mapping_has_no_grant_latency():
    sc = _cell({"kind": "shannon_with_loss"})
    env = simpy.Environment()
    network = build_radio(sc, env, Streams(sc.seed), Timeline(), 4).network
    proc = network.upload(env, 0, 2e6)
    env.run(until=proc)
    assert env.now == pytest.approx(2e6 / network.rate_ul_bps[0], rel=1e-12)
