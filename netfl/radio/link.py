"""Link budget -> SINR -> rate per resource block, through ``channel_models``.

Per device and direction (``docs/radio.md``; Yoshida et al. 2020
Sec. IV-A):

``SNR_dB = P_tx - 10 log10(N_tx) + G_tx + G_rx - PL - X_sigma - N_RB``,
``N_RB = -174 + 10 log10(180e3) + NF + IoT`` (dBm)

per RB: the transmitter's power ``P_tx`` is spread over ``N_tx`` RBs and the power spectral
density is kept when a transfer gets more or fewer RBs (LTE uplink power control, TS 36.213
5.1.1, and fixed downlink energy per resource element), so the SNR of a transfer does not
depend on how many RBs it holds and its rate is linear in them. ``PL`` is the median path
loss, ``X_sigma`` the shadowing drawn once per device (the same in both directions:
shadowing is a property of the path), ``IoT`` the uplink interference over thermal. The
downlink SINR adds the other cells' base stations (median path loss, full load) when the
layout has interfering rings.

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

from channel_models.protocol import ChannelModel, OutOfRange
from channel_models.rate import RateMapping, db_to_linear, linear_to_db
from netfl.config.radio import RB_BANDWIDTH_HZ, FastFading

THERMAL_NOISE_DBM_HZ = -174.0
_QUANTILES = (np.arange(256) + 0.5) / 256


@dataclass(frozen=True)
class Budget:
    """The constant part of one direction's link budget."""

    tx_power_dbm: float
    tx_power_rbs: int
    tx_gain_dbi: float
    rx_gain_dbi: float
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
        return (
            THERMAL_NOISE_DBM_HZ
            + 10.0 * np.log10(self.rb_bandwidth_hz)
            + self.noise_figure_db
            + self.interference_db
        )

    def received_dbm_per_rb(self, loss_db: np.ndarray) -> np.ndarray:
        """Received power per RB over a link with total loss ``loss_db`` (PL + shadowing)."""
        return self.tx_dbm_per_rb + self.tx_gain_dbi + self.rx_gain_dbi - np.asarray(loss_db)

    def snr_db(self, loss_db: np.ndarray) -> np.ndarray:
        return self.received_dbm_per_rb(loss_db) - self.noise_dbm_per_rb


def sinr_db(signal_dbm: np.ndarray, noise_dbm: float, interference_dbm: np.ndarray) -> np.ndarray:
    """``S / (N + sum_j I_j)`` in dB; ``interference_dbm`` has one column per interferer."""
    interference = db_to_linear(interference_dbm)
    total = db_to_linear(noise_dbm) + (interference.sum(axis=-1) if interference.size else 0.0)
    return np.asarray(signal_dbm) - linear_to_db(total)


@dataclass(frozen=True)
class Geometry:
    """Large-scale channel of each link: drawn once, reported in ``clients.parquet``."""

    x_m: np.ndarray
    y_m: np.ndarray
    distance_m: np.ndarray
    los: np.ndarray
    pathloss_db: np.ndarray
    shadowing_db: np.ndarray


@dataclass(frozen=True)
class Propagation:
    """A path-loss model at one frequency and antenna heights, with its validity policy."""

    channel: ChannelModel
    frequency_hz: float
    bs_height_m: float
    ue_height_m: float
    out_of_range: OutOfRange = "refuse"
    shadowing: bool = True

    def median_pathloss_db(self, distance_m: np.ndarray, los: np.ndarray) -> np.ndarray:
        d = self.channel.check_distance(distance_m, self.out_of_range)
        return self.channel.pathloss_db(
            d, self.frequency_hz, self.bs_height_m, self.ue_height_m, los=los
        )

    def draw(
        self,
        x_m: np.ndarray,
        y_m: np.ndarray,
        los_rng: np.random.Generator,
        shadowing_rng: np.random.Generator,
    ) -> Geometry:
        """Draw each link's LOS condition and shadowing (one value per link, own streams)."""
        distance = np.hypot(x_m, y_m)
        los = los_rng.random(distance.size) < self.channel.los_probability(distance)
        pathloss = self.median_pathloss_db(distance, los)
        sigma = self.channel.shadowing_sigma_db(los)
        shadowing = shadowing_rng.standard_normal(distance.size) * sigma
        if not self.shadowing:
            shadowing = np.zeros_like(distance)
        return Geometry(x_m, y_m, distance, los, pathloss, shadowing)

    def interference_dbm(
        self, x_m: np.ndarray, y_m: np.ndarray, sites_xy: np.ndarray, budget: Budget
    ) -> np.ndarray:
        """Received power per RB from each interfering site (NLOS-or-mixed median loss)."""
        if len(sites_xy) == 0:
            return np.zeros((len(x_m), 0))
        dx = x_m[:, None] - sites_xy[None, :, 0]
        dy = y_m[:, None] - sites_xy[None, :, 1]
        distance = np.hypot(dx, dy).ravel()
        # Interferers are far: use the model's condition mix in expectation (LOS if more
        # likely than not); shadowing of interfering links is not modelled.
        los = self.channel.los_probability(distance) > 0.5
        loss = self.median_pathloss_db(distance, los).reshape(dx.shape)
        return budget.received_dbm_per_rb(loss)


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
