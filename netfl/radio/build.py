"""Elaboration of the radio: the scenario's ``cell``, ``radio`` and ``traffic`` sections ->
a :class:`~netfl.radio.network.Network` plus the radio columns of ``clients.parquet``.

Random streams (each component its own, :mod:`netfl.rng`): ``radio.drop`` (positions),
``radio.los`` (LOS condition), ``radio.shadowing``, ``radio.fading`` (block fading),
``radio.fluctuation`` (MAB-CS per-round throughput), ``traffic.<i>.arrivals`` and
``traffic.<i>.users`` for background source ``i``. The ``fixed`` model keeps the
skeleton's ``radio.drop`` and ``radio.rates``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy

from channel_models.lte import LteTbs
from channel_models.nr import NrCqi
from channel_models.protocol import OutOfValidityError
from channel_models.rate import LteCqi, RateMapping, Shannon, ShannonWithLoss, db_to_linear
from netfl.config import Scenario
from netfl.config.radio import RB_BANDWIDTH_HZ, FixedRadioConfig, LinkConfig, LteRadioConfig
from netfl.config.traffic import ConstantLoadSource, FtpSource, FullBufferSource
from netfl.errors import RadioWarning, ScenarioError
from netfl.radio import cell
from netfl.radio.air import air_interface
from netfl.radio.layout import layout_from_config
from netfl.radio.link import Budget, Propagation, diversity_gain, rate_per_rb_bps, sinr_db
from netfl.radio.lte import BackhaulLink, Channels, LteNetwork
from netfl.radio.multicell import build_multicell
from netfl.radio.network import FixedRateNetwork, Network
from netfl.radio.placement import place_groups
from netfl.radio.scheduler import Flow, FluidScheduler
from netfl.radio.traffic import FlowLog, FtpModel1, FullBuffer, UserPool, constant_load
from netfl.registry import channel_models
from netfl.rng import Streams
from netfl.trace.timeline import Timeline

DIRECTIONS = ("uplink", "downlink")


@dataclass
class RadioBuild:
    """The network, the clients-table columns it fills, and the background sources."""

    network: Network
    columns: dict[str, Any]
    traffic: list[Any] = field(default_factory=list)


def drop(scenario: Scenario, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Device positions under ``cell.drop``."""
    how = {"uniform_area": cell.drop_uniform_area, "uniform_radius": cell.drop_uniform_radius}
    c = scenario.cell
    return how[c.drop](n, c.radius_m, c.min_distance_m, rng)


def rate_mapping(config: LteRadioConfig, direction: str) -> RateMapping:
    """The SINR -> rate mapping of one direction (``uplink``/``downlink``; only ``lte_tbs``
    differs between them: MCS tables, overheads, the RBs its transport blocks span, and the
    uplink's power concentration below MCS 0)."""
    m = config.rate_mapping
    if m.kind == "lte_tbs":
        link = config.uplink if direction == "uplink" else config.downlink
        return LteTbs(
            direction,
            min(link.flow_rb_cap, 110),
            m.target_bler,
            m.implementation_loss_db,
            m.dl_control_symbols,
            m.dl_crs_ports,
            m.ul_srs_period_ms,
            m.ul_pucch_rb_fraction,
            m.packet_payload_bytes,
            m.packet_header_bytes,
            link.power_rbs if direction == "uplink" else 1,
        )
    if m.kind == "shannon_with_loss":
        return ShannonWithLoss(m.loss_db, m.max_spectral_efficiency)
    if m.kind == "lte_cqi":
        return LteCqi(m.target_ber)
    if m.kind == "nr_cqi":
        thresholds = tuple(m.sinr_thresholds_db) if m.sinr_thresholds_db is not None else None
        return NrCqi(m.table, m.target_bler, m.block_symbols, m.implementation_loss_db, thresholds)
    return Shannon()


class CellRadio:
    """The cell's propagation and link budgets: positions -> SINR -> rate per RB."""

    def __init__(self, scenario: Scenario) -> None:
        config = scenario.radio
        assert isinstance(config, LteRadioConfig)
        c = scenario.cell
        self.config = config
        self.mappings = {d: rate_mapping(config, d) for d in DIRECTIONS}
        self.air = air_interface(config)
        self.propagation = Propagation(
            channel_models().load(config.channel_model),
            config.carrier_frequency_hz,
            c.bs_height_m,
            c.ue_height_m,
            config.out_of_range,
            config.shadowing,
        )
        self.layout = layout_from_config(c)
        self.topology = cell.build_topology(
            c.interfering_rings, c.radius_m, c.backhaul.model_dump(), self.layout
        )
        self.interferers = cell.interferer_sites(self.topology)
        up, down = config.uplink, config.downlink
        self.budgets = {
            "uplink": Budget(
                up.tx_power_dbm,
                up.power_rbs,
                config.ue_antenna_gain_dbi,
                config.bs_antenna_gain_dbi,
                up.noise_figure_db,
                config.ul_interference_db,
                self.air.rb_bandwidth_hz,
            ),
            "downlink": Budget(
                down.tx_power_dbm,
                down.power_rbs,
                config.bs_antenna_gain_dbi,
                config.ue_antenna_gain_dbi,
                down.noise_figure_db,
                rb_bandwidth_hz=self.air.rb_bandwidth_hz,
            ),
        }

    def sinr_db(self, geometry: Any, direction: str) -> np.ndarray:
        budget = self.budgets[direction]
        loss = geometry.pathloss_db + geometry.shadowing_db
        if direction == "uplink" or len(self.interferers) == 0:
            return budget.snr_db(loss)
        interference = self.propagation.interference_dbm(
            geometry.x_m, geometry.y_m, self.interferers, budget
        )
        return sinr_db(budget.received_dbm_per_rb(loss), budget.noise_dbm_per_rb, interference)

    def rate_per_rb(self, sinr_db_values: np.ndarray, direction: str) -> np.ndarray:
        """Scheduler rate of one RB: the air interface's time share and overhead applied."""
        rate = rate_per_rb_bps(
            self.mappings[direction],
            sinr_db_values,
            self.config.fast_fading,
            self.air.rb_bandwidth_hz,
        )
        factor = self.air.rate_factor(direction)
        return rate if factor == 1.0 else rate * factor

    def user_draw(
        self, scenario: Scenario, direction: str
    ) -> Callable[[np.random.Generator, int], tuple[np.ndarray, list[Any]]]:
        """Channels of fresh background users in ``direction`` (for :class:`UserPool`)."""
        pf = self.config.fast_fading == "rayleigh" and (
            self._link(direction).scheduler == "proportional_fair"
        )

        def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, list[Any]]:
            x, y = drop(scenario, rng, n)
            geometry = self.propagation.draw(x, y, rng, rng)
            sinr = self.sinr_db(geometry, direction)
            mapping = self.mappings[direction]
            diversity = [
                diversity_gain(mapping, float(db_to_linear(s))) if pf else None for s in sinr
            ]
            return self.rate_per_rb(sinr, direction), diversity

        return draw

    def _link(self, direction: str) -> LinkConfig:
        return self.config.uplink if direction == "uplink" else self.config.downlink


def _fixed(scenario: Scenario, streams: Streams, n: int) -> RadioBuild:
    config = scenario.radio
    assert isinstance(config, FixedRadioConfig)
    x, y = drop(scenario, streams.get("radio.drop"), n)
    x, y = place_groups(scenario.devices, x, y, streams.get("devices.placement"))
    rng = streams.get("radio.rates")
    ul = config.rate_ul_bps.sample(rng, n)
    dl = config.rate_dl_bps.sample(rng, n)
    for key, rates in (("radio.rate_ul_bps", ul), ("radio.rate_dl_bps", dl)):
        if np.any(rates <= 0):
            raise ScenarioError.single(key, "drew a non-positive rate; use a positive support")
    columns = {"x_m": x, "y_m": y, "distance_m": np.hypot(x, y)}
    return RadioBuild(FixedRateNetwork(ul, dl), columns)


def _traffic(
    scenario: Scenario,
    radio: CellRadio,
    schedulers: dict[str, FluidScheduler],
    streams: Streams,
    timeline: Timeline,
) -> list[Any]:
    env = schedulers["uplink"].env
    log = FlowLog(timeline if scenario.traffic.record_flows else None)
    sources: list[Any] = []
    for index, source in enumerate(scenario.traffic.sources):
        sched = schedulers[source.direction]
        if isinstance(source, ConstantLoadSource):
            constant_load(sched, source.load_fraction)
            continue
        pool = UserPool(
            radio.user_draw(scenario, source.direction), streams.get(f"traffic.{index}.users")
        )
        if isinstance(source, FullBufferSource):
            sources.append(
                FullBuffer(sched, users=source.users, pool=pool, rb_cap=source.rb_per_flow, log=log)
            )
        elif isinstance(source, FtpSource):
            ftp = FtpModel1(
                env,
                sched,
                arrival_rate_hz=source.arrival_rate_hz,
                sizes=source.file_size_bits.sample,
                users=pool,
                rng=streams.get(f"traffic.{index}.arrivals"),
                rb_cap=source.rb_per_flow,
                log=log,
            )
            ftp.start()
            sources.append(ftp)
    return sources


def _rb_log(
    timeline: Timeline, scheduler: FluidScheduler, direction: str
) -> Callable[[Flow, float], None]:
    """Timeline rows ``rb_allocation``: from ``t_s`` on, ``flow`` holds ``n_rb`` RBs."""
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
        )

    return record


def _coverage(scenario: Scenario, channels: Channels) -> None:
    """Devices with a zero rate (below the lowest CQI) could never finish a transfer."""
    dead = (channels.rate_per_rb_ul_bps <= 0) | (channels.rate_per_rb_dl_bps <= 0)
    if not dead.any():
        return
    message = (
        f"{int(dead.sum())} of {dead.size} devices have no coverage (rate 0 under the"
        " rate mapping, e.g. below CQI 1): their transfers never finish; shrink"
        " cell.radius_m, raise the transmit power, spread it over fewer RBs"
        " (uplink.rb_per_flow), or use another rate mapping"
    )
    if scenario.fl.deadline_s is None and scenario.fl.time_budget_s is None:
        raise ScenarioError.single("radio.rate_mapping", message + " (or set fl.deadline_s)")
    warnings.warn(f"radio.rate_mapping: {message}", RadioWarning, stacklevel=3)


def _block_fading_outage(scenario: Scenario, mappings: dict[str, RateMapping]) -> None:
    """Under ``rayleigh_block`` one fade holds for a whole transfer: a mapping with a lowest
    MCS (or CQI) gives a deep fade a zero rate, and a round without a deadline or a time
    budget would then never end (issue 26: the standard LTE mapping has such a floor)."""
    fl, radio = scenario.fl, scenario.radio
    assert isinstance(radio, LteRadioConfig)
    if radio.fast_fading != "rayleigh_block" or {fl.deadline_s, fl.time_budget_s} != {None}:
        return
    if any(float(m.rate_bps(np.array([1e-6]), RB_BANDWIDTH_HZ)[0]) <= 0 for m in mappings.values()):
        raise ScenarioError.single(
            "radio.fast_fading",
            "rayleigh_block can fade a transfer below the rate mapping's lowest MCS (rate 0)"
            " for its whole duration, and then the round never ends: set fl.deadline_s or"
            " fl.time_budget_s, use fast_fading: rayleigh, or a mapping without a floor"
            " (shannon_with_loss)",
        )


class Backhaul:
    """One :class:`BackhaulLink` per edge of the topology, shared by every path across it."""

    def __init__(self, env: simpy.Environment, topology: Any, aggregator: str) -> None:
        self.env, self.topology, self.aggregator = env, topology, aggregator
        self._links: dict[frozenset[Any], BackhaulLink | None] = {}

    def path(self, source: Any = cell.SERVING_CELL) -> list[BackhaulLink]:
        """The links a model crosses from ``source`` (a site node) to the aggregator."""
        out = []
        for a, b in cell.backhaul_path(self.topology, self.aggregator, source):
            key = frozenset((a, b))
            if key not in self._links:
                data = self.topology.edges[a, b]
                useful = data["latency_s"] > 0 or np.isfinite(data["capacity_bps"])
                self._links[key] = (
                    BackhaulLink(self.env, data["latency_s"], data["capacity_bps"])
                    if useful
                    else None
                )
            link = self._links[key]
            if link is not None:
                out.append(link)
        return out


def _lte(
    scenario: Scenario, env: simpy.Environment, streams: Streams, timeline: Timeline, n: int
) -> RadioBuild:
    config = scenario.radio
    assert isinstance(config, LteRadioConfig)
    radio = CellRadio(scenario)
    x, y = drop(scenario, streams.get("radio.drop"), n)
    x, y = place_groups(scenario.devices, x, y, streams.get("devices.placement"))
    try:
        geometry = radio.propagation.draw(
            x, y, streams.get("radio.los"), streams.get("radio.shadowing")
        )
    except OutOfValidityError as exc:
        raise ScenarioError.single("cell.radius_m", str(exc)) from None
    sinr = {d: radio.sinr_db(geometry, d) for d in DIRECTIONS}
    channels = Channels(
        sinr["uplink"],
        sinr["downlink"],
        radio.rate_per_rb(sinr["uplink"], "uplink"),
        radio.rate_per_rb(sinr["downlink"], "downlink"),
    )
    _coverage(scenario, channels)
    _block_fading_outage(scenario, radio.mappings)
    links = {"uplink": config.uplink, "downlink": config.downlink}
    schedulers = {d: FluidScheduler(env, links[d].rb_count, links[d].scheduler) for d in links}
    if config.record_rb_allocations:
        for direction, scheduler in schedulers.items():
            short = {"uplink": "ul", "downlink": "dl"}[direction]
            scheduler.on_change = _rb_log(timeline, scheduler, short)
    network = LteNetwork(
        env,
        uplink=schedulers["uplink"],
        downlink=schedulers["downlink"],
        channels=channels,
        mappings=radio.mappings,
        rb_cap_ul=config.uplink.flow_rb_cap,
        rb_cap_dl=config.downlink.flow_rb_cap,
        fast_fading=config.fast_fading,
        fading_rng=streams.get("radio.fading") if config.fast_fading == "rayleigh_block" else None,
        fluctuation_eta=config.fluctuation_eta,
        fluctuation_rng=(
            streams.get("radio.fluctuation") if config.fluctuation_eta is not None else None
        ),
        backhaul=Backhaul(env, radio.topology, scenario.cell.backhaul.aggregator).path(),
        air=radio.air,
    )
    traffic = _traffic(scenario, radio, schedulers, streams, timeline)
    columns = {
        "x_m": x,
        "y_m": y,
        "distance_m": geometry.distance_m,
        "los": geometry.los,
        "pathloss_db": geometry.pathloss_db,
        "shadowing_db": geometry.shadowing_db,
        "snr_ul_db": sinr["uplink"],
        "cell": np.zeros(n, dtype=np.int32),
        "coupling_loss_db": geometry.pathloss_db
        + geometry.shadowing_db
        - config.bs_antenna_gain_dbi
        - config.ue_antenna_gain_dbi,
        "sinr_ul_db": sinr["uplink"],  # with the constant ul_interference_db in the noise
        "sinr_dl_db": sinr["downlink"],
    }
    return RadioBuild(network, columns, traffic)


def _multicell(
    scenario: Scenario, env: simpy.Environment, streams: Streams, timeline: Timeline, n: int
) -> RadioBuild:
    config = scenario.radio
    assert isinstance(config, LteRadioConfig)
    c = scenario.cell
    topology = cell.build_topology(0, c.radius_m, c.backhaul.model_dump(), layout_from_config(c))
    sites = {
        data["site"]: node
        for node, data in topology.nodes(data=True)
        if data.get("kind") == "cell" and "site" in data
    }
    backhaul = Backhaul(env, topology, c.backhaul.aggregator)
    try:
        network, columns, traffic = build_multicell(
            scenario,
            env,
            streams,
            timeline,
            n,
            channel_models().load(config.channel_model),
            {d: rate_mapping(config, d) for d in DIRECTIONS},
            lambda site: backhaul.path(sites[site]),
        )
    except OutOfValidityError as exc:
        raise ScenarioError.single("radio.out_of_range", f"{exc}; or set it to clip") from None
    _coverage(
        scenario,
        Channels(
            columns["sinr_ul_db"],
            columns["sinr_dl_db"],
            network.rate_per_rb_nominal["ul"],
            network.rate_per_rb_nominal["dl"],
        ),
    )
    return RadioBuild(network, columns, traffic)


def build_radio(
    scenario: Scenario, env: simpy.Environment, streams: Streams, timeline: Timeline, n: int
) -> RadioBuild:
    """Build the scenario's network for ``n`` devices (``radio.model``: lte or fixed; the
    multi-cell model when ``cell`` asks for more than one site, sectors or indoor devices)."""
    if isinstance(scenario.radio, FixedRadioConfig):
        build = _fixed(scenario, streams, n)
    elif scenario.cell.multicell:
        build = _multicell(scenario, env, streams, timeline, n)
    else:
        build = _lte(scenario, env, streams, timeline, n)
    build.columns["rate_ul_bps"] = build.network.rate_ul_bps
    build.columns["rate_dl_bps"] = build.network.rate_dl_bps
    return build
