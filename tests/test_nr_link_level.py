"""netfl's NR SINR -> CQI thresholds against Sionna SYS's link-level BLER tables (issue 26).

``benchmarks/ns3_crosscheck/results/sionna_nr_bler10.csv`` holds, per channel (PUSCH,
PDSCH), MCS table, MCS and code-block size, the SINR at which Sionna's published BLER
tables (LDPC, AWGN) cross 0.1 (``benchmarks/ns3_crosscheck/sionna_nr.py``; numbers carried
from Sionna v1.2.1, Apache-2.0). netfl's NR thresholds are the normal approximation with
``n = 1000`` plus a loss per modulation (:data:`channel_models.nr.SIONNA_LOSS_DB`).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from channel_models.nr import CQI_TABLE1, CQI_TABLE2, SIONNA_LOSS_DB, NrCqi, awgn_rate_sinr

DATA = (
    Path(__file__).resolve().parents[1] / "benchmarks/ns3_crosscheck/results/sionna_nr_bler10.csv"
)
ROWS = list(csv.DictReader(DATA.open()))


def _at(cbs: int) -> list[dict[str, str]]:
    return [r for r in ROWS if int(r["cbs"]) == cbs and int(r["qm"]) >= 2]


def _efficiency(r: dict[str, str]) -> float:
    return int(r["qm"]) * float(r["code_rate_x1024"]) / 1024


def test_losses_are_the_fit_to_sionnas_tables():
    rows = _at(1000)
    efficiency = np.array([_efficiency(r) for r in rows])
    bound = 10 * np.log10(awgn_rate_sinr(efficiency, 0.1, 1000))
    gap = np.array([float(r["sinr_db"]) for r in rows]) - bound
    qm = np.array([int(r["qm"]) for r in rows])
    for i, q in enumerate((2, 4, 6, 8)):
        mine = gap[qm == q]
        assert SIONNA_LOSS_DB[i] == pytest.approx(mine.mean(), abs=0.06)
        # The tables' 1.6-1.8 dB grid, and 64QAM's gap growing to 2.8 dB at code rates of
        # 0.89-0.93, where the constellation's capacity flattens (docs/radio.md).
        assert np.abs(mine - SIONNA_LOSS_DB[i]).max() <= 0.7


@pytest.mark.parametrize(("table", "cqis"), [("table1", CQI_TABLE1), ("table2", CQI_TABLE2)])
def test_cqi_thresholds_within_0_7_db_of_sionna_for_the_same_modulation_and_rate(table, cqis):
    """A CQI and a PDSCH MCS with the same modulation and code rate (TS 38.214 Tables
    5.2.2.1-2/-3 and 5.1.3.1-1/-2) need the same SINR; netfl's CQI threshold against
    Sionna's crossing for that MCS (code blocks of 1000 bits)."""
    mcs_table = 1 if table == "table1" else 2
    by_rate = {
        (int(r["qm"]), float(r["code_rate_x1024"])): float(r["sinr_db"])
        for r in _at(1000)
        if r["channel"] == "PDSCH" and int(r["mcs_table"]) == mcs_table
    }
    thresholds = NrCqi(table).thresholds_db
    matched = 0
    for cqi, (qm, r1024) in enumerate(cqis, start=1):
        if (qm, r1024) in by_rate:
            assert thresholds[cqi - 1] == pytest.approx(by_rate[(qm, r1024)], abs=0.7)
            matched += 1
    assert matched >= 8


def test_one_loss_for_every_modulation_is_still_accepted():
    mapping = NrCqi(implementation_loss_db=1.0)
    bound = NrCqi(implementation_loss_db=0.0).thresholds_db
    assert mapping.thresholds_db == pytest.approx(bound + 1.0)
    with pytest.raises(ValueError, match="four"):
        NrCqi(implementation_loss_db=(1.0, 2.0))
