"""Elaboration of the radio: the scenario's ``cell``, ``radio`` and ``traffic`` sections ->
a :class:`~netfl.radio.network.Network` plus the radio columns of ``clients.parquet``.

One path for every layout, a single cell being a layout of one site: layout ->
propagation (every device to every cell, :mod:`netfl.radio.propagation`) -> association
(the strongest cell) -> per-cell schedulers (:mod:`netfl.radio.cells`) -> air interface
(:mod:`netfl.radio.air`) -> background traffic in every cell (:mod:`netfl.radio.traffic`),
with the radio update (:mod:`netfl.radio.update`) keeping the links in flight on the
interference they see.

Random streams (each component its own, :mod:`netfl.rng`): ``radio.drop`` (positions),
``devices.placement`` (groups at a distance), ``radio.heights`` (indoor state and
floors), ``radio.los`` (LOS condition), ``radio.shadowing``, ``radio.o2i`` (building
penetration), ``radio.typical_users`` (the nominal uplink load of a multi-cell layout),
``radio.fading`` (block fading), ``radio.fluctuation`` (MAB-CS per-round throughput),
``traffic.<i>.cell<c>.arrivals`` and ``traffic.<i>.cell<c>.users`` for background source
``i`` in cell ``c``. The ``fixed`` model keeps ``radio.drop`` and ``radio.rates``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import simpy

from channel_models.protocol import OutOfValidityError
from netfl.config import Scenario
from netfl.config.radio import FixedRadioConfig, LteRadioConfig
from netfl.errors import RadioWarning, ScenarioError
from netfl.map.layout import layout_from_config, place_groups
from netfl.radio.cells import DIRECTIONS, DL, UL, Cells, db_to_mw
from netfl.radio.cellular import CellularNetwork, DeviceLinks
from netfl.radio.motion import Motion, build_population, moving_groups
from netfl.radio.network import FixedRateNetwork, Network
from netfl.radio.propagation import BLOCK_DEVICES, LinkGains
from netfl.radio.scheduler import Flow, FluidScheduler
from netfl.radio.system import Placement, RadioSystem, drop_devices, typical_ul_emission_mw
from netfl.radio.topology import Backhaul, build_topology
from netfl.radio.traffic import start_sources
from netfl.radio.update import RadioUpdate
from netfl.recorder.timeline import Timeline
from netfl.registry import channel_models
from netfl.rng import Streams


@dataclass
class RadioBuild:
    """The network, the clients-table columns it fills, and the background sources."""

    network: Network
    columns: dict[str, Any]
    traffic: list[Any] = field(default_factory=list)
    update: RadioUpdate | None = None


def radio_system(scenario: Scenario) -> RadioSystem:
    """The scenario's :class:`RadioSystem` (its channel model loaded from the registry)."""
    config = scenario.radio
    assert isinstance(config, LteRadioConfig)
    return RadioSystem(scenario, channel_models().load(config.channel_model))


def build_radio(
    scenario: Scenario, env: simpy.Environment, streams: Streams, timeline: Timeline, n: int
) -> RadioBuild:
    """The radio of a run with ``n`` FL devices (``radio.model``: lte, nr or fixed)."""
    if isinstance(scenario.radio, FixedRadioConfig):
        build = _fixed(scenario, streams, n)
    else:
        build = _cellular(scenario, env, streams, timeline, n)
    build.columns["rate_ul_bps"] = build.network.rate_ul_bps
    build.columns["rate_dl_bps"] = build.network.rate_dl_bps
    return build


def _cellular(
    scenario: Scenario, env: simpy.Environment, streams: Streams, timeline: Timeline, n: int
) -> RadioBuild:
    config = scenario.radio
    assert isinstance(config, LteRadioConfig)
    system = radio_system(scenario)
    placement = drop_devices(system, scenario, n, streams)
    population = None
    if moving_groups(scenario):  # the links start where the mobility models put the devices
        population = build_population(scenario, system.layout, placement.xy_m, streams)
        placement = replace(placement, xy_m=population.xy_m.copy())
        # A moving device may pass closer to a mast than the model's validity (10 m): its
        # distances are clipped to the valid range, never extrapolated (docs/mobility.md).
        system.environment = replace(system.environment, out_of_range="clip")
    gains = draw_gains(system, scenario, placement, streams, keep_state=population is not None)
    cells = cells_of(env, system)
    if system.n_cells > 1:
        cells.typical_ul_mw = typical_ul_emission_mw(system, streams.get("radio.typical_users"))
    devices = device_links(system, gains, cells.typical_ul_mw)
    _coverage(scenario, devices)
    if config.record_rb_allocations:
        for direction in DIRECTIONS:
            for cell, scheduler in enumerate(cells.schedulers[direction]):
                scheduler.on_change = _rb_log(timeline, scheduler, direction, cell)
    update = RadioUpdate(env, system, cells, config.update_interval_s)
    c = scenario.cell
    topology = build_topology(c.radius_m, c.backhaul.model_dump(), system.layout)
    network = CellularNetwork(
        env,
        system,
        cells,
        devices,
        Backhaul(env, topology, c.backhaul.aggregator).site_paths(system.layout.n_sites),
        fading_rng=streams.get("radio.fading") if config.fast_fading == "rayleigh_block" else None,
        fluctuation_eta=config.fluctuation_eta,
        fluctuation_rng=(
            streams.get("radio.fluctuation") if config.fluctuation_eta is not None else None
        ),
        update=update,
    )
    traffic = start_sources(scenario, system, cells, streams, timeline)
    if population is not None:
        assert gains.state is not None
        network.mobile = True
        network.motion = Motion(
            scenario, system, placement, population, gains.state, network, cells, streams, timeline
        )
        update.move(network.motion)
    rows = np.arange(n)
    columns = {
        "x_m": placement.xy_m[:, 0],
        "y_m": placement.xy_m[:, 1],
        "distance_m": gains.distance_2d_m,
        "los": gains.los,
        "pathloss_db": gains.pathloss_db,
        "shadowing_db": gains.shadowing_db,
        "snr_ul_db": devices.alone_sinr_db[UL] - system.ul_full_drop_db(devices.ul_power_db),
        "cell": devices.serving.astype(np.int32),
        "coupling_loss_db": -devices.gain_db[rows, devices.serving],
        "sinr_ul_db": devices.nominal_sinr_db[UL],
        "sinr_dl_db": devices.nominal_sinr_db[DL],
        "indoor": placement.heights.indoor,
        "ue_height_m": placement.heights.height_m,
    }
    return RadioBuild(network, columns, traffic, update)


def cells_of(env: simpy.Environment, system: RadioSystem) -> Cells:
    """The layout's cells: schedulers of the directions' policies, with the uplink power
    control's hooks (a device's power limit, and its rate per RB beyond it)."""
    return Cells(
        env,
        system.n_cells,
        system.n_rb,
        {d: system.link_config[d].scheduler for d in DIRECTIONS},
        system.dl_power_db,
        ul_limited_rates=system.limited_rates if system.open_loop else None,
        ul_limit_rb=system.ul_limit_rb if system.open_loop else None,
    )


def draw_links(
    system: RadioSystem, scenario: Scenario, n: int, streams: Streams
) -> tuple[Placement, LinkGains]:
    """Drop ``n`` devices and draw their links to every cell: the first steps of every run
    and of ``netfl calibrate`` (streams ``radio.drop``, ``devices.placement``,
    ``radio.heights``, ``radio.los``, ``radio.shadowing``, ``radio.o2i``)."""
    placement = drop_devices(system, scenario, n, streams)
    return placement, draw_gains(system, scenario, placement, streams)


def draw_gains(
    system: RadioSystem,
    scenario: Scenario,
    placement: Placement,
    streams: Streams,
    keep_state: bool = False,
) -> LinkGains:
    """The placed devices' links to every cell, a bad distance refused naming the key."""
    try:
        return system.gains(
            placement,
            streams.get("radio.los"),
            streams.get("radio.shadowing"),
            streams.get("radio.o2i"),
            keep_state,
        )
    except OutOfValidityError as exc:
        key = "cell.radius_m" if scenario.cell.sites == 1 else "cell.inter_site_distance_m"
        raise ScenarioError.single(key, f"{exc}; or set radio.out_of_range: clip") from None


def device_links(
    system: RadioSystem, gains: LinkGains, typical_ul_mw: np.ndarray | None
) -> DeviceLinks:
    """The devices' powers, and their SINR and rate per RB alone and at the nominal load:
    downlink, every other cell transmitting on all its RBs (the full-buffer assumption of
    the 3GPP calibrations); uplink, every other cell with one device of its typical
    emission transmitting (:func:`netfl.radio.system.typical_ul_emission_mw`), the device
    on its full allocation (a power-limited one at its maximum power over those RBs)."""
    gain_db, serving = gains.coupling_gain_db, gains.serving_cell
    n = len(serving)
    own_db = gain_db[np.arange(n), serving]
    ul_power = system.ul_power_db(-own_db)
    signal = {UL: ul_power + own_db, DL: system.dl_power_db + own_db}
    others_dl = np.empty(n)
    for start in range(0, n, BLOCK_DEVICES):
        block = slice(start, start + BLOCK_DEVICES)
        mw = db_to_mw(gain_db[block])
        others_dl[block] = mw.sum(axis=1) - mw[np.arange(len(mw)), serving[block]]
    interference = {
        DL: float(db_to_mw(system.dl_power_db)) * np.maximum(others_dl, 0.0),
        UL: np.zeros(n),
    }
    if typical_ul_mw is not None:
        into = typical_ul_mw.sum(axis=0) - np.diagonal(typical_ul_mw)
        interference[UL] = into[serving]
    alone = {d: system.sinr_db(d, signal[d], 0.0) for d in DIRECTIONS}
    full = {UL: signal[UL] - system.ul_full_drop_db(ul_power), DL: signal[DL]}
    nominal = {d: system.sinr_db(d, full[d], interference[d]) for d in DIRECTIONS}
    return DeviceLinks(
        serving,
        gain_db,
        ul_power,
        alone,
        {d: system.rate_per_rb(d, alone[d]) for d in DIRECTIONS},
        nominal,
        {d: system.rate_per_rb(d, nominal[d]) for d in DIRECTIONS},
    )


def _fixed(scenario: Scenario, streams: Streams, n: int) -> RadioBuild:
    config = scenario.radio
    assert isinstance(config, FixedRadioConfig)
    c = scenario.cell
    layout = layout_from_config(c)
    sites = None if c.device_sites == "all" else np.array([0])
    xy, site = layout.drop(n, c.min_distance_m, streams.get("radio.drop"), c.drop, sites)
    xy = place_groups(scenario.devices, layout, xy, site, streams.get("devices.placement"))
    x, y = xy[:, 0], xy[:, 1]
    rng = streams.get("radio.rates")
    ul = config.rate_ul_bps.sample(rng, n)
    dl = config.rate_dl_bps.sample(rng, n)
    for key, rates in (("radio.rate_ul_bps", ul), ("radio.rate_dl_bps", dl)):
        if np.any(rates <= 0):
            raise ScenarioError.single(key, "drew a non-positive rate; use a positive support")
    columns = {"x_m": x, "y_m": y, "distance_m": np.hypot(x, y)}
    return RadioBuild(FixedRateNetwork(ul, dl), columns)


def _rb_log(
    timeline: Timeline, scheduler: FluidScheduler, direction: str, cell: int
) -> Callable[[Flow, float], None]:
    """Timeline rows ``rb_allocation``: from ``t_s`` on, ``flow`` holds ``n_rb`` RBs of
    ``cell``'s ``direction``."""
    env, total = scheduler.env, scheduler.n_rb

    def record(flow: Flow, n_rb: float) -> None:
        timeline.record(
            env.now,
            "rb_allocation",
            client=flow.client if flow.fl else -1,
            n_rb=n_rb,
            n_rb_total=total,
            flow=flow.id,
            direction=direction,
            cell=cell,
        )

    return record


def _coverage(scenario: Scenario, devices: DeviceLinks) -> None:
    """Devices with a zero rate alone in the network (below the lowest MCS) are out of
    service: they never answer a resource request (``CellularNetwork.covered``), which is
    said once. Devices with a zero rate at the nominal load could never finish a transfer
    that keeps the SINR it started with (no radio update)."""
    config = scenario.radio
    assert isinstance(config, LteRadioConfig)
    stops = scenario.fl.deadline_s is not None or scenario.fl.time_budget_s is not None
    alone = devices.alone_rate_per_rb_bps
    dead = (alone[UL] <= 0) | (alone[DL] <= 0)
    if dead.any():
        message = (
            f"{int(dead.sum())} of {dead.size} devices have no coverage (rate 0 alone in the"
            " network under the rate mapping: below its lowest MCS): they are out of service"
            " and never answer a resource request; to bring them in, shrink the cells, raise"
            " the transmit power, spread it over fewer RBs (uplink.rb_per_flow), lower the"
            " indoor share or its losses, or use another rate mapping"
        )
        if dead.all():
            raise ScenarioError.single("radio.rate_mapping", message)
        warnings.warn(f"radio.rate_mapping: {message}", RadioWarning, stacklevel=3)
        return
    nominal = devices.nominal_rate_per_rb_bps
    loaded = (nominal[UL] <= 0) | (nominal[DL] <= 0)
    if loaded.any() and config.update_interval_s is None and not stops:
        raise ScenarioError.single(
            "radio.update_interval_s",
            f"{int(loaded.sum())} of {loaded.size} devices have no coverage when the other"
            " cells transmit, and without the radio update a transfer that starts then keeps"
            " its rate 0 for ever: set radio.update_interval_s (or fl.deadline_s)",
        )
    if loaded.any() and scenario.fl.deadline_s is None:
        warnings.warn(
            f"fl.deadline_s: {int(loaded.sum())} of {loaded.size} devices have no coverage"
            " when the other cells transmit at the nominal load (rate 0 under the rate"
            " mapping): a transfer of theirs waits at rate 0 for gaps in the interference,"
            " and without a round deadline an exchange that selects one can wait for the"
            " rest of the run",
            RadioWarning,
            stacklevel=3,
        )
