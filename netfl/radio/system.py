"""What every link of a run shares: layout, propagation, budgets, air interface, mapping.

:class:`RadioSystem` is built from a scenario's ``cell`` and ``radio`` sections without a
random draw; :func:`drop_devices` and :meth:`RadioSystem.gains` then place devices and
draw their links from the run's streams. ``netfl calibrate`` uses the same two calls
(:mod:`netfl.radio.calibration`), so the calibrated numbers describe what FL runs use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from channel_models import power_control
from channel_models.protocol import ChannelModel
from channel_models.rate import db_to_linear
from netfl.config import Scenario
from netfl.config.radio import LteRadioConfig
from netfl.map.layout import Layout, antenna_from_config, layout_from_config, place_groups
from netfl.radio.air import AirInterface, air_interface
from netfl.radio.cells import DL, UL
from netfl.radio.link import Budget, diversity_gain, rate_mapping, rate_per_rb_bps, sinr_db
from netfl.radio.propagation import (
    DeviceHeights,
    Environment,
    LinkGains,
    drop_heights,
    link_gains,
)
from netfl.rng import Streams

O2I = {"low_loss": "low", "high_loss": "high", "mixed": "mixed", "tr36873": "tr36873"}


@dataclass(frozen=True)
class Placement:
    """Where devices are: positions, the site each was dropped at, heights."""

    xy_m: np.ndarray
    site: np.ndarray
    heights: DeviceHeights


class RadioSystem:
    """The layout, its propagation environment and both directions' budgets and rates."""

    def __init__(self, scenario: Scenario, channel: ChannelModel) -> None:
        config = scenario.radio
        assert isinstance(config, LteRadioConfig)
        c = scenario.cell
        self.config, self.cell = config, c
        self.layout: Layout = layout_from_config(c)
        self.environment = Environment(
            channel,
            config.carrier_frequency_hz,
            c.bs_height_m,
            antenna_from_config(c, config.bs_antenna_gain_dbi),
            O2I[c.o2i_model],  # type: ignore[arg-type]
            c.o2i_high_loss_fraction,
            config.ue_antenna_gain_dbi,
            config.out_of_range,
            config.shadowing,
            config.shadowing_site_correlation,
        )
        self.air: AirInterface = air_interface(config)
        self.mappings = {d: rate_mapping(config, d) for d in (UL, DL)}
        up, down = config.uplink, config.downlink
        self.link_config = {UL: up, DL: down}
        self.n_rb = {UL: up.rb_count, DL: down.rb_count}
        self.rb_cap = {UL: float(up.flow_rb_cap), DL: float(down.flow_rb_cap)}
        rb_hz = self.air.rb_bandwidth_hz
        self.budget = {
            UL: Budget(
                up.tx_power_dbm,
                up.power_rbs,
                up.noise_figure_db,
                config.ul_interference_db,
                rb_hz,
            ),
            DL: Budget(down.tx_power_dbm, down.power_rbs, down.noise_figure_db, 0.0, rb_hz),
        }
        self.noise_db = {d: float(b.noise_dbm_per_rb) for d, b in self.budget.items()}
        control = config.uplink_power_control
        self.open_loop = control.mode == "open_loop"
        #: The devices' maximum power P_CMAX (dBm; inf: a fixed power per RB, no limit).
        self.p_cmax_dbm = control.p_cmax_dbm if self.open_loop else np.inf
        #: RBs a transfer holds alone: its cap, or the band.
        self.full_rb = {d: min(self.rb_cap[d], float(self.n_rb[d])) for d in (UL, DL)}
        self.dl_power_db = float(self.budget[DL].tx_dbm_per_rb)
        self._pf_rayleigh = {
            d: config.fast_fading == "rayleigh" and link.scheduler == "proportional_fair"
            for d, link in self.link_config.items()
        }

    @property
    def n_cells(self) -> int:
        return self.layout.n_cells

    def gains(
        self,
        placement: Placement,
        los_rng: np.random.Generator,
        shadowing_rng: np.random.Generator,
        o2i_rng: np.random.Generator,
        keep_state: bool = False,
    ) -> LinkGains:
        """Every device's coupling gain to every cell (raises ``OutOfValidityError``)."""
        return link_gains(
            self.layout,
            placement.xy_m,
            placement.heights,
            self.environment,
            los_rng,
            shadowing_rng,
            o2i_rng,
            keep_state,
        )

    def ul_power_db(self, coupling_loss_db: np.ndarray | float) -> np.ndarray:
        """Per-RB uplink power of devices with these coupling losses while their allocation
        is within their power limit: under open-loop power control (TS 36.213 Sec.
        5.1.1.1, TS 38.213 Sec. 7.1.1) ``P0 + 10 log10(2^mu) + alpha CL + f``, at most
        ``P_CMAX`` (one RB's worth); under ``fixed_per_rb`` ``tx_power_dbm`` over
        ``tx_power_rbs``. Beyond the limit (:meth:`ul_limit_rb`) the power per RB falls
        with the allocation (:func:`channel_models.power_control.power_drop_db`)."""
        if not self.open_loop:
            return np.full(np.shape(coupling_loss_db), self.budget[UL].tx_dbm_per_rb)
        c = self.config.uplink_power_control
        mu = getattr(self.config, "numerology", 0)
        wanted = power_control.open_loop_dbm(
            coupling_loss_db, c.p0_dbm, c.alpha, c.closed_loop_db, mu
        )
        return np.minimum(wanted, c.p_cmax_dbm)

    def ul_limit_rb(self, power_db: np.ndarray | float) -> np.ndarray:
        """``M*``: the RBs up to which a device of this per-RB power (:meth:`ul_power_db`)
        keeps it, at least 1 (inf: no limit, ``fixed_per_rb``)."""
        if not self.open_loop:
            return np.full(np.shape(power_db), np.inf)
        return power_control.power_limit_rbs(self.p_cmax_dbm, power_db)

    def power_limit_rb(self, direction: str, power_db: float) -> float:
        """:meth:`ul_limit_rb` of one uplink (inf for the downlink: fixed energy per RE)."""
        if direction != UL or not self.open_loop:
            return math.inf
        return max(1.0, 10.0 ** ((self.p_cmax_dbm - power_db) / 10.0))

    def ul_full_drop_db(self, power_db: np.ndarray | float) -> np.ndarray:
        """How far below :meth:`ul_power_db` a device transmits per RB on the RBs a
        transfer holds alone (its cap, or the band): the nominal figures' allocation."""
        return power_control.power_drop_db(self.full_rb[UL], self.ul_limit_rb(power_db))

    def limited_rates(self, flows: list[Any], drop_db: np.ndarray) -> np.ndarray:
        """Rates per RB of uplink ``flows`` whose power per RB sits ``drop_db`` below the
        one their ``rate_per_rb_bps`` holds for (the scheduler's hook for flows beyond
        their power limit): the mapping at ``sinr_db - drop``, with the flow's block fade
        and rate scale."""
        sinr = np.array([f.sinr_db for f in flows]) - drop_db
        scale = np.array([f.link.scale for f in flows])
        if self.config.fast_fading == "rayleigh_block":
            fade = np.array([f.link.fade for f in flows])
            rate = self.mappings[UL].rate_bps(db_to_linear(sinr) * fade, self.air.rb_bandwidth_hz)
            rate = rate * self.air.rate_factor(_LONG[UL])
        else:
            rate = self.rate_per_rb(UL, sinr)
        return np.asarray(rate * scale, dtype=float)

    def sinr_db(
        self, direction: str, signal_db: np.ndarray, interference_mw: np.ndarray | float
    ) -> np.ndarray:
        return sinr_db(signal_db, self.noise_db[direction], interference_mw)

    def rate_per_rb(self, direction: str, sinr_db_values: np.ndarray) -> np.ndarray:
        """Scheduler rate of one RB at each SINR: the mapping (averaged over Rayleigh fading
        under ``fast_fading: rayleigh``), the air interface's time share and overhead."""
        rate = rate_per_rb_bps(
            self.mappings[direction],
            sinr_db_values,
            self.config.fast_fading,
            self.air.rb_bandwidth_hz,
        )
        factor = self.air.rate_factor(_LONG[direction])
        return rate if factor == 1.0 else rate * factor

    def faded_rate_per_rb(self, direction: str, sinr_db_value: float, fade: float) -> float:
        """One block-faded transfer's rate per RB (``fast_fading: rayleigh_block``)."""
        sinr = db_to_linear(sinr_db_value) * fade
        rate = float(self.mappings[direction].rate_bps(sinr, self.air.rb_bandwidth_hz))
        return rate * self.air.rate_factor(_LONG[direction])

    def diversity(self, direction: str, sinr_db_value: float) -> Any:
        """Proportional fair's multi-user diversity gain under Rayleigh fading (None when
        the direction's policy and fading give none)."""
        if not self._pf_rayleigh[direction]:
            return None
        return diversity_gain(self.mappings[direction], float(db_to_linear(sinr_db_value)))


_LONG = {UL: "uplink", DL: "downlink"}


def drop_devices(system: RadioSystem, scenario: Scenario, n: int, streams: Streams) -> Placement:
    """Place ``n`` FL devices: the layout's drop over ``cell.device_sites`` (stream
    ``radio.drop``), device groups at their ``distance_m`` (``devices.placement``), heights
    and indoor state (``radio.heights``)."""
    c = scenario.cell
    sites = None if c.device_sites == "all" else np.array([0])
    xy, site = system.layout.drop(n, c.min_distance_m, streams.get("radio.drop"), c.drop, sites)
    xy = place_groups(scenario.devices, system.layout, xy, site, streams.get("devices.placement"))
    heights = drop_heights(
        n,
        c.indoor_fraction,
        streams.get("radio.heights"),
        outdoor_height_m=c.ue_height_m,
        tr36873_indoor_distance=c.o2i_model == "tr36873",
    )
    return Placement(xy, site, _outdoors_if_moving(scenario, heights, c.ue_height_m))


def _outdoors_if_moving(
    scenario: Scenario, heights: DeviceHeights, outdoor_height_m: float
) -> DeviceHeights:
    """Moving devices are outdoors at the outdoor height (a pedestrian in the street, a
    vehicle without penetration loss: docs/mobility.md); static ones keep their drop."""
    moving, start = np.zeros(len(heights.indoor), dtype=bool), 0
    for group in scenario.devices.groups:
        moving[start : start + group.count] = group.mobility.model != "static"
        start += group.count
    if not moving.any():
        return heights
    return DeviceHeights(
        np.where(moving, outdoor_height_m, heights.height_m),
        heights.indoor & ~moving,
        np.where(moving, 0.0, heights.indoor_distance_m),
    )


def drop_users(
    system: RadioSystem, n: int, rng: np.random.Generator, site: int | None = None
) -> Placement:
    """``n`` users like the FL devices (``cell.drop``, indoor share), over every site or in
    ``site``'s hexagon, from one stream (background users, typical users)."""
    c = system.cell
    sites = None if site is None else np.array([site])
    xy, where = system.layout.drop(n, c.min_distance_m, rng, c.drop, sites)
    heights = drop_heights(
        n,
        c.indoor_fraction,
        rng,
        outdoor_height_m=c.ue_height_m,
        tr36873_indoor_distance=c.o2i_model == "tr36873",
    )
    return Placement(xy, where, heights)


def typical_ul_emission_mw(
    system: RadioSystem, rng: np.random.Generator, per_cell: int = 64
) -> np.ndarray:
    """``(cells, cells)``: the mean uplink emission onto every cell of a device served by
    each cell (per RB: power times coupling gain, the power of a transfer alone in its cell
    on its full allocation), over ``per_cell`` devices a cell dropped like the FL devices.
    The nominal load of the clients' SINR columns and the radiation of the reserved uplink
    constant load."""
    n_cells = system.n_cells
    users = drop_users(system, per_cell * n_cells, rng)
    gains = system.gains(users, rng, rng, rng)
    power_db = system.ul_power_db(gains.coupling_loss_db)
    power_mw = db_to_linear(power_db - system.ul_full_drop_db(power_db))
    emission = power_mw[:, None] * db_to_linear(gains.coupling_gain_db)
    sums = np.zeros((n_cells, n_cells))
    np.add.at(sums, gains.serving_cell, emission)
    counts = np.bincount(gains.serving_cell, minlength=n_cells)
    mean_all = emission.mean(axis=0)
    out = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], mean_all[None, :])
    return np.asarray(out)
