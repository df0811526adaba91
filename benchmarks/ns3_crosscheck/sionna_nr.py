"""NR link level: the SINR at BLER 0.1 per MCS from Sionna SYS's published BLER tables.

Sionna (NVIDIA, Apache-2.0) ships PUSCH and PDSCH BLER tables from link-level simulation
(LDPC, AWGN) per MCS table, MCS index and code-block size (CBS) in
``src/sionna/sys/bler_tables/{PUSCH,PDSCH}_table{1,2}.json``. This script reads them from a
Sionna checkout or installed package (``--sionna PATH``, the folder holding
``bler_tables``) and writes ``results/sionna_nr_bler10.csv``: for every (channel, MCS table,
MCS, CBS), the SINR at which the BLER crosses 0.1, interpolated linearly in the probit
``Q^-1(BLER)`` between the two grid points around it (a BLER of 0 observed counts as
1/3000, below the resolution of the runs). The tables' SINR grid is coarse (1.6-1.8 dB), so a
crossing is known to a few tenths of a dB. Numbers are carried, not code; the test
``tests/test_nr_link_level.py`` compares netfl's NR thresholds with them.

``python -m benchmarks.ns3_crosscheck.sionna_nr --sionna /path/to/sionna/sys``
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from statistics import NormalDist

from benchmarks.ns3_crosscheck.cases import RESULTS

FILES = ("PUSCH_table1", "PUSCH_table2", "PDSCH_table1", "PDSCH_table2")
#: (modulation order, code rate x 1024) per MCS index of the tables the BLER tables were
#: simulated with (Sionna's ``decode_mcs_index`` defaults): PDSCH, TS 38.214 Table
#: 5.1.3.1-1 (table 1, 64QAM) and 5.1.3.1-2 (table 2, 256QAM); PUSCH with transform
#: precoding, TS 38.214 Table 6.1.4.1-1 and 6.1.4.1-2 (q = 1: MCS 0-1 of table 1 and 0-5 of
#: table 2 are pi/2-BPSK).
MCS_TABLE = {
    ("PDSCH", 1): [
        (2, 120), (2, 157), (2, 193), (2, 251), (2, 308), (2, 379), (2, 449), (2, 526),
        (2, 602), (2, 679), (4, 340), (4, 378), (4, 434), (4, 490), (4, 553), (4, 616),
        (4, 658), (6, 438), (6, 466), (6, 517), (6, 567), (6, 616), (6, 666), (6, 719),
        (6, 772), (6, 822), (6, 873), (6, 910), (6, 948),
    ],
    ("PDSCH", 2): [
        (2, 120), (2, 193), (2, 308), (2, 449), (2, 602), (4, 378), (4, 434), (4, 490),
        (4, 553), (4, 616), (4, 658), (6, 466), (6, 517), (6, 567), (6, 616), (6, 666),
        (6, 719), (6, 772), (6, 822), (6, 873), (8, 682.5), (8, 711), (8, 754), (8, 797),
        (8, 841), (8, 885), (8, 916.5), (8, 948),
    ],
    ("PUSCH", 1): [
        (1, 240), (1, 314), (2, 193), (2, 251), (2, 308), (2, 379), (2, 449), (2, 526),
        (2, 602), (2, 679), (4, 340), (4, 378), (4, 434), (4, 490), (4, 553), (4, 616),
        (4, 658), (6, 466), (6, 517), (6, 567), (6, 616), (6, 666), (6, 719), (6, 772),
        (6, 822), (6, 873), (6, 910), (6, 948),
    ],
    ("PUSCH", 2): [
        (1, 60), (1, 80), (1, 100), (1, 128), (1, 156), (1, 198), (2, 120), (2, 157),
        (2, 193), (2, 251), (2, 308), (2, 379), (2, 449), (2, 526), (2, 602), (2, 679),
        (4, 378), (4, 434), (4, 490), (4, 553), (4, 616), (4, 658), (4, 699), (4, 772),
        (6, 567), (6, 616), (6, 666), (6, 772),
    ],
}  # fmt: skip
FLOOR = 1 / 3000


def crossing_db(snr_db: list[float], bler: list[float], target: float = 0.1) -> float | None:
    probit = NormalDist().inv_cdf
    for i in range(1, len(snr_db)):
        if bler[i - 1] > target >= bler[i]:
            hi = probit(1 - min(max(bler[i - 1], FLOOR), 1 - FLOOR))
            lo = probit(1 - max(bler[i], FLOOR))
            t = probit(1 - target)
            return snr_db[i - 1] + (t - hi) / (lo - hi) * (snr_db[i] - snr_db[i - 1])
    return None


def extract(folder: Path) -> list[dict]:
    rows = []
    for name in FILES:
        data = json.loads((folder / "bler_tables" / f"{name}.json").read_text())
        for category in data["category"].values():
            for table_index, table in category["index"].items():
                for mcs, entry in table["MCS"].items():
                    channel = name.split("_")[0]
                    qm, r1024 = MCS_TABLE[(channel, int(table_index))][int(mcs)]
                    for cbs, curve in entry["CBS"].items():
                        snr = crossing_db(entry["SNR_db"], curve["BLER"])
                        if snr is None:
                            continue
                        rows.append(
                            {
                                "channel": channel,
                                "mcs_table": int(table_index),
                                "mcs": int(mcs),
                                "qm": qm,
                                "code_rate_x1024": r1024,
                                "cbs": int(cbs),
                                "sinr_db": round(snr, 3),
                            }
                        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sionna", type=Path, required=True, help="folder with bler_tables/")
    args = parser.parse_args()
    rows = extract(args.sionna)
    with (RESULTS / "sionna_nr_bler10.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} crossings")


if __name__ == "__main__":
    main()
