"""5G NR air-interface numbers: numerology, PRBs per bandwidth, CQI tables, TDD patterns.

numpy and the standard library only (no SimPy, no netfl). Sources:

- Numerology (TS 38.211 Sec. 4.2): subcarrier spacing ``SCS = 15 kHz * 2^mu``, 14 OFDM
  symbols per slot (normal cyclic prefix), slot duration ``1 ms / 2^mu``; 12 subcarriers
  per PRB (TS 38.211 Sec. 4.4.4.1).
- Maximum transmission bandwidth N_RB per channel bandwidth and SCS: TS 38.101-1 (FR1)
  Table 5.3.2-1 (Rel-17, with the 3, 35 and 45 MHz channels) for 15/30/60 kHz, and
  TS 38.101-2 (FR2) Table 5.3.2-1 for 120 kHz (mu = 3: 50/100/200/400 MHz). Cross-checked
  against the tables of OpenAirInterface ``nr_common.c`` and TS 38.521-2 Sec. 5.3.2.
- CQI tables: TS 38.214 Table 5.2.2.1-2 (``table1``, up to 64QAM) and Table 5.2.2.1-3
  (``table2``, up to 256QAM): modulation order Q_m, code rate x 1024 and spectral
  efficiency ``Q_m * R / 1024`` (rounded to 4 decimals in the TS).
- SINR -> CQI (:class:`NrCqi`): the highest CQI whose SINR threshold the SINR reaches.
  Thresholds are either given (dB, one per CQI 1..15) or derived for a target BLER from
  the normal approximation of the finite-blocklength coding rate on the complex AWGN
  channel (Polyanskiy, Poor and Verdú, "Channel coding rate in the finite blocklength
  regime", IEEE Trans. Inf. Theory 56(5), 2010, eq. (296)):
  ``R = log2(1 + s) - sqrt(V(s) / n) Q^-1(BLER)``, ``V(s) = s (s + 2) / (s + 1)^2 log2(e)^2``,
  solved for the SINR ``s`` at which the CQI's efficiency ``R`` is reached with ``n`` channel
  uses per code block, plus an implementation loss in dB per modulation: how far NR's LDPC
  code with bit-interleaved QAM sits from the bound at BLER 0.1 in Sionna SYS's link-level
  PUSCH/PDSCH BLER tables (:data:`SIONNA_LOSS_DB`, fitted in docs/radio.md "NR link
  level"; a single number applies to every modulation).
- Overhead (DMRS, PDCCH/PUCCH, SSB, CSI-RS ...): one fraction per direction. The defaults
  are the OH values of the peak data-rate formula of TS 38.306 Sec. 4.1.2: 0.14 (FR1 DL),
  0.08 (FR1 UL), 0.18 (FR2 DL), 0.10 (FR2 UL).
- TDD: a slot pattern of letters ``D`` (downlink), ``U`` (uplink) and ``S`` (special: DL
  symbols, guard, UL symbols, e.g. ``10:2:2``, TS 38.213 Sec. 11.1 / TS 38.331
  ``TDD-UL-DL-ConfigCommon``); :class:`TddPattern` gives each direction's time share, the
  period and the expected wait for a direction's next symbol.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property
from statistics import NormalDist

import numpy as np

SUBCARRIERS_PER_PRB = 12
SYMBOLS_PER_SLOT = 14
NUMEROLOGIES = (0, 1, 2, 3)


def scs_hz(mu: int) -> float:
    """Subcarrier spacing ``15 kHz * 2^mu`` (TS 38.211 Table 4.2-1)."""
    check_numerology(mu)
    return 15e3 * 2**mu


def slot_duration_s(mu: int) -> float:
    """Slot duration ``1 ms / 2^mu`` (14 symbols, normal CP; TS 38.211 Sec. 4.3.2)."""
    check_numerology(mu)
    return 1e-3 / 2**mu


def check_numerology(mu: int) -> None:
    if mu not in NUMEROLOGIES:
        raise ValueError(f"numerology mu = {mu} is out of range (0, 1, 2 or 3)")


#: N_RB per channel bandwidth (MHz) for each SCS (kHz). FR1: TS 38.101-1 Table 5.3.2-1;
#: 120 kHz: TS 38.101-2 Table 5.3.2-1 (FR2). A missing bandwidth is N/A for that SCS.
NR_PRB_TABLE: dict[int, dict[float, int]] = {
    15: {
        3: 15, 5: 25, 10: 52, 15: 79, 20: 106, 25: 133, 30: 160, 35: 188, 40: 216,
        45: 242, 50: 270,
    },
    30: {
        5: 11, 10: 24, 15: 38, 20: 51, 25: 65, 30: 78, 35: 92, 40: 106, 45: 119, 50: 133,
        60: 162, 70: 189, 80: 217, 90: 245, 100: 273,
    },
    60: {
        10: 11, 15: 18, 20: 24, 25: 31, 30: 38, 35: 44, 40: 51, 45: 58, 50: 65, 60: 79,
        70: 93, 80: 107, 90: 121, 100: 135,
    },
    120: {50: 32, 100: 66, 200: 132, 400: 264},
}  # fmt: skip


#: FR2 (TS 38.101-2 Table 5.3.2-1): N_RB per channel bandwidth (MHz) for 60 and 120 kHz.
NR_PRB_TABLE_FR2: dict[int, dict[float, int]] = {
    60: {50: 66, 100: 132, 200: 264},
    120: NR_PRB_TABLE[120],
}


def max_prbs(bandwidth_hz: float, mu: int, frequency_range: str = "FR1") -> int:
    """N_RB of a channel bandwidth at numerology mu in FR1 (mu 0-2; mu 3 reads the FR2
    table) or FR2 (mu 2-3); ValueError naming the allowed ones."""
    scs_khz = int(scs_hz(mu) / 1e3)
    fr2 = frequency_range == "FR2" or mu == 3
    if fr2 and scs_khz not in NR_PRB_TABLE_FR2:
        raise ValueError(f"{scs_khz} kHz SCS is not used for data in FR2 (60 or 120 kHz)")
    table = NR_PRB_TABLE_FR2[scs_khz] if fr2 else NR_PRB_TABLE[scs_khz]
    for mhz, n_rb in table.items():
        if abs(bandwidth_hz - mhz * 1e6) < 1.0:
            return n_rb
    allowed = ", ".join(f"{mhz:g}" for mhz in table)
    source = "TS 38.101-2" if fr2 else "TS 38.101-1"
    raise ValueError(
        f"{bandwidth_hz / 1e6:g} MHz is not an NR channel bandwidth at {scs_khz} kHz SCS"
        f" ({source} Table 5.3.2-1: {allowed} MHz)"
    )


def prb_bandwidth_hz(mu: int) -> float:
    """One PRB: 12 subcarriers x SCS."""
    return SUBCARRIERS_PER_PRB * scs_hz(mu)


#: TS 38.214 Table 5.2.2.1-2 (``table1``, 64QAM): (Q_m, code rate x 1024) for CQI 1..15.
CQI_TABLE1 = (
    (2, 78), (2, 120), (2, 193), (2, 308), (2, 449), (2, 602), (4, 378), (4, 490),
    (4, 616), (6, 466), (6, 567), (6, 666), (6, 772), (6, 873), (6, 948),
)  # fmt: skip
#: TS 38.214 Table 5.2.2.1-3 (``table2``, 256QAM): (Q_m, code rate x 1024) for CQI 1..15.
CQI_TABLE2 = (
    (2, 78), (2, 193), (2, 449), (4, 378), (4, 490), (4, 616), (6, 466), (6, 567),
    (6, 666), (6, 772), (6, 873), (8, 711), (8, 797), (8, 885), (8, 948),
)  # fmt: skip
#: Spectral efficiency (bit/s/Hz) of CQI 0..15 as printed in the TS tables (CQI 0 = out
#: of range).
CQI_EFFICIENCY = {
    "table1": np.array(
        [0.0, 0.1523, 0.2344, 0.3770, 0.6016, 0.8770, 1.1758, 1.4766, 1.9141, 2.4063,
         2.7305, 3.3223, 3.9023, 4.5234, 5.1152, 5.5547]
    ),
    "table2": np.array(
        [0.0, 0.1523, 0.3770, 0.8770, 1.4766, 1.9141, 2.4063, 2.7305, 3.3223, 3.9023,
         4.5234, 5.1152, 5.5547, 6.2266, 6.9141, 7.4063]
    ),
}  # fmt: skip

#: dB above the normal approximation (``n = 1000`` channel uses) at BLER 0.1 for QPSK,
#: 16QAM, 64QAM and 256QAM: the mean, per modulation, of the SINR at which Sionna SYS's
#: link-level BLER tables (LDPC, AWGN; PUSCH and PDSCH, MCS tables 1 and 2, code blocks of
#: 1000 bits) cross 0.1, less the bound at that code rate
#: (``benchmarks/ns3_crosscheck/results/sionna_nr_bler10.csv``, tests/test_nr_link_level.py).
SIONNA_LOSS_DB = (1.2, 1.7, 2.2, 2.5)

#: TS 38.306 Sec. 4.1.2 overhead OH per (frequency range, direction).
OVERHEAD_TS38306 = {
    ("FR1", "dl"): 0.14,
    ("FR1", "ul"): 0.08,
    ("FR2", "dl"): 0.18,
    ("FR2", "ul"): 0.10,
}


def frequency_range(carrier_frequency_hz: float) -> str:
    """FR1 below 7.125 GHz, FR2 from 24.25 GHz (TS 38.104 Table 5.1-1)."""
    return "FR1" if carrier_frequency_hz <= 7.125e9 else "FR2"


def awgn_rate_sinr(efficiency: np.ndarray, target_bler: float, block_symbols: int) -> np.ndarray:
    """Linear SINR at which ``log2(1+s) - sqrt(V(s)/n) Q^-1(BLER)`` reaches ``efficiency``.

    Polyanskiy-Poor-Verdú normal approximation, complex AWGN; bisection in dB (the rate
    grows with s), vectorised over the efficiencies.
    """
    q = NormalDist().inv_cdf(1.0 - target_bler)
    log2e = np.log2(np.e)
    target = np.asarray(efficiency, dtype=float)
    lo = np.full(target.shape, -30.0)
    hi = np.full(target.shape, 60.0)
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        s = 10.0 ** (mid / 10.0)
        dispersion = s * (s + 2.0) / (s + 1.0) ** 2 * log2e**2
        rate = np.log2(1.0 + s) - np.sqrt(dispersion / block_symbols) * q
        below = rate < target
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 10.0 ** (0.5 * (lo + hi) / 10.0)


@dataclass(frozen=True)
class NrCqi:
    """SINR -> CQI -> spectral efficiency through a TS 38.214 CQI table.

    ``sinr_thresholds_db`` (15 values, CQI 1..15, increasing) if given, else thresholds for
    ``target_bler`` with ``block_symbols`` channel uses per code block plus
    ``implementation_loss_db`` (one number, or one per QPSK, 16QAM, 64QAM, 256QAM; see the
    module docstring). Rates: ``bandwidth * efficiency``.
    """

    table: str = "table2"
    target_bler: float = 0.1
    block_symbols: int = 1000
    implementation_loss_db: float | tuple[float, ...] = SIONNA_LOSS_DB
    sinr_thresholds_db: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.table not in CQI_EFFICIENCY:
            raise ValueError(f"unknown CQI table {self.table!r} (table1 or table2)")
        if not 0 < self.target_bler < 1:
            raise ValueError(f"target_bler must be in (0, 1), got {self.target_bler}")
        if self.block_symbols < 1:
            raise ValueError(f"block_symbols must be positive, got {self.block_symbols}")
        loss = self.implementation_loss_db
        if isinstance(loss, tuple) and len(loss) != 4:
            raise ValueError("implementation_loss_db needs one value or four (QPSK..256QAM)")
        if self.sinr_thresholds_db is not None:
            t = self.sinr_thresholds_db
            if len(t) != 15 or any(b <= a for a, b in itertools.pairwise(t)):
                raise ValueError("sinr_thresholds_db needs 15 increasing values (CQI 1..15)")

    @cached_property
    def thresholds_db(self) -> np.ndarray:
        """SINR (dB) from which each CQI 1..15 is used (computed once: every rate lookup
        reads it, and the normal approximation's bisection costs about a millisecond)."""
        if self.sinr_thresholds_db is not None:
            return np.asarray(self.sinr_thresholds_db, dtype=float)
        linear = awgn_rate_sinr(
            CQI_EFFICIENCY[self.table][1:], self.target_bler, self.block_symbols
        )
        loss = self.implementation_loss_db
        if isinstance(loss, tuple):
            qm = np.array([q for q, _ in (CQI_TABLE1 if self.table == "table1" else CQI_TABLE2)])
            loss = np.asarray(loss)[qm // 2 - 1]
        return np.maximum.accumulate(10.0 * np.log10(linear) + loss)

    def cqi(self, sinr: np.ndarray) -> np.ndarray:
        """CQI 0..15 of each linear SINR."""
        with np.errstate(divide="ignore"):
            sinr_db = 10.0 * np.log10(np.asarray(sinr, dtype=float))
        return np.searchsorted(self.thresholds_db, sinr_db, side="right")

    def spectral_efficiency(self, sinr: np.ndarray) -> np.ndarray:
        return CQI_EFFICIENCY[self.table][self.cqi(sinr)]

    def rate_bps(self, sinr: np.ndarray, bandwidth_hz: float | np.ndarray) -> np.ndarray:
        return np.asarray(bandwidth_hz, dtype=float) * self.spectral_efficiency(sinr)


@dataclass(frozen=True)
class TddPattern:
    """A TDD slot pattern, e.g. ``DDDSU`` with the special slot split ``10:2:2``.

    ``slots`` holds letters D, S, U; ``special`` is (DL, guard, UL) symbols of an S slot,
    adding up to 14. One pattern period is ``len(slots)`` slots.
    """

    slots: str
    special: tuple[int, int, int] = (10, 2, 2)

    @classmethod
    def parse(cls, pattern: str, special: str = "10:2:2") -> TddPattern:
        """From strings; ValueError with a one-line reason."""
        return cls(pattern.strip().upper(), parse_special(special))

    def __post_init__(self) -> None:
        if not self.slots:
            raise ValueError("empty TDD pattern")
        bad = sorted(set(self.slots) - set("DSU"))
        if bad:
            raise ValueError(
                f"unknown slot letter {bad[0]!r} in TDD pattern {self.slots!r} (D, S or U)"
            )
        if len(self.special) != 3 or sum(self.special) != SYMBOLS_PER_SLOT or min(self.special) < 0:
            raise ValueError(
                f"special slot split {self.special} must be three non-negative symbol"
                f" counts adding up to {SYMBOLS_PER_SLOT}"
            )
        for direction in ("ul", "dl"):
            if self.symbols(direction) == 0:
                name = "uplink" if direction == "ul" else "downlink"
                raise ValueError(f"TDD pattern {self.slots!r} has no {name} symbol")

    def _mask(self, direction: str) -> np.ndarray:
        """One bool per symbol of the period: does ``direction`` transmit in it."""
        dl, guard, ul = self.special
        special = ["dl"] * dl + ["guard"] * guard + ["ul"] * ul
        per_slot = {"D": ["dl"] * SYMBOLS_PER_SLOT, "U": ["ul"] * SYMBOLS_PER_SLOT, "S": special}
        return np.array([s == direction for letter in self.slots for s in per_slot[letter]])

    def symbols(self, direction: str) -> int:
        return int(self._mask(direction).sum())

    def share(self, direction: str) -> float:
        """Fraction of the period's symbols in which ``direction`` ('ul'/'dl') transmits."""
        return self.symbols(direction) / (len(self.slots) * SYMBOLS_PER_SLOT)

    def period_s(self, mu: int) -> float:
        return len(self.slots) * slot_duration_s(mu)

    def expected_wait_s(self, direction: str, mu: int) -> float:
        """Mean time from a uniformly random instant to the next symbol of ``direction``.

        Each idle gap of length g (symbols, the pattern repeats) contributes g^2/2 over the
        period: ``sum(g^2) / (2 * period)``, in seconds.
        """
        mask = self._mask(direction)
        symbol_s = slot_duration_s(mu) / SYMBOLS_PER_SLOT
        # Rotate so the period starts on a transmitting symbol; then gaps are runs of False.
        start = int(np.argmax(mask))
        rotated = np.roll(mask, -start)
        gaps, run = [], 0
        for on in rotated:
            if on:
                if run:
                    gaps.append(run)
                run = 0
            else:
                run += 1
        if run:
            gaps.append(run)
        total = sum(g * g for g in gaps) / 2.0
        return total / len(mask) * symbol_s


def parse_special(split: str) -> tuple[int, int, int]:
    """``"10:2:2"`` -> (10, 2, 2) DL:guard:UL symbols of the special slot."""
    parts = split.split(":")
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 3:
        raise ValueError(f"special slot split {split!r} must be DL:guard:UL symbols, e.g. 10:2:2")
    return values[0], values[1], values[2]
