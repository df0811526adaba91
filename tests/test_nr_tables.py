"""channel_models.nr: NR PRB table, CQI tables, SINR -> CQI and TDD pattern arithmetic.

Expected numbers are typed in from the TS tables (TS 38.101-1 / 38.101-2 Table 5.3.2-1,
TS 38.214 Tables 5.2.2.1-2 and 5.2.2.1-3) independently of the module's dicts.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from channel_models.nr import (
    CQI_EFFICIENCY,
    CQI_TABLE1,
    CQI_TABLE2,
    NR_PRB_TABLE,
    NrCqi,
    TddPattern,
    awgn_rate_sinr,
    max_prbs,
    prb_bandwidth_hz,
    scs_hz,
    slot_duration_s,
)

MHZ = (3, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 60, 70, 80, 90, 100)
# TS 38.101-1 (Rel-17) Table 5.3.2-1, one row per SCS, None = N/A.
FR1_ROWS = {
    0: (15, 25, 52, 79, 106, 133, 160, 188, 216, 242, 270, None, None, None, None, None),
    1: (None, 11, 24, 38, 51, 65, 78, 92, 106, 119, 133, 162, 189, 217, 245, 273),
    2: (None, None, 11, 18, 24, 31, 38, 44, 51, 58, 65, 79, 93, 107, 121, 135),
}
# TS 38.101-2 Table 5.3.2-1, 120 kHz row.
FR2_120 = {50: 32, 100: 66, 200: 132, 400: 264}


@pytest.mark.parametrize("mu", [0, 1, 2])
def test_fr1_prb_table_entry_by_entry(mu):
    for mhz, expected in zip(MHZ, FR1_ROWS[mu], strict=True):
        if expected is None:
            with pytest.raises(ValueError, match="not an NR channel bandwidth"):
                max_prbs(mhz * 1e6, mu)
        else:
            assert max_prbs(mhz * 1e6, mu) == expected, (mu, mhz)


def test_fr2_prb_table_and_guard_band():
    for mhz, expected in FR2_120.items():
        assert max_prbs(mhz * 1e6, 3) == expected
    with pytest.raises(ValueError, match=r"TS 38\.101-2"):
        max_prbs(20e6, 3)
    assert set(NR_PRB_TABLE[120]) == set(FR2_120)
    # Every entry fits in its channel: N_RB * 12 * SCS < bandwidth (guard bands >= 0).
    for scs_khz, row in NR_PRB_TABLE.items():
        for mhz, n_rb in row.items():
            assert n_rb * 12 * scs_khz * 1e3 < mhz * 1e6


def test_fr2_60_khz_row_and_refused_scs():
    # TS 38.101-2 Table 5.3.2-1, 60 kHz row.
    assert [max_prbs(b * 1e6, 2, "FR2") for b in (50, 100, 200)] == [66, 132, 264]
    with pytest.raises(ValueError, match="not used for data in FR2"):
        max_prbs(100e6, 1, "FR2")


def test_numerology():
    assert [scs_hz(mu) for mu in range(4)] == [15e3, 30e3, 60e3, 120e3]
    assert slot_duration_s(1) == 0.5e-3
    assert prb_bandwidth_hz(1) == 360e3
    with pytest.raises(ValueError, match="mu = 4 is out of range"):
        scs_hz(4)


@pytest.mark.parametrize(
    "table, rows", [("table1", CQI_TABLE1), ("table2", CQI_TABLE2)], ids=["64qam", "256qam"]
)
def test_cqi_efficiency_is_qm_times_code_rate(table, rows):
    eff = CQI_EFFICIENCY[table]
    assert eff[0] == 0.0 and len(eff) == 16
    for cqi, (qm, rate1024) in enumerate(rows, start=1):
        assert eff[cqi] == pytest.approx(round(qm * rate1024 / 1024, 4), abs=1e-4)


def test_cqi_table_spot_values():
    # TS 38.214 Table 5.2.2.1-3: CQI 12 = 256QAM 711/1024 -> 5.5547; CQI 15 -> 7.4063.
    assert CQI_EFFICIENCY["table2"][12] == 5.5547
    assert CQI_EFFICIENCY["table2"][15] == 7.4063
    assert CQI_TABLE2[11] == (8, 711)
    # Table 5.2.2.1-2: CQI 15 = 64QAM 948 -> 5.5547, CQI 1 = QPSK 78 -> 0.1523.
    assert CQI_EFFICIENCY["table1"][15] == 5.5547
    assert CQI_TABLE1[0] == (2, 78)


def test_bler_thresholds_follow_the_normal_approximation():
    # At the threshold SINR s the PPV rate equals the CQI efficiency.
    eff = CQI_EFFICIENCY["table2"][1:]
    s = awgn_rate_sinr(eff, 0.1, 1000)
    v = s * (s + 2) / (s + 1) ** 2 * math.log2(math.e) ** 2
    q = 1.2815515655446004  # Q^-1(0.1)
    np.testing.assert_allclose(np.log2(1 + s) - np.sqrt(v / 1000) * q, eff, atol=1e-9)
    # Above Shannon: s > 2^R - 1; a stricter BLER needs more SINR.
    assert np.all(s > 2**eff - 1)
    assert np.all(awgn_rate_sinr(eff, 0.01, 1000) > s)


def test_nr_cqi_mapping():
    mapping = NrCqi(implementation_loss_db=0.0)
    th = mapping.thresholds_db
    assert np.all(np.diff(th) > 0)
    sinr = 10 ** (np.array([th[0] - 0.01, th[0] + 0.01, th[11] + 0.01, 60.0]) / 10)
    assert mapping.cqi(sinr).tolist() == [0, 1, 12, 15]
    assert mapping.spectral_efficiency(sinr)[2] == 5.5547
    assert NrCqi(implementation_loss_db=1.0).thresholds_db[0] == pytest.approx(th[0] + 1.0)
    given = NrCqi(table="table1", sinr_thresholds_db=tuple(range(-6, 24, 2)))
    assert given.cqi(np.array([10 ** (0.0 / 10)])).tolist() == [4]
    assert given.rate_bps(np.array([1e9]), 1e6)[0] == pytest.approx(5.5547e6)
    with pytest.raises(ValueError, match="15 increasing"):
        NrCqi(sinr_thresholds_db=(1.0, 2.0))
    with pytest.raises(ValueError, match="target_bler"):
        NrCqi(target_bler=1.5)


def test_dddsu_shares_period_and_wait():
    p = TddPattern.parse("DDDSU", "10:2:2")
    # UL: 14 + 2 of 70 symbols; DL: 3*14 + 10 of 70.
    assert p.share("ul") == pytest.approx(16 / 70)
    assert p.share("dl") == pytest.approx(52 / 70)
    assert p.period_s(1) == pytest.approx(2.5e-3)
    # UL idle gap: 3 D slots + 10 DL + 2 guard symbols = 54 symbols, once per period of 70.
    symbol_s = 0.5e-3 / 14
    assert p.expected_wait_s("ul", 1) == pytest.approx(54**2 / 2 / 70 * symbol_s)
    # DL idle gap: 2 guard + 2 UL(S) + 14 U = 18 symbols.
    assert p.expected_wait_s("dl", 1) == pytest.approx(18**2 / 2 / 70 * symbol_s)


def test_other_patterns():
    p = TddPattern.parse("ddddddddsuu", "6:4:4")
    assert p.share("ul") == pytest.approx((28 + 4) / (11 * 14))
    q = TddPattern.parse("DDSUU")
    assert q.share("ul") == pytest.approx(30 / 70)
    # DSUDSU: two equal UL gaps per period.
    r = TddPattern.parse("DSUDSU", "10:2:2")
    gap = 14 + 10 + 2
    assert r.expected_wait_s("ul", 0) == pytest.approx(2 * gap**2 / 2 / 84 * 1e-3 / 14)


@pytest.mark.parametrize(
    "pattern, special, message",
    [
        ("DDXSU", "10:2:2", "unknown slot letter 'X'"),
        ("DDDDD", "10:2:2", "no uplink symbol"),
        ("DDDSD", "12:2:0", "no uplink symbol"),
        ("UUUUU", "10:2:2", "no downlink symbol"),
        ("DDDSU", "10:2:3", "adding up to 14"),
        ("DDDSU", "10-2-2", "DL:guard:UL"),
    ],
)
def test_bad_patterns(pattern, special, message):
    with pytest.raises(ValueError, match=message):
        TddPattern.parse(pattern, special)
