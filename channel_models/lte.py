"""The standard LTE link abstraction: SINR -> MCS at a BLER target -> transport block -> rate.

numpy only. What an LTE cell delivers per resource block (RB) and 1 ms subframe
(TTI), in the steps a packet-level simulator (ns-3 LENA) takes per TTI:

1. **Resource elements.** A PRB carries 12 x 14 REs per subframe (normal cyclic prefix,
   TS 36.211 Sec. 6.2/5.2). Downlink: the control region (``dl_control_symbols`` OFDM
   symbols, 1-3, CFI of TS 36.211 Sec. 6.7) and the cell-specific reference signals of
   ``dl_crs_ports`` antenna ports in the data region (TS 36.211 Sec. 6.10.1: 8, 16 or 24 REs
   per PRB, of which those in the control symbols do not count twice) are not data. Uplink:
   2 of the 14 SC-FDMA symbols carry the PUSCH DMRS (TS 36.211 Sec. 5.5.2.1) and the last
   symbol of an SRS subframe the sounding reference signal (TS 36.211 Sec. 5.5.3), one
   subframe in ``ul_srs_period_ms``.
2. **Link adaptation at a BLER target.** A transport block of ``B`` bits (TBS + 24 CRC) is
   split into ``C`` code blocks (TS 36.212 Sec. 5.1.2: ``C = ceil(B / 6120)`` above 6144
   bits); each occupies ``n = N_RE / C`` REs. The SINR at which a code block of efficiency
   ``e = B / N_RE`` bits per RE fails with probability ``p = 1 - (1 - BLER)^(1/C)`` is the
   finite-blocklength normal approximation of the complex AWGN channel (Polyanskiy, Poor and
   Verdú 2010, eq. (296); :func:`channel_models.nr.awgn_rate_sinr`) plus an implementation
   loss per modulation (QPSK, 16QAM, 64QAM): how far LTE's turbo code with bit-interleaved
   QAM sits from that bound at BLER 0.1, fitted to the AWGN link-level curves of the
   Vienna LTE link-level simulator (Mehlführer et al. 2009) as tabulated in ns-3 LENA's MIESM
   error model (Mezzavilla et al. 2012); ``docs/radio.md`` ("LTE link abstraction") has the
   fit. The eNB grants, among the MCS that decode at the target (uplink: TS 36.213 Table
   8.6.1-1; downlink: Table 7.1.7.1-1), the one of the largest goodput (step 4): uplink
   from the SINR it measures; downlink from the device's CQI reports (TS 36.213 Sec. 7.2.3,
   Table 7.2.3-1), which outer-loop link adaptation corrects with the HARQ feedback until
   the BLER meets the target -- netfl takes the MCS it converges to, not the CQI table's
   15 steps. No MCS above a code rate of 0.930 is used (TS 36.213 Sec. 7.1.7 states it for
   the PDSCH; netfl applies it to both directions, where in the uplink it never binds: the
   top uplink code rate is about 0.88).
3. **Transport block size** ``TBS(I_TBS, N_PRB)`` from TS 36.213 Table 7.1.7.2.1-1
   (``data/ts36213_tbs.csv``), for ``N_PRB`` = the RBs a transfer holds alone.
4. **HARQ.** A block that fails is sent again on the same RBs, so the goodput is the TBS
   times ``1 - BLER(SINR)`` (the error probability of the MCS at that SINR, at most the
   target); the MCS of the largest goodput is chosen. The choice and its goodput are
   tabulated on a 0.01 dB SINR grid (``GRID_DB``), so a rate costs one lookup.
5. **Below MCS 0** (``power_rbs`` > 1, the uplink): a power-limited device concentrates
   its power on fewer RBs (TS 36.213 Sec. 5.1.1.1: ``P_PUSCH = min(P_CMAX, 10 log10 M +
   ...)``). The energy per bit is what counts there, so netfl's goodput per RB (of the
   allocation the power was spread over) falls in proportion to the SINR, down to the SINR
   at which the whole power on one RB reaches MCS 0's threshold; below, 0.
6. **Overheads above the PHY.** Uplink RBs at the band edges carry the PUCCH (TS 36.211
   Sec. 5.4), ``ul_pucch_rb_fraction`` of the band; every IP packet of
   ``packet_payload_bytes`` carries ``packet_header_bytes`` of IP, TCP/UDP, PDCP, RLC and MAC
   headers.

The rate of one RB is ``TBS / N_PRB`` per ms times those factors, so
:meth:`LteTbs.rate_bps` keeps netfl's rate-per-RB contract (linear in the RBs held).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from channel_models.nr import awgn_rate_sinr
from channel_models.rate import RateMapping

DIRECTIONS = ("uplink", "downlink")
SUBFRAME_S = 1e-3
RB_BANDWIDTH_HZ = 180e3
MAX_CODE_RATE = 0.930
CRC_BITS = 24
MAX_CODE_BLOCK_BITS = 6144
#: SINR grid (dB: from, to, step) the chosen MCS and goodput are tabulated on; below it
#: nothing decodes, above it the largest block always does.
GRID_DB = (-30.0, 60.0, 0.01)

#: TS 36.213 Table 7.1.7.1-1 (PDSCH): modulation order and TBS index of MCS 0..28.
DL_MCS_QM = np.array([2] * 10 + [4] * 7 + [6] * 12)
DL_MCS_ITBS = np.array([*range(0, 10), *range(9, 16), *range(15, 27)])
#: TS 36.213 Table 8.6.1-1 (PUSCH): modulation order and TBS index of MCS 0..28.
UL_MCS_QM = np.array([2] * 11 + [4] * 10 + [6] * 8)
UL_MCS_ITBS = np.array([*range(0, 11), *range(10, 20), *range(19, 27)])

#: Implementation loss (dB) over the normal approximation at BLER 0.1 for QPSK, 16QAM,
#: 64QAM: the Vienna LTE link-level AWGN curves (turbo code) as in ns-3 LENA's MI error
#: model, fitted in docs/radio.md ("LTE link abstraction").
VIENNA_LOSS_DB = (1.6, 2.0, 2.6)
#: IPv4 (20, RFC 791) + TCP (20, RFC 9293) + PDCP (2, TS 36.323 Sec. 6.2.3, 12-bit SN) + RLC
#: AM (2, TS 36.322 Sec. 6.2.1.4) + MAC subheader per packet (about 2: TS 36.321 Sec. 6.1.2
#: gives 3 bytes with the 15-bit length field a 1.5 kB SDU needs and 1 for a PDU's last).
HEADER_BYTES = 46
#: TCP payload of a 1500-byte Ethernet MTU.
PAYLOAD_BYTES = 1460
#: An upload's wait for its first uplink grant: half the 1 ms SR period (sr-ConfigIndex 157,
#: TS 36.213 Table 10.1.5-1), the eNB's SR-to-grant processing (4 subframes: the standard
#: leaves it to the implementation; assumed equal to the UE's grant-to-PUSCH budget) and
#: grant to PUSCH (4 subframes, FDD, TS 36.213 Sec. 8.0).
FIRST_GRANT_LATENCY_S = 0.5e-3 + 4e-3 + 4e-3


def _load_tbs() -> np.ndarray:
    path = Path(__file__).resolve().parent / "data" / "ts36213_tbs.csv"
    rows = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    table = np.array([[int(x) for x in row.split(",")] for row in rows], dtype=np.int64)
    if table.shape != (27, 110):
        raise ValueError(f"{path}: expected 27 x 110 transport block sizes, got {table.shape}")
    return table


#: TS 36.213 Table 7.1.7.2.1-1, ``TBS_TABLE[I_TBS, N_PRB - 1]`` in bits.
TBS_TABLE = _load_tbs()


def tbs_bits(itbs: np.ndarray | int, n_prb: int) -> np.ndarray:
    """Transport block size (bits) of TBS index ``itbs`` on ``n_prb`` PRBs.

    >>> int(tbs_bits(26, 50)), int(tbs_bits(0, 1))
    (36696, 16)
    """
    if not 1 <= n_prb <= 110:
        raise ValueError(f"n_prb must be 1..110, got {n_prb}")
    return TBS_TABLE[np.asarray(itbs), n_prb - 1]


def code_blocks(tb_bits: np.ndarray) -> np.ndarray:
    """Code blocks of a transport block (TS 36.212 Sec. 5.1.2), its 24 CRC bits added."""
    b = np.asarray(tb_bits, dtype=float) + CRC_BITS
    return np.where(b <= MAX_CODE_BLOCK_BITS, 1, np.ceil(b / (MAX_CODE_BLOCK_BITS - CRC_BITS)))


def data_res_per_prb(
    direction: str, control_symbols: int = 2, crs_ports: int = 2, srs_period_ms: int = 0
) -> float:
    """Data REs of one PRB in one subframe (the average over subframes for the SRS).

    >>> data_res_per_prb("downlink", 2, 2), data_res_per_prb("uplink")
    (132.0, 144.0)
    """
    if direction == "uplink":
        srs = 12.0 / srs_period_ms if srs_period_ms else 0.0
        return 12.0 * 12 - srs
    if not 1 <= control_symbols <= 3:
        raise ValueError(f"control_symbols must be 1..3, got {control_symbols}")
    # CRS per PRB and subframe in OFDM symbols 0, 4, 7, 11 (ports 0-1: 2 REs each per port)
    # and 1, 8 (ports 2-3), TS 36.211 Sec. 6.10.1.2.
    per_symbol = {1: {0: 2, 4: 2, 7: 2, 11: 2}, 2: {0: 4, 4: 4, 7: 4, 11: 4}}
    per_symbol[4] = {**per_symbol[2], 1: 4, 8: 4}
    if crs_ports not in per_symbol:
        raise ValueError(f"crs_ports must be 1, 2 or 4, got {crs_ports}")
    crs = sum(n for symbol, n in per_symbol[crs_ports].items() if symbol >= control_symbols)
    return 12.0 * (14 - control_symbols) - crs


def _loss_db(qm: np.ndarray, losses: tuple[float, float, float]) -> np.ndarray:
    return np.choose(np.asarray(qm) // 2 - 1, losses)


def sinr_threshold_db(
    efficiency: np.ndarray,
    qm: np.ndarray,
    code_block_res: np.ndarray,
    code_block_bler: np.ndarray,
    losses: tuple[float, float, float] = VIENNA_LOSS_DB,
) -> np.ndarray:
    """SINR (dB) at which a code block of ``efficiency`` bits per RE over ``code_block_res``
    REs fails with probability ``code_block_bler``: the normal approximation plus the
    modulation's implementation loss."""
    e = np.atleast_1d(np.asarray(efficiency, dtype=float))
    n = np.broadcast_to(np.asarray(code_block_res, dtype=float), e.shape)
    p = np.broadcast_to(np.asarray(code_block_bler, dtype=float), e.shape)
    out = np.empty_like(e)
    for key in set(zip(n.tolist(), p.tolist(), strict=True)):
        mask = (n == key[0]) & (p == key[1])
        out[mask] = 10 * np.log10(awgn_rate_sinr(e[mask], key[1], max(1, round(key[0]))))
    return out + _loss_db(np.broadcast_to(qm, e.shape), losses)


def normal_tail(x: np.ndarray) -> np.ndarray:
    """``Q(x) = P(N(0, 1) > x)``, numpy only: Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7)."""
    x = np.asarray(x, dtype=float)
    z = np.abs(x) / np.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    half_erfc = 0.5 * poly * np.exp(-z * z)
    return np.where(x >= 0, half_erfc, 1.0 - half_erfc)


def block_error(
    sinr_db: np.ndarray,
    efficiency: np.ndarray,
    code_block_res: np.ndarray,
    code_blocks_per_tb: np.ndarray,
    loss_db: np.ndarray,
) -> np.ndarray:
    """Transport-block error probability at ``sinr_db`` (normal approximation, loss applied)."""
    s = np.power(10.0, (np.asarray(sinr_db, dtype=float) - loss_db) / 10.0)
    log2e = np.log2(np.e)
    dispersion = s * (s + 2.0) / (s + 1.0) ** 2 * log2e**2
    with np.errstate(divide="ignore", invalid="ignore"):
        margin = (np.log2(1.0 + s) - efficiency) / np.sqrt(dispersion / code_block_res)
    block = normal_tail(np.nan_to_num(margin, nan=-np.inf))
    return 1.0 - (1.0 - block) ** code_blocks_per_tb


@dataclass(frozen=True)
class LteTbs(RateMapping):
    """SINR -> rate of one RB through MCS, TBS and the overheads of one direction.

    ``n_prb`` is the allocation the transport-block sizes are read for (a transfer's RBs
    when it is alone); ``power_rbs`` the RBs the transmit power is spread over, which a
    device below MCS 0 may concentrate on fewer (1: none). See the module docstring for
    every step and its source.

    >>> up = LteTbs("uplink", n_prb=50)
    >>> int(up.mcs(np.array([10 ** (10 / 10)]))[0])  # 10 dB
    19
    >>> round(float(up.rate_bps(np.array([1e4]), 180e3)[0] * 50 / 1e6), 1)  # 40 dB: MCS 28
    32.7
    """

    direction: str = "uplink"
    n_prb: int = 50
    target_bler: float = 0.1
    implementation_loss_db: tuple[float, float, float] = VIENNA_LOSS_DB
    dl_control_symbols: int = 2
    dl_crs_ports: int = 2
    ul_srs_period_ms: int = 10
    ul_pucch_rb_fraction: float = 0.08
    packet_payload_bytes: int = PAYLOAD_BYTES
    packet_header_bytes: int = HEADER_BYTES
    power_rbs: int = 1

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction must be uplink or downlink, got {self.direction!r}")
        if not 0 < self.target_bler < 1:
            raise ValueError(f"target_bler must be in (0, 1), got {self.target_bler}")
        if not 0 <= self.ul_pucch_rb_fraction < 1:
            raise ValueError("ul_pucch_rb_fraction must be in [0, 1)")
        if self.power_rbs < 1:
            raise ValueError(f"power_rbs must be positive, got {self.power_rbs}")
        if self.packet_payload_bytes <= 0 or self.packet_header_bytes < 0:
            raise ValueError("packet_payload_bytes > 0 and packet_header_bytes >= 0 required")
        data_res_per_prb(self.direction, self.dl_control_symbols, self.dl_crs_ports)
        tbs_bits(0, self.n_prb)

    def for_direction(self, direction: str, n_prb: int | None = None) -> LteTbs:
        """The same abstraction for another direction (and allocation)."""
        fields = {k: getattr(self, k) for k in self.__dataclass_fields__}
        fields.update(direction=direction, n_prb=n_prb or self.n_prb)
        return LteTbs(**fields)

    # -- the MCS table at this allocation ------------------------------------------------

    @cached_property
    def _mcs(self) -> dict[str, np.ndarray]:
        up = self.direction == "uplink"
        qm = UL_MCS_QM if up else DL_MCS_QM
        itbs = UL_MCS_ITBS if up else DL_MCS_ITBS
        res = self.n_prb * data_res_per_prb(
            self.direction, self.dl_control_symbols, self.dl_crs_ports, self.ul_srs_period_ms
        )
        tbs = tbs_bits(itbs, self.n_prb)
        blocks = code_blocks(tbs)
        efficiency = (tbs + CRC_BITS * np.where(blocks > 1, blocks + 1, 1)) / res
        usable = efficiency / qm <= MAX_CODE_RATE
        block_bler = 1.0 - (1.0 - self.target_bler) ** (1.0 / blocks)
        thresholds = sinr_threshold_db(
            efficiency, qm, res / blocks, block_bler, self.implementation_loss_db
        )
        return {
            "qm": qm,
            "tbs": tbs.astype(float),
            "blocks": blocks,
            "efficiency": efficiency,
            "res": np.full(len(qm), res),
            "usable": usable,
            "threshold_db": np.where(usable, thresholds, np.inf),
        }

    @cached_property
    def mcs_thresholds_db(self) -> np.ndarray:
        """SINR (dB) from which each MCS 0..28 decodes at the target BLER; inf for an MCS
        above a code rate of 0.930."""
        return self._mcs["threshold_db"]

    def _goodput_bits(self, sinr_db: np.ndarray) -> np.ndarray:
        """Expected bits per TTI of every MCS at each SINR, ``TBS (1 - BLER)``; 0 for an MCS
        that misses the target there. Shape ``sinr_db.shape + (29,)``."""
        table = self._mcs
        db = np.asarray(sinr_db, dtype=float)[..., None]
        bler = block_error(
            db,
            table["efficiency"],
            table["res"] / table["blocks"],
            table["blocks"],
            _loss_db(table["qm"], self.implementation_loss_db),
        )
        passing = self.mcs_thresholds_db <= db
        return np.where(passing, table["tbs"] * (1.0 - bler), 0.0)

    @property
    def _grid(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The chosen MCS and its goodput (bits per TTI) on a 0.01 dB SINR grid: lookups
        stay O(1) per SINR (a fading average evaluates 256 SINRs per device)."""
        return _tabulate(self)

    def _index(self, sinr: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            db = 10.0 * np.log10(np.asarray(sinr, dtype=float))
        lo, hi, step = GRID_DB
        return np.rint((np.clip(db, lo, hi) - lo) / step).astype(np.int64)

    def mcs(self, sinr: np.ndarray) -> np.ndarray:
        """The MCS (0..28) of the largest goodput ``TBS (1 - BLER)`` among those that decode
        at the target at each linear SINR (the lower index on a tie); -1 where none does.
        SINRs are rounded to the 0.01 dB grid of :attr:`_grid`."""
        return self._grid[1][self._index(sinr)]

    def spectral_efficiency(self, sinr: np.ndarray) -> np.ndarray:
        """Goodput per Hz of one RB: the chosen MCS's ``TBS (1 - BLER)`` per ms over
        ``n_prb`` x 180 kHz, times the PUCCH and header overheads."""
        bits = self._grid[2][self._index(sinr)]
        return bits / self.n_prb / SUBFRAME_S / RB_BANDWIDTH_HZ * self.overhead_factor

    @property
    def overhead_factor(self) -> float:
        """Share of the PHY goodput that is payload: headers, and the uplink PUCCH RBs."""
        headers = self.packet_payload_bytes / (self.packet_payload_bytes + self.packet_header_bytes)
        pucch = 1.0 - self.ul_pucch_rb_fraction if self.direction == "uplink" else 1.0
        return headers * pucch


@functools.lru_cache(maxsize=32)
def _tabulate(mapping: LteTbs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:attr:`LteTbs._grid`, shared by equal mappings (every scenario builds its own)."""
    db = np.arange(GRID_DB[0], GRID_DB[1] + GRID_DB[2] / 2, GRID_DB[2])
    goodput = mapping._goodput_bits(db)
    best = np.where(goodput.max(axis=-1) > 0, np.argmax(goodput, axis=-1), -1)
    bits = goodput.max(axis=-1)
    # Below MCS 0: the device puts its power on fewer RBs (power_rbs / k of them, k up to
    # power_rbs); the energy per bit is what counts there, so the goodput per RB of the
    # full allocation falls in proportion to the SINR (MCS 0 on the concentrated RBs).
    first = int(np.argmax(best >= 0))
    concentrated = (best < 0) & (db >= db[first] - 10 * np.log10(mapping.power_rbs))
    bits = np.where(concentrated, bits[first] * 10 ** ((db - db[first]) / 10), bits)
    best = np.where(concentrated, 0, best)
    return db, best, bits


LTE_TBS = LteTbs()
