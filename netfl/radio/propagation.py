"""Large-scale propagation of every device to every cell, as devices x cells matrices.

For a layout (:mod:`netfl.map.layout`), devices with positions and heights, a path-loss
model (any :class:`channel_models.protocol.ChannelModel`: ITU-R M.2135, TR 36.873, TR
38.901) and a base-station antenna (:mod:`channel_models.antenna`), :func:`link_gains`
draws each link's LOS state and shadowing and returns the coupling gain of every
(device, cell) pair:

    coupling gain = G_BS(zenith, azimuth) + G_UE - PL(d2D, d3D, LOS) - SF - O2I loss

with an omni device antenna of ``ue_gain_dbi``. The serving cell is the strongest
(:func:`netfl.radio.association.strongest_cell`). The downlink geometry is the wideband
SINR without fast fading when every cell transmits at full power (the full-buffer
assumption of the 3GPP calibrations): serving power / (sum of the other cells' + noise).

Random streams: the LOS state of each (device, site) link from ``los_rng``, its shadowing
from ``shadowing_rng`` and each indoor device's O2I loss from ``o2i_rng``; each stream is
read in device order, so the draws do not depend on how the devices are blocked.

Correlation choices (documented in docs/radio.md): a link's LOS state and shadowing are
drawn per (device, site) and shared by the site's sectors (they are co-located). The LOS
states are independent across sites; the shadowing of two sites is correlated
``site_correlation`` (TR 36.814 Table A.2.1.1-2: 0.5) through a common part per device and
LOS state, z_ij = sqrt(r) C_i,los(ij) + sqrt(1 - r) E_ij, its draws taken from the shadowing
stream after the links' (none with r = 0 or one site); devices are independent (no spatial
correlation of shadowing in a drop: the 3GPP large-scale calibration statistics do not
depend on it). Under TR 38.901 indoor devices use
their outdoor 2D distance d2D-out = d2D - d2D-in for the LOS probability (Table 7.4.2-1);
under TR 36.873 the full d2D (its phase-1 reference is reproduced within 0.4 dB at the
median coupling loss that way, against 1.0 dB with d2D-out). The O2I loss applies to every
link of the device with the same indoor distance.

Every step is vectorised numpy over (devices, sites) or (devices, cells), in blocks of
devices so that the temporaries stay small whatever the population: a drop of 1,000
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
from netfl.map.layout import Layout

O2IModel = Literal["tr36873", "low", "high", "mixed"]
THERMAL_NOISE_DBM_HZ = -174.0
#: Devices per block: bounds the (block, cells) temporaries to a few MB each.
BLOCK_DEVICES = 16384


@dataclass(frozen=True)
class Environment:
    """What the links share: model, carrier, BS height and antennas, O2I model, validity.

    ``model`` is any :class:`channel_models.protocol.ChannelModel` (a registered
    ``radio.channel_model``); the TR 38.901 models also get the device heights for the LOS
    probability and the indoor devices' outdoor distance d2D-out.

    ``o2i="mixed"`` uses TR 38.901's high-loss model for a ``high_loss_fraction`` of the
    indoor devices and the low-loss model for the rest; ``"tr36873"`` the 20 dB wall of
    TR 36.873 with its 7 dB indoor shadowing. ``site_correlation`` is the correlation of a
    device's shadowing between two sites (:func:`link_gains`).
    """

    model: ChannelModel
    frequency_hz: float
    bs_height_m: float
    antenna: SectorAntenna | OmniAntenna
    o2i: O2IModel = "low"
    high_loss_fraction: float = 0.0
    ue_gain_dbi: float = 0.0
    out_of_range: OutOfRange = "refuse"
    shadowing: bool = True
    site_correlation: float = 0.0


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
    outdoor devices at ``outdoor_height_m``. Indoor distance d2D-in: the minimum of two
    uniform draws in [0, 25] m (TR 38.901 Table 7.4.3-2), or one uniform draw (TR 36.873)."""
    indoor = rng.random(n) < indoor_fraction
    building = rng.integers(floors[0], floors[1] + 1, n)
    floor = 1 + np.floor(rng.random(n) * building).astype(int)
    height = np.where(indoor, 3.0 * (floor - 1) + 1.5, outdoor_height_m)
    draws = rng.uniform(0.0, INDOOR_DISTANCE_MAX_M, (2, n))
    d_in = draws[0] if tr36873_indoor_distance else draws.min(axis=0)
    return DeviceHeights(height, indoor, np.where(indoor, d_in, 0.0))


@dataclass(frozen=True)
class LargeScaleState:
    """The drop's per-site draws: each (device, site) link's LOS uniform (LOS where it is
    below the link's LOS probability) and shadowing (dB), and each device's O2I loss."""

    los_uniform: np.ndarray  # (devices, sites)
    shadowing_db: np.ndarray  # (devices, sites)
    o2i_db: np.ndarray  # (devices,)
    shadowing_common_z: np.ndarray | None = None  # (devices, 2) [LOS, NLOS], when correlated


@dataclass(frozen=True)
class LinkGains:
    """Coupling gains (dB) of every device to every cell, and each device's link to the
    site of its strongest cell (the columns of ``clients.parquet``)."""

    coupling_gain_db: np.ndarray  # (devices, cells)
    serving_cell: np.ndarray  # (devices,) the strongest cell
    los: np.ndarray  # (devices,) of the serving site's link
    distance_2d_m: np.ndarray  # (devices,) to the serving site (its nearest image), unclipped
    pathloss_db: np.ndarray  # (devices,) median path loss to the serving site
    shadowing_db: np.ndarray  # (devices,) shadow fading of the serving site's link
    o2i_loss_db: np.ndarray  # (devices,) building penetration loss (0 outdoors)
    state: LargeScaleState | None = None  # the per-site draws, when kept

    @property
    def coupling_loss_db(self) -> np.ndarray:
        """Each device's coupling loss to its serving cell (positive dB)."""
        rows = np.arange(len(self.serving_cell))
        return -self.coupling_gain_db[rows, self.serving_cell]

    def geometry_db(
        self, tx_power_dbm: float, bandwidth_hz: float, noise_figure_db: float | None
    ) -> np.ndarray:
        """Downlink wideband SINR without fast fading, every cell at full power
        ``tx_power_dbm`` over ``bandwidth_hz``; ``noise_figure_db=None``: S/I only."""
        received_mw = 10.0 ** ((tx_power_dbm + self.coupling_gain_db) / 10.0)
        rows = np.arange(len(self.serving_cell))
        serving_mw = received_mw[rows, self.serving_cell]
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
    o2i_rng: np.random.Generator,
    keep_state: bool = False,
) -> LinkGains:
    """Draw every (device, site) link's LOS state and shadowing; return the gains.

    Distances outside the path-loss model's validity are refused (``OutOfValidityError``)
    or clipped, as ``environment.out_of_range`` says; ``environment.shadowing=False`` draws
    the shadow fading (so the other draws stay put) but applies none. ``keep_state`` keeps
    the per-site draws (:attr:`LinkGains.state`) that moving devices' links start from."""
    n = len(device_xy_m)
    out: dict[str, list[np.ndarray]] = {}
    o2i_db = _o2i_loss_db(environment, heights, o2i_rng)
    for start in range(0, max(n, 1), BLOCK_DEVICES):
        rows = slice(start, min(start + BLOCK_DEVICES, n))
        block = _block_gains(
            layout,
            np.asarray(device_xy_m, dtype=float)[rows],
            _rows(heights, rows),
            o2i_db[rows],
            environment,
            los_rng,
            shadowing_rng,
            keep_state,
        )
        for key, value in block.items():
            out.setdefault(key, []).append(value)
    joined = {k: np.concatenate(v) if v else np.empty(0) for k, v in out.items()}
    if not out:
        joined = {"coupling": np.empty((0, layout.n_cells))} | {
            k: np.empty(0) for k in ("serving", "los", "d2d", "pathloss", "shadowing")
        }
    state = None
    if keep_state:
        state = LargeScaleState(
            joined["los_uniform"], joined["site_shadowing"], o2i_db, joined.get("common_z")
        )
    return LinkGains(
        joined["coupling"],
        joined["serving"].astype(np.int64),
        joined["los"].astype(bool),
        joined["d2d"],
        joined["pathloss"],
        joined["shadowing"],
        o2i_db,
        state,
    )


def _rows(heights: DeviceHeights, rows: slice) -> DeviceHeights:
    return DeviceHeights(
        heights.height_m[rows], heights.indoor[rows], heights.indoor_distance_m[rows]
    )


@dataclass(frozen=True)
class SiteGeometry:
    """Where devices are from every site: what the path loss and the antennas take."""

    offsets_m: np.ndarray  # (devices, sites, 2), from each site's nearest image
    image: np.ndarray  # (devices, sites), which wrap-around image (Layout.site_images)
    distance_m: np.ndarray  # (devices, sites), unclipped
    d2d_m: np.ndarray  # (devices, sites), clipped or checked against the model's validity
    p_los: np.ndarray  # (devices, sites)


def site_geometry(
    layout: Layout,
    xy: np.ndarray,
    heights: DeviceHeights,
    env: Environment,
    image_guess: np.ndarray | None = None,
    sites: np.ndarray | None = None,
) -> SiteGeometry:
    """Distances and LOS probabilities of every (device, site) link (raises
    ``OutOfValidityError`` for a distance outside the model's validity unless clipping);
    ``image_guess``: the devices' earlier ``image`` (:meth:`Layout.site_images`).

    With ``sites``, row ``i`` is one link, from site ``sites[i]`` to the device at
    ``xy[i]`` (of height ``heights`` row ``i``): every array is then ``(links, 1)``, which
    :func:`coupling_gains` takes as devices of one site each (its sectors' cells)."""
    model = env.model
    if sites is None:
        offsets, image = layout.site_images(xy, image_guess)  # (devices, sites, 2)
    else:
        guess = None if image_guess is None else image_guess.ravel()
        offsets, image = layout.link_images(xy, sites, guess)
        offsets, image = offsets[:, None, :], image[:, None]
    distance = np.hypot(offsets[..., 0], offsets[..., 1])
    d2d = model.check_distance(distance, env.out_of_range)
    d2d_out = d2d
    if isinstance(model, ThreeGppModel) and model.release == "tr38901":
        # Table 7.4.2-1: d2D-out for indoor devices
        d2d_out = np.maximum(d2d - heights.indoor_distance_m[:, None], 1e-3)
    if isinstance(model, ThreeGppModel):
        p_los = model.los_probability(d2d_out, heights.height_m[:, None])
    else:  # any ChannelModel (ITU-R M.2135: no height dependence)
        p_los = model.los_probability(d2d_out)
    return SiteGeometry(offsets, image, distance, d2d, p_los)


def shadowing_sigma_db(env: Environment, los: np.ndarray, heights: DeviceHeights) -> np.ndarray:
    """Each link's shadow-fading sigma: the model's for its LOS state, TR 36.873's 7 dB for
    indoor devices under its O2I model (the indoor shadowing replaces the outdoor one)."""
    sigma = env.model.shadowing_sigma_db(los)
    if env.o2i == "tr36873":
        sigma = np.where(heights.indoor[:, None], TR36873_O2I_SIGMA_DB, sigma)
    return np.asarray(sigma, dtype=float)


def coupling_gains(
    layout: Layout,
    geometry: SiteGeometry,
    heights: DeviceHeights,
    env: Environment,
    los: np.ndarray,
    shadow_db: np.ndarray,
    o2i_db: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``(coupling gain (devices, cells), path loss (devices, sites))`` in dB for given LOS
    states, shadowing and O2I loss: the deterministic part of the links, which the radio
    update re-evaluates for devices that moved."""
    model = env.model
    d2d = geometry.d2d_m
    h_ut = heights.height_m[:, None]
    d3d = distance_3d_m(d2d, env.bs_height_m, h_ut)
    ue_heights = _ue_heights(model, heights)
    if isinstance(model, ThreeGppModel):  # it takes the 3D distances computed here
        pathloss = model.pathloss_db(
            d2d, env.frequency_hz, env.bs_height_m, ue_heights, los=los, d3d_m=d3d
        )
    else:
        pathloss = model.pathloss_db(d2d, env.frequency_hz, env.bs_height_m, ue_heights, los=los)
    site_loss = pathloss + shadow_db + o2i_db[:, None]
    # Antenna gain towards each device, per cell (sectors share their site's link): as
    # (sectors, devices, sites), the long axes inside; cell = site x sectors + sector.
    zenith = np.degrees(np.arccos((env.bs_height_m - h_ut) / d3d))  # 90 = horizon
    zenith_deg = 180.0 - zenith  # from the BS, looking down is zenith > 90
    offsets = geometry.offsets_m
    azimuth = np.degrees(np.arctan2(offsets[..., 1], offsets[..., 0]))
    relative_az = azimuth[None] - layout.sector_boresight_deg[:, None, None]
    gain = env.antenna.gain_dbi(zenith_deg[None], relative_az)
    cells = d2d.shape[1] * layout.sectors  # every cell, or a link's sectors
    coupling = (gain - site_loss[None]).transpose(1, 2, 0).reshape(len(d2d), cells)
    if env.ue_gain_dbi:
        coupling = coupling + env.ue_gain_dbi
    return coupling, pathloss


def _block_gains(
    layout: Layout,
    xy: np.ndarray,
    heights: DeviceHeights,
    o2i_db: np.ndarray,
    env: Environment,
    los_rng: np.random.Generator,
    shadowing_rng: np.random.Generator,
    keep_state: bool,
) -> dict[str, np.ndarray]:
    geometry = site_geometry(layout, xy, heights, env)
    uniform = los_rng.random(geometry.d2d_m.shape)
    los = uniform < geometry.p_los
    z = shadowing_rng.standard_normal(los.shape)
    common_z = None
    if env.site_correlation > 0 and layout.n_sites > 1:
        common_z = shadowing_rng.standard_normal((len(xy), 2))
        r = env.site_correlation
        z = np.sqrt(r) * np.where(los, common_z[:, :1], common_z[:, 1:]) + np.sqrt(1 - r) * z
    shadow_db = z * shadowing_sigma_db(env, los, heights)
    if not env.shadowing:
        shadow_db = np.zeros_like(shadow_db)
    coupling, pathloss = coupling_gains(layout, geometry, heights, env, los, shadow_db, o2i_db)
    serving = np.argmax(coupling, axis=1)
    site = layout.cell_site[serving]
    rows = np.arange(len(xy))
    out = {
        "coupling": coupling,
        "serving": serving,
        "los": los[rows, site],
        "d2d": geometry.distance_m[rows, site],
        "pathloss": pathloss[rows, site],
        "shadowing": shadow_db[rows, site],
    }
    if keep_state:
        out |= {"los_uniform": uniform, "site_shadowing": shadow_db}
        if common_z is not None:
            out["common_z"] = common_z
    return out


def _ue_heights(model: ChannelModel, heights: DeviceHeights) -> Any:
    """The UE heights as the model takes them: a (devices, 1) array for the TR 38.901
    models (broadcasting against the (devices, sites) distances), one height for the
    others (whose ``pathloss_db`` takes a float)."""
    if isinstance(model, ThreeGppModel):
        return heights.height_m[:, None]
    unique = np.unique(heights.height_m)
    if unique.size > 1:
        raise ValueError(
            f"{type(model).__name__} takes one device height, not {unique.size} (indoor"
            " devices on floors need a TR 38.901 model)"
        )
    return float(unique[0]) if unique.size else 1.5


def _o2i_loss_db(
    environment: Environment, heights: DeviceHeights, rng: np.random.Generator
) -> np.ndarray:
    """Per-device O2I loss (dB, 0 outdoors): TR 36.873's 20 dB wall plus 0.5 d_in, or TR
    38.901 Table 7.4.3-2's low/high-loss wall plus 0.5 d2D-in plus N(0, sigma_P)."""
    indoor = heights.indoor
    if not indoor.any():
        return np.zeros(len(indoor))
    if environment.o2i == "tr36873":
        return np.where(indoor, TR36873_WALL_LOSS_DB + 0.5 * heights.indoor_distance_m, 0.0)
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
    return np.where(indoor, wall + 0.5 * heights.indoor_distance_m + random_part, 0.0)
