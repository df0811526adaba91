"""Large-scale propagation of every device to every cell, as devices x cells matrices.

For a layout (:mod:`netfl.radio.layout`), devices with positions and heights, a 3GPP path-
loss model (:mod:`channel_models.tr38901`) and a sector antenna
(:mod:`channel_models.antenna`), :func:`link_gains` draws each link's LOS state and
shadowing and returns the coupling gain of every (device, cell) pair:

    coupling gain = G_BS(zenith, azimuth) + G_UE - PL(d2D, d3D, LOS) - SF - O2I loss

with G_UE = 0 dBi (omni). Each device is served by the cell of the strongest coupling gain
(path loss, shadowing and antenna gain: handover margin 0 dB). The downlink geometry is the
wideband SINR without fast fading when every cell transmits at full power (the full-buffer
assumption of the 3GPP calibrations): serving power / (sum of the other cells' + noise).

Correlation choices (documented in docs/radio.md): a link's LOS state and shadowing are
drawn per (device, site) and shared by the site's sectors (they are co-located); they are
independent across sites and devices (no spatial correlation of shadowing: the 3GPP
large-scale calibration statistics do not depend on it). Under TR 38.901 indoor devices use
their outdoor 2D distance d2D-out = d2D - d2D-in for the LOS probability (Table 7.4.2-1);
under TR 36.873 the full d2D (its phase-1 reference is reproduced within 0.4 dB at the
median coupling loss that way, against 1.0 dB with d2D-out). The O2I loss applies to every
link of the device with the same indoor distance.

Every step is vectorised numpy over (devices, sites) or (devices, cells): a drop of 1,000
devices on 57 cells costs milliseconds (benchmarks/calibration.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from channel_models.antenna import OmniAntenna, SectorAntenna
from channel_models.protocol import ChannelModel, OutOfRange
from channel_models.tr38901 import (
    INDOOR_DISTANCE_MAX_M,
    O2I_SIGMA_DB,
    TR36873_O2I_SIGMA_DB,
    TR36873_WALL_LOSS_DB,
    ThreeGppModel,
    distance_3d_m,
    o2i_penetration_loss_db,
)
from netfl.radio.layout import Layout

O2IModel = Literal["tr36873", "low", "high", "mixed"]
THERMAL_NOISE_DBM_HZ = -174.0


@dataclass(frozen=True)
class Environment:
    """What the links share: model, carrier, BS height and antenna, O2I model.

    ``model`` is any :class:`channel_models.protocol.ChannelModel` (a registered
    ``radio.channel_model``); the TR 38.901 models also get the device heights for the LOS
    probability and the indoor devices' outdoor distance d2D-out.

    ``o2i="mixed"`` uses TR 38.901's high-loss model for a ``high_loss_fraction`` of the
    indoor devices and the low-loss model for the rest.
    """

    model: ChannelModel
    frequency_hz: float
    bs_height_m: float
    antenna: SectorAntenna | OmniAntenna
    o2i: O2IModel = "low"
    high_loss_fraction: float = 0.0


@dataclass(frozen=True)
class DeviceHeights:
    """Device heights and indoor state: ``height_m``, ``indoor`` and ``indoor_distance_m``."""

    height_m: np.ndarray
    indoor: np.ndarray
    indoor_distance_m: np.ndarray


def drop_heights(
    n: int,
    indoor_fraction: float,
    rng: np.random.Generator,
    floors: tuple[int, int] = (4, 8),
    outdoor_height_m: float = 1.5,
    tr36873_indoor_distance: bool = False,
) -> DeviceHeights:
    """Heights as in the calibrations (TR 36.873 Table 8.2-1, TR 38.901 Table 7.8-1): a
    fraction ``indoor_fraction`` of the devices is indoor, in a building of N_fl floors
    (uniform in ``floors``) on floor n_fl uniform in 1..N_fl, at 3 (n_fl - 1) + 1.5 m;
    outdoor devices at 1.5 m. Indoor distance d2D-in: the minimum of two uniform draws in
    [0, 25] m (TR 38.901 Table 7.4.3-2), or one uniform draw (TR 36.873)."""
    indoor = rng.random(n) < indoor_fraction
    building = rng.integers(floors[0], floors[1] + 1, n)
    floor = 1 + np.floor(rng.random(n) * building).astype(int)
    height = np.where(indoor, 3.0 * (floor - 1) + 1.5, outdoor_height_m)
    draws = rng.uniform(0.0, INDOOR_DISTANCE_MAX_M, (2, n))
    d_in = draws[0] if tr36873_indoor_distance else draws.min(axis=0)
    return DeviceHeights(height, indoor, np.where(indoor, d_in, 0.0))


@dataclass(frozen=True)
class LinkGains:
    """Coupling gains (dB) of every device to every cell, and each device's serving cell."""

    coupling_gain_db: np.ndarray  # (devices, cells)
    los: np.ndarray  # (devices, sites)
    distance_2d_m: np.ndarray  # (devices, sites)

    @property
    def serving_cell(self) -> np.ndarray:
        return np.argmax(self.coupling_gain_db, axis=1)

    @property
    def coupling_loss_db(self) -> np.ndarray:
        """Each device's coupling loss to its serving cell (positive dB)."""
        return -self.coupling_gain_db.max(axis=1)

    def geometry_db(
        self, tx_power_dbm: float, bandwidth_hz: float, noise_figure_db: float | None
    ) -> np.ndarray:
        """Downlink wideband SINR without fast fading, every cell at full power
        ``tx_power_dbm`` over ``bandwidth_hz``; ``noise_figure_db=None``: S/I only."""
        received_mw = 10.0 ** ((tx_power_dbm + self.coupling_gain_db) / 10.0)
        serving_mw = received_mw.max(axis=1)
        others_mw = received_mw.sum(axis=1) - serving_mw
        if noise_figure_db is not None:
            others_mw = others_mw + 10.0 ** (
                (THERMAL_NOISE_DBM_HZ + 10 * np.log10(bandwidth_hz) + noise_figure_db) / 10
            )
        return 10.0 * np.log10(serving_mw / others_mw)


def link_gains(
    layout: Layout,
    device_xy_m: np.ndarray,
    heights: DeviceHeights,
    environment: Environment,
    los_rng: np.random.Generator,
    shadowing_rng: np.random.Generator,
    out_of_range: OutOfRange = "refuse",
    shadowing: bool = True,
) -> LinkGains:
    """Draw every (device, site) link's LOS state and shadowing; return the gains.

    Distances outside the path-loss model's validity are refused (``OutOfValidityError``)
    or clipped, as ``out_of_range`` says; ``shadowing=False`` draws no shadow fading."""
    env, model = environment, environment.model
    offsets = layout.site_offsets_m(device_xy_m)  # (devices, sites, 2)
    d2d = model.check_distance(np.hypot(offsets[..., 0], offsets[..., 1]), out_of_range)
    h_ut = heights.height_m[:, None]
    d2d_out = d2d
    if isinstance(model, ThreeGppModel) and model.release == "tr38901":
        # Table 7.4.2-1: d2D-out for indoor devices
        d2d_out = np.maximum(d2d - heights.indoor_distance_m[:, None], 1e-3)
    if isinstance(model, ThreeGppModel):
        p_los = model.los_probability(d2d_out, np.broadcast_to(h_ut, d2d.shape))
    else:  # any ChannelModel (ITU-R M.2135: no height dependence)
        p_los = model.los_probability(d2d_out)
    los = los_rng.random(d2d.shape) < p_los
    pathloss = model.pathloss_db(
        d2d, env.frequency_hz, env.bs_height_m, _ue_heights(model, heights, d2d.shape), los=los
    )
    sigma = model.shadowing_sigma_db(los)
    o2i_db, sigma = _o2i(environment, heights, sigma, shadowing_rng)
    shadow_db = shadowing_rng.standard_normal(d2d.shape) * sigma
    if not shadowing:
        shadow_db = np.zeros_like(d2d)
    site_loss = pathloss + shadow_db + o2i_db[:, None]
    # Antenna gain towards each device, per cell (sectors share their site's link).
    cell_site = layout.cell_site
    d3d = distance_3d_m(d2d, env.bs_height_m, h_ut)
    zenith = np.degrees(np.arccos((env.bs_height_m - h_ut) / d3d))  # 90 = horizon
    zenith_deg = 180.0 - zenith  # from the BS, looking down is zenith > 90
    azimuth = np.degrees(np.arctan2(offsets[..., 1], offsets[..., 0]))
    relative_az = azimuth[:, cell_site] - layout.cell_boresight_deg[None, :]
    gain = env.antenna.gain_dbi(zenith_deg[:, cell_site], relative_az)
    coupling = gain - site_loss[:, cell_site]
    return LinkGains(coupling, los, d2d)


def _ue_heights(model: ChannelModel, heights: DeviceHeights, shape: tuple[int, ...]) -> Any:
    """The UE heights as the model takes them: a (devices, sites) array for the TR 38.901
    models, one height for the others (whose ``pathloss_db`` takes a float)."""
    if isinstance(model, ThreeGppModel):
        return np.broadcast_to(heights.height_m[:, None], shape)
    unique = np.unique(heights.height_m)
    if unique.size > 1:
        raise ValueError(
            f"{type(model).__name__} takes one device height, not {unique.size} (indoor"
            " devices on floors need a TR 38.901 model)"
        )
    return float(unique[0]) if unique.size else 1.5


def _o2i(
    environment: Environment,
    heights: DeviceHeights,
    sigma_db: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-device O2I loss (mean part) and the links' shadowing sigmas with O2I."""
    indoor = heights.indoor
    if environment.o2i == "tr36873":
        loss = np.where(indoor, TR36873_WALL_LOSS_DB + 0.5 * heights.indoor_distance_m, 0.0)
        return loss, np.where(indoor[:, None], TR36873_O2I_SIGMA_DB, sigma_db)
    high = np.zeros_like(indoor)
    if environment.o2i == "high":
        high = indoor.copy()
    elif environment.o2i == "mixed":
        high = indoor & (rng.random(indoor.size) < environment.high_loss_fraction)
    wall = np.where(
        high,
        o2i_penetration_loss_db("high", environment.frequency_hz),
        o2i_penetration_loss_db("low", environment.frequency_hz),
    )
    sigma_p = np.where(high, O2I_SIGMA_DB["high"], O2I_SIGMA_DB["low"])
    random_part = rng.standard_normal(indoor.size) * sigma_p
    loss = np.where(indoor, wall + 0.5 * heights.indoor_distance_m + random_part, 0.0)
    return loss, sigma_db
