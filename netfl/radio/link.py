"""Link budget -> SINR -> rate per resource block, through ``channel_models``.

Per link and direction (``docs/radio.md``; Yoshida et al. 2020 Sec. IV-A):

``S_dB = P_tx - 10 log10(N_tx) + CG``, ``N_RB = -174 + 10 log10(B_RB) + NF + IoT`` (dBm),
``SINR = S / (N_RB + I)``

per RB: the transmitter's power ``P_tx`` is spread over ``N_tx`` RBs and the power spectral
density is kept when a transfer gets more or fewer RBs (LTE uplink power control, TS 36.213
5.1.1, and fixed downlink energy per resource element), so the SINR of a transfer does not
depend on how many RBs it holds and its rate is linear in them. ``CG`` is the coupling gain
(antenna gains minus path loss, shadowing and O2I loss, :mod:`netfl.radio.propagation`),
``IoT`` a constant interference over thermal (``radio.ul_interference_db``), ``I`` the other
cells' interference as the transfers in flight make it (:mod:`netfl.radio.cells`).

Fast fading (optional): ``rayleigh`` averages the rate over a Rayleigh-faded SNR
(``SNR * X``, ``X ~ Exp(1)``) -- the ergodic rate of a transfer that spans many coherence
times; under proportional fair a flow is served when its fade is the best of the ``m``
competing flows, so it gets ``E[f(SNR M_m)]`` with ``M_m`` the maximum of ``m`` Exp(1)
(the multi-user diversity of Borst, IEEE/ACM ToN 2005, per flow). ``rayleigh_block`` draws
one fade per transfer instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from channel_models.lte import LteTbs
from channel_models.nr import NrCqi
from channel_models.rate import LteCqi, RateMapping, Shannon, ShannonWithLoss, db_to_linear
from netfl.config.radio import RB_BANDWIDTH_HZ, FastFading, LteRadioConfig

THERMAL_NOISE_DBM_HZ = -174.0
_QUANTILES = (np.arange(256) + 0.5) / 256
#: The largest LTE carrier's PRBs (20 MHz; TS 36.213 Table 7.1.7.2.1-1 ends at 110).
MAX_LTE_PRB = 110


@dataclass(frozen=True)
class Budget:
    """One direction's per-RB transmit power and noise.

    The antenna gains live in the coupling gains (:mod:`netfl.radio.propagation`), so a
    link's received power per RB is ``tx_dbm_per_rb + coupling_gain_db``.
    """

    tx_power_dbm: float
    tx_power_rbs: int
    noise_figure_db: float
    interference_db: float = 0.0
    rb_bandwidth_hz: float = RB_BANDWIDTH_HZ

    def __post_init__(self) -> None:
        if self.tx_power_rbs <= 0:
            raise ValueError("tx_power_rbs must be positive")

    @property
    def tx_dbm_per_rb(self) -> float:
        return self.tx_power_dbm - 10.0 * np.log10(self.tx_power_rbs)

    @property
    def noise_dbm_per_rb(self) -> float:
        """Thermal noise in one RB plus the noise figure and any constant interference
        over thermal (``radio.ul_interference_db``)."""
        return (
            THERMAL_NOISE_DBM_HZ
            + 10.0 * np.log10(self.rb_bandwidth_hz)
            + self.noise_figure_db
            + self.interference_db
        )


def sinr_db(
    signal_dbm: np.ndarray, noise_dbm: float | np.ndarray, interference_mw: np.ndarray | float
) -> np.ndarray:
    """``S / (N + I)`` in dB, as ``S/N - 10 log10(1 + I/N)``: exactly the SNR when ``I`` is 0
    (an isolated cell's links are not moved by rounding)."""
    noise_mw = np.power(10.0, np.asarray(noise_dbm, dtype=float) / 10.0)
    return (np.asarray(signal_dbm) - noise_dbm) - 10.0 * np.log10(
        1.0 + np.asarray(interference_mw) / noise_mw
    )


def fading_average(
    mapping: RateMapping,
    sinr: np.ndarray,
    competing: int = 1,
    rb_bandwidth_hz: float = RB_BANDWIDTH_HZ,
) -> np.ndarray:
    """``E[f(SINR * M)]`` per RB, ``M`` the max of ``competing`` Exp(1) (Rayleigh power).

    A midpoint rule over the quantiles of ``M`` (CDF ``(1 - e^-x)^m``), vectorised.
    """
    quantile_x = -np.log1p(-(_QUANTILES ** (1.0 / competing)))
    faded = np.asarray(sinr, dtype=float)[..., None] * quantile_x
    return mapping.rate_bps(faded, rb_bandwidth_hz).mean(axis=-1)


def rate_per_rb_bps(
    mapping: RateMapping,
    sinr_db_values: np.ndarray,
    fast_fading: FastFading,
    rb_bandwidth_hz: float = RB_BANDWIDTH_HZ,
) -> np.ndarray:
    """Each link's nominal rate on one RB: the median channel, or its Rayleigh average."""
    sinr = db_to_linear(sinr_db_values)
    if fast_fading == "rayleigh":
        return fading_average(mapping, sinr, rb_bandwidth_hz=rb_bandwidth_hz)
    return mapping.rate_bps(sinr, rb_bandwidth_hz)


def diversity_gain(mapping: RateMapping, sinr: float) -> Callable[[int], float]:
    """``m -> E[f(SINR M_m)] / E[f(SINR X)]``: proportional fair's gain with ``m`` competing."""

    @functools.lru_cache(maxsize=64)
    def gain(competing: int) -> float:
        if competing <= 1:
            return 1.0
        base = float(fading_average(mapping, np.array(sinr)))
        if base <= 0:
            return 1.0
        return float(fading_average(mapping, np.array(sinr), competing)) / base

    return gain


def rate_mapping(config: LteRadioConfig, direction: str) -> RateMapping:
    """The SINR -> rate mapping of ``radio.rate_mapping`` for one direction (``"ul"`` or
    ``"dl"``). Only ``lte_tbs`` differs between them (:mod:`channel_models.lte`): the MCS
    tables and overheads of each direction, the RBs its transport blocks span (the flow's RB
    cap) and, uplink, the RBs the device's power is spread over (below MCS 0 it concentrates
    it on fewer)."""
    m = config.rate_mapping
    if m.kind == "lte_tbs":
        link = config.uplink if direction == "ul" else config.downlink
        return LteTbs(
            "uplink" if direction == "ul" else "downlink",
            min(link.flow_rb_cap, MAX_LTE_PRB),
            m.target_bler,
            m.implementation_loss_db,
            m.dl_control_symbols,
            m.dl_crs_ports,
            m.ul_srs_period_ms,
            m.ul_pucch_rb_fraction,
            m.packet_payload_bytes,
            m.packet_header_bytes,
            link.power_rbs if direction == "ul" else 1,
        )
    if m.kind == "shannon_with_loss":
        return ShannonWithLoss(m.loss_db, m.max_spectral_efficiency)
    if m.kind == "lte_cqi":
        return LteCqi(m.target_ber)
    if m.kind == "nr_cqi":
        thresholds = tuple(m.sinr_thresholds_db) if m.sinr_thresholds_db is not None else None
        return NrCqi(m.table, m.target_bler, m.block_symbols, m.implementation_loss_db, thresholds)
    return Shannon()
