"""The cells both simulators build: one description per case, read by both sides.

A :class:`Case` is everything the two simulators must agree on: the band, the powers and
noise figures, each device's path loss (the matrix loss model in ns-3, ``pathloss_db`` in
netfl: no geometry, no shadowing, no fading, so both see the same SINR), the scheduler,
the file and packet sizes and when each device starts. :data:`CASES` is the set the
harness runs and the CI test recomputes; ``results/cases.json`` holds the descriptions the
committed ns-3 results were produced from.

Power model (both sides): the device keeps a fixed power per RB, ``ue_power_rb_dbm``, whatever
its allocation -- TS 36.213 Sec. 5.1.1.1 open-loop power control with alpha = 0 and
``P0_PUSCH = ue_power_rb_dbm`` (netfl's ``tx_power_dbm`` over ``tx_power_rbs`` RBs); the
eNB spreads ``enb_power_dbm`` over all its RBs. So a device's SINR does not depend on how many
RBs it holds, on either side.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

THERMAL_NOISE_DBM_HZ = -174.0
RB_BANDWIDTH_HZ = 180e3
RESULTS = Path(__file__).resolve().parent / "results"
#: LENA's DL CQI -> spectral efficiency table (lte-amc.cc, from R1-081483).
SE_CQI = [
    0.0, 0.15, 0.23, 0.38, 0.6, 0.88, 1.18, 1.48, 1.91, 2.41, 2.73, 3.32, 3.9, 4.52, 5.12, 5.55,
]  # fmt: skip


@dataclass(frozen=True)
class Cell:
    """The band, powers and noise figures of one LTE FDD cell (both directions 10 MHz)."""

    n_rb: int = 50
    ue_power_rb_dbm: float = 6.0  # 23 dBm over 50 RBs (P0_PUSCH is an integer in LENA)
    enb_power_dbm: float = 41.0  # netfl's default downlink power, over all RBs
    ue_noise_figure_db: float = 7.0  # netfl's default device noise figure
    enb_noise_figure_db: float = 5.0  # netfl's default BS noise figure (also LENA's)

    def noise_rb_dbm(self, direction: str) -> float:
        nf = self.enb_noise_figure_db if direction == "uplink" else self.ue_noise_figure_db
        return THERMAL_NOISE_DBM_HZ + 10 * math.log10(RB_BANDWIDTH_HZ) + nf

    def tx_power_rb_dbm(self, direction: str) -> float:
        if direction == "uplink":
            return self.ue_power_rb_dbm
        return self.enb_power_dbm - 10 * math.log10(self.n_rb)

    def snr_db(self, direction: str, pathloss_db: float) -> float:
        return self.tx_power_rb_dbm(direction) - pathloss_db - self.noise_rb_dbm(direction)

    def pathloss_for_snr_db(self, direction: str, snr_db: float) -> float:
        return self.tx_power_rb_dbm(direction) - snr_db - self.noise_rb_dbm(direction)


@dataclass(frozen=True)
class Case:
    """One transfer scenario: devices with their path loss and start time, one direction."""

    name: str
    direction: str  # "uplink" or "downlink"
    pathloss_db: tuple[float, ...]
    start_s: tuple[float, ...]
    scheduler: str = "rr"  # rr (round robin: netfl's `equal`) or pf (proportional fair)
    file_bytes: int = 1_000_000
    packet_bytes: int = 1000  # UDP payload per packet
    cell: Cell = field(default_factory=Cell)

    @property
    def n_devices(self) -> int:
        return len(self.pathloss_db)

    def snr_db(self) -> list[float]:
        return [self.cell.snr_db(self.direction, pl) for pl in self.pathloss_db]

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Case:
        data = dict(data)
        data["cell"] = Cell(**data["cell"])
        data["pathloss_db"] = tuple(data["pathloss_db"])
        data["start_s"] = tuple(data["start_s"])
        return cls(**data)


def _spread(direction: str, snrs_db: list[float], cell: Cell | None = None) -> tuple[float, ...]:
    cell = cell or Cell()
    return tuple(round(cell.pathloss_for_snr_db(direction, s), 2) for s in snrs_db)


#: SINRs of the single-device runs: 0 to 30 dB, off the CQI boundaries.
SINGLE_SNR_DB = [-1.3, 0.7, 2.9, 5.2, 7.4, 9.6, 12.3, 14.8, 17.1, 19.7, 22.4, 25.3, 28.6]
#: Five devices: cell edge to cell centre.
FIVE_SNR_DB = [1.1, 6.3, 12.6, 18.8, 26.4]
#: Twenty devices, evenly over 0-30 dB.
TWENTY_SNR_DB = [round(0.4 + 1.55 * i, 2) for i in range(20)]


def lone_transfer_bound_s(snr_db: float, file_bytes: int, n_rb: int = 50) -> float:
    """A generous bound on one device's transfer time alone in LENA as shipped (its most
    conservative link adaptation: a 7.4 dB Shannon gap, CQI -> MCS, TBS), used to space
    the one-at-a-time transfers so that they never overlap (checked on the results)."""
    from channel_models.lte import tbs_bits

    se_cqi = SE_CQI[1:]
    gap = -math.log(5 * 5e-5) / 1.5
    se = math.log2(1 + 10 ** (snr_db / 10) / gap)
    cqi = sum(1 for e in se_cqi if e < se)
    mcs = 2 * cqi - 2  # LENA's CQI -> MCS map lands on the even MCS
    if mcs < 0:
        return 60.0
    itbs = mcs if mcs <= 10 else mcs - 1 if mcs <= 21 else mcs - 2  # TS 36.213 Table 8.6.1-1
    rate_bps = float(tbs_bits(itbs, n_rb)) / 1e-3
    return 2.0 * 8 * file_bytes / rate_bps + 0.5


def single_cell_cases() -> list[Case]:
    """1 device at a time (one run, each starting once the previous is surely done), 5 and
    20 starting together, 5 staggered by 0.3 s, in both directions."""
    cases = []
    starts = [0.0]
    for snr in SINGLE_SNR_DB[:-1]:
        starts.append(round(starts[-1] + lone_transfer_bound_s(snr, 1_000_000), 1))
    for direction in ("uplink", "downlink"):
        short = "ul" if direction == "uplink" else "dl"
        cases.append(
            Case(f"{short}_1", direction, _spread(direction, SINGLE_SNR_DB), tuple(starts))
        )
        cases.append(Case(f"{short}_5", direction, _spread(direction, FIVE_SNR_DB), (0.0,) * 5))
        cases.append(
            Case(
                f"{short}_5_staggered",
                direction,
                _spread(direction, FIVE_SNR_DB),
                tuple(0.3 * i for i in range(5)),
            )
        )
        cases.append(Case(f"{short}_20", direction, _spread(direction, TWENTY_SNR_DB), (0.0,) * 20))
    return cases


CASES: list[Case] = single_cell_cases()


def save_cases(cases: list[Case], path: Path) -> None:
    path.write_text(json.dumps([c.to_json() for c in cases], indent=1) + "\n")


def load_cases(path: Path) -> list[Case]:
    return [Case.from_json(d) for d in json.loads(path.read_text())]
