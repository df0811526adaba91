"""The cells both simulators build: one description per case, read by both sides.

A :class:`Case` is everything the two simulators must agree on: the band, the powers and
noise figures, each device's path loss (the matrix loss model in ns-3, ``pathloss_db`` in
netfl: no geometry, no shadowing, no fading, so both see the same SINR), the scheduler,
the file and packet sizes and when each device starts. :data:`CASES` is the set the
harness runs and the CI test recomputes; ``results/cases.json`` holds the descriptions the
committed ns-3 results were produced from.

Power model (both sides): the device keeps a fixed power per RB, ``ue_power_rb_dbm``, whatever
its allocation -- TS 36.213 Sec. 5.1.1.1 open-loop power control with alpha = 0 and
``P0_PUSCH = ue_power_rb_dbm`` (netfl's ``uplink_power_control.mode: fixed_per_rb``); the
eNB spreads ``enb_power_dbm`` over all its RBs. So a device's SINR does not depend on how many
RBs it holds, on either side. The power-control cases (``ul_pc_*``, issue 33) set
``ue_p0_dbm``: the device transmits ``min(P_CMAX, P0 + 10 log10(M) + alpha PL)`` on the ``M``
RBs it is granted (LENA's ``LteUePowerControl``, open loop; netfl's ``mode: open_loop``), so
a device beyond its power limit sees its SINR per RB fall with its allocation; their devices
sit at distances from the eNB, at the ITU-R M.2135-1 UMi NLOS path loss at 2 GHz.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

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
    #: Open-loop power control (None: the fixed ``ue_power_rb_dbm``): P0_PUSCH (an integer
    #: dBm in LENA), alpha and P_CMAX.
    ue_p0_dbm: int | None = None
    ue_alpha: float = 1.0
    ue_p_cmax_dbm: float = 23.0

    def noise_rb_dbm(self, direction: str) -> float:
        nf = self.enb_noise_figure_db if direction == "uplink" else self.ue_noise_figure_db
        return THERMAL_NOISE_DBM_HZ + 10 * math.log10(RB_BANDWIDTH_HZ) + nf

    def tx_power_rb_dbm(self, direction: str, pathloss_db: float = 0.0, rbs: int = 1) -> float:
        """Power per RB: the eNB's over all RBs; a device's fixed one, or under power
        control ``min(P0 + alpha PL, P_CMAX - 10 log10(rbs))`` on ``rbs`` RBs."""
        if direction == "downlink":
            return self.enb_power_dbm - 10 * math.log10(self.n_rb)
        if self.ue_p0_dbm is None:
            return self.ue_power_rb_dbm
        return min(
            self.ue_p0_dbm + self.ue_alpha * pathloss_db,
            self.ue_p_cmax_dbm - 10 * math.log10(rbs),
        )

    def snr_db(self, direction: str, pathloss_db: float, rbs: int = 1) -> float:
        power = self.tx_power_rb_dbm(direction, pathloss_db, rbs)
        return power - pathloss_db - self.noise_rb_dbm(direction)

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

    @property
    def rbs_each(self) -> int:
        """RBs each device holds while it transfers: the band over the devices that start
        together (one at a time: all of it), at least 3 (LENA's uplink minimum)."""
        active = max(1, sum(1 for s in self.start_s if s == self.start_s[0]))
        return max(3, self.cell.n_rb // active)

    def snr_db(self) -> list[float]:
        """Each device's SINR per RB on the RBs it holds (:attr:`rbs_each`)."""
        return [self.cell.snr_db(self.direction, pl, self.rbs_each) for pl in self.pathloss_db]

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


#: Power control (issue 33): P0 -106 dBm, alpha 1 (netfl's 3GPP default), P_CMAX 23 dBm.
PC_CELL = Cell(ue_p0_dbm=-106, ue_alpha=1.0, ue_p_cmax_dbm=23.0)
#: One device at a time: near the eNB (below its power limit), then at 23 dBm over the band.
PC_SINGLE_M = [50.0, 200.0, 300.0]
#: Five devices on 10 RBs each: four of them beyond their power limit at 10 RBs.
PC_FIVE_M = [100.0, 300.0, 350.0, 400.0, 450.0]
#: Twenty devices on 20 MHz, 5 RBs each (above LENA's minimum of 3 uplink RBs a device, so
#: all twenty transmit in every TTI, as netfl's fluid shares assume): from 100 to 575 m.
PC_TWENTY_M = [100.0 + 25.0 * i for i in range(20)]


def umi_pathloss_db(distance_m: list[float]) -> tuple[float, ...]:
    """ITU-R M.2135-1 UMi NLOS (hexagonal) at 2 GHz, rounded to 0.01 dB."""
    from channel_models.itu_m2135 import UMI_NLOS

    loss = UMI_NLOS.pathloss_db(np.asarray(distance_m), 2.0e9, 10.0, 1.5)  # no height term
    return tuple(round(float(x), 2) for x in loss)


def power_control_cases() -> list[Case]:
    """The uplink with LENA's open-loop power control: one device at a time at 50, 200 and
    300 m, five and twenty starting together."""
    single = umi_pathloss_db(PC_SINGLE_M)
    starts = [0.0]
    for pl in single[:-1]:
        snr = PC_CELL.snr_db("uplink", pl, PC_CELL.n_rb)
        starts.append(round(starts[-1] + lone_transfer_bound_s(snr, 1_000_000), 1))
    wide = Cell(n_rb=100, ue_p0_dbm=-106, ue_alpha=1.0, ue_p_cmax_dbm=23.0)
    return [
        Case("ul_pc_1", "uplink", single, tuple(starts), cell=PC_CELL),
        Case("ul_pc_5", "uplink", umi_pathloss_db(PC_FIVE_M), (0.0,) * 5, cell=PC_CELL),
        Case("ul_pc_20", "uplink", umi_pathloss_db(PC_TWENTY_M), (0.0,) * 20, cell=wide),
    ]


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


CASES: list[Case] = single_cell_cases() + power_control_cases()


def save_cases(cases: list[Case], path: Path) -> None:
    path.write_text(json.dumps([c.to_json() for c in cases], indent=1) + "\n")


def load_cases(path: Path) -> list[Case]:
    return [Case.from_json(d) for d in json.loads(path.read_text())]
