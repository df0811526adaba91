"""The multi-cell radio: every cell schedules its own RBs; interference follows the flows.

Selected by ``cell.sites`` > 1, ``cell.sectors: 3`` or ``cell.indoor_fraction`` > 0
(:attr:`netfl.config.cell.CellConfig.multicell`). Devices are dropped uniformly over the
layout (:mod:`netfl.radio.layout`), each link's LOS state, shadowing and the antenna gains
come from :func:`netfl.radio.propagation.link_gains` (the machinery ``netfl calibrate``
checks against 3GPP), and each device is served by its strongest cell. Every cell has one
:class:`CellScheduler` per direction; transfers in different cells never share RBs.

Interference model (docs/radio.md, "Multi-cell interference"). A flow's SINR is evaluated
when it starts, against what the other cells have in flight at that moment:

- downlink: every other cell with at least one downlink flow transmits at full power on
  all its RBs (its per-RB power ``tx_power_dbm - 10 log10(tx_power_rbs)``);
- uplink: a cell with ``k`` uplink flows puts each of its transmitting devices on a share
  1/k of its RBs (equal sharing), so the expected interference it causes on one RB of cell
  ``i`` is ``sum_u P_u g_u,i / k`` with ``P_u`` the device's per-RB power under open-loop
  fractional power control, ``min(P_max - 10 log10(M), P0 + alpha CL_u)`` (TS 36.213
  Sec. 5.1.1.1; ``CL_u`` its coupling loss to its serving cell, ``M`` its RBs) and
  ``g_u,i`` its coupling gain to cell ``i``.

The state is two small arrays (active downlink flows per cell; the uplink sums
``sum_u P_u g_u,:`` and counts per cell) updated in O(cells) at each flow's start and end,
so a flow event costs O(cells) numpy work, never O(flows) or O(slots). The approximation:
a flow keeps the SINR it started with when the other cells' load changes during its
transfer (re-evaluating every flow at every event would cost O(active flows) per event).
Background traffic (``traffic.sources``) runs in every cell, each cell with its own
arrivals; its flows interfere exactly as the FL transfers do.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from channel_models.rate import RateMapping, linear_to_db
from netfl.config import Scenario
from netfl.config.radio import RB_BANDWIDTH_HZ, LteRadioConfig, LteTbsConfig
from netfl.config.traffic import ConstantLoadSource, FtpSource, FullBufferSource
from netfl.features import Feature
from netfl.radio.cell import drop_uniform_area
from netfl.radio.layout import Layout, antenna_from_config, layout_from_config
from netfl.radio.link import THERMAL_NOISE_DBM_HZ, rate_per_rb_bps
from netfl.radio.lte import BackhaulLink, _leg
from netfl.radio.network import Transfer
from netfl.radio.propagation import DeviceHeights, Environment, LinkGains, drop_heights, link_gains
from netfl.radio.scheduler import Flow, FluidScheduler
from netfl.radio.traffic import FlowLog, FtpModel1, FullBuffer, constant_load
from netfl.rng import Streams

UL, DL = "ul", "dl"


def _mw(dbm: np.ndarray | float) -> np.ndarray:
    return np.power(10.0, np.asarray(dbm, dtype=float) / 10.0)


class MultiCellRadio:
    """The layout, its propagation environment and the per-RB budgets of both directions."""

    def __init__(self, scenario: Scenario, channel: Any, mappings: dict[str, RateMapping]) -> None:
        config = scenario.radio
        assert isinstance(config, LteRadioConfig)
        c = scenario.cell
        self.config, self.cell = config, c
        self.mappings = {UL: mappings["uplink"], DL: mappings["downlink"]}
        m = config.rate_mapping
        self.first_grant_s = m.ul_first_grant_latency_s if isinstance(m, LteTbsConfig) else 0.0
        self.layout: Layout = layout_from_config(c)
        self.environment = Environment(
            channel,
            config.carrier_frequency_hz,
            c.bs_height_m,
            antenna_from_config(c, config.bs_antenna_gain_dbi),
            "low" if c.o2i_model == "low_loss" else "high",
        )
        up, down = config.uplink, config.downlink
        self.n_rb = {UL: up.rb_count, DL: down.rb_count}
        self.rb_cap = {UL: float(up.flow_rb_cap), DL: float(down.flow_rb_cap)}
        self.dl_power_rb_mw = float(_mw(down.tx_power_dbm - 10 * math.log10(down.power_rbs)))
        self.noise_rb_mw = {
            UL: float(
                _mw(THERMAL_NOISE_DBM_HZ + 10 * math.log10(RB_BANDWIDTH_HZ) + up.noise_figure_db)
            ),
            DL: float(
                _mw(THERMAL_NOISE_DBM_HZ + 10 * math.log10(RB_BANDWIDTH_HZ) + down.noise_figure_db)
            ),
        }

    def drop(
        self, n: int, heights_rng: np.random.Generator, rng: np.random.Generator
    ) -> tuple[np.ndarray, DeviceHeights]:
        """Positions uniform over the layout and heights (indoor devices on floors)."""
        c = self.cell
        xy = self.layout.drop_uniform(n, c.min_distance_m, rng)
        heights = drop_heights(n, c.indoor_fraction, heights_rng, outdoor_height_m=c.ue_height_m)
        return xy, heights

    def gains(
        self,
        xy: np.ndarray,
        heights: DeviceHeights,
        los_rng: np.random.Generator,
        shadowing_rng: np.random.Generator,
    ) -> LinkGains:
        gains = link_gains(
            self.layout,
            xy,
            heights,
            self.environment,
            los_rng,
            shadowing_rng,
            out_of_range=self.config.out_of_range,
            shadowing=self.config.shadowing,
        )
        ue_gain = self.config.ue_antenna_gain_dbi
        if ue_gain:
            gains = LinkGains(gains.coupling_gain_db + ue_gain, gains.los, gains.distance_2d_m)
        return gains

    def ul_power_rb_mw(self, coupling_loss_db: np.ndarray) -> np.ndarray:
        """Per-RB transmit power of devices with these coupling losses (open-loop FPC)."""
        up = self.config.uplink
        full = up.tx_power_dbm - 10 * math.log10(up.power_rbs)
        if up.p0_dbm is None:
            return _mw(np.full(np.shape(coupling_loss_db), full))
        return _mw(np.minimum(full, up.p0_dbm + up.alpha * np.asarray(coupling_loss_db)))

    def rate_per_rb(self, sinr_linear: np.ndarray, direction: str) -> np.ndarray:
        return rate_per_rb_bps(
            self.mappings[direction], linear_to_db(sinr_linear), self.config.fast_fading
        )


class CellScheduler(FluidScheduler):
    """A cell's RBs in one direction; tells the interference state when flows start/end.

    The contribution of the next flow to open is left in :attr:`pending` by whoever
    computed its rate (the network or a background user pool), just before ``open``.
    """

    def __init__(
        self,
        env: simpy.Environment,
        n_rb: float,
        policy: Any,
        state: Interference,
        cell: int,
        direction: str,
    ) -> None:
        super().__init__(env, n_rb, policy)
        self.state, self.cell, self.direction = state, cell, direction
        self.pending: np.ndarray | None = None
        self._contribution: dict[int, np.ndarray | None] = {}

    def open(self, flow: Flow) -> simpy.Event:
        contribution, self.pending = self.pending, None
        done = super().open(flow)
        if flow.bits > 0:
            self._contribution[id(flow)] = contribution
            self.state.started(self.cell, self.direction, contribution)
        return done

    def _release(self, flow: Flow) -> None:
        super()._release(flow)
        key = id(flow)
        if key in self._contribution:
            self.state.ended(self.cell, self.direction, self._contribution.pop(key))


class Interference:
    """What the cells have in flight, and the SINR a new flow sees against it."""

    def __init__(self, radio: MultiCellRadio) -> None:
        n = radio.layout.n_cells
        self.radio = radio
        self.dl_active = np.zeros(n, dtype=np.int64)
        self.ul_count = np.zeros(n, dtype=np.int64)
        self.ul_sum_mw = np.zeros((n, n))  # [transmitting cell, victim cell]

    def started(self, cell: int, direction: str, contribution: np.ndarray | None) -> None:
        if direction == DL:
            self.dl_active[cell] += 1
        else:
            self.ul_count[cell] += 1
            if contribution is not None:
                self.ul_sum_mw[cell] += contribution

    def ended(self, cell: int, direction: str, contribution: np.ndarray | None) -> None:
        if direction == DL:
            self.dl_active[cell] -= 1
        else:
            self.ul_count[cell] -= 1
            if contribution is not None:
                self.ul_sum_mw[cell] -= contribution
            if self.ul_count[cell] == 0:
                self.ul_sum_mw[cell] = 0.0  # no rounding residue in an idle cell

    def dl_sinr(self, gain_mw: np.ndarray, cell: int) -> float:
        """Linear SINR of a downlink flow to a device with per-cell gains ``gain_mw``."""
        p = self.radio.dl_power_rb_mw
        busy = self.dl_active > 0
        busy[cell] = False
        interference = p * float(gain_mw @ busy)
        return p * float(gain_mw[cell]) / (interference + self.radio.noise_rb_mw[DL])

    def ul_sinr(self, gain_mw: np.ndarray, power_mw: float, cell: int) -> float:
        """Linear SINR at ``cell`` of an uplink flow from a device (gains, per-RB power)."""
        others = self.ul_count > 0
        others[cell] = False
        interference = float((self.ul_sum_mw[others, cell] / self.ul_count[others]).sum())
        return power_mw * float(gain_mw[cell]) / (interference + self.radio.noise_rb_mw[UL])


@dataclass(frozen=True)
class Devices:
    """The FL devices' serving cell, gains (mW) and uplink power per RB."""

    serving: np.ndarray
    gain_mw: np.ndarray  # (devices, cells)
    ul_power_mw: np.ndarray


class MultiCellNetwork:
    """The :class:`~netfl.radio.network.Network` of a multi-cell layout."""

    def __init__(
        self,
        env: simpy.Environment,
        radio: MultiCellRadio,
        state: Interference,
        devices: Devices,
        schedulers: dict[str, list[CellScheduler]],
        backhaul: list[list[BackhaulLink]],
        nominal_sinr: dict[str, np.ndarray],
    ) -> None:
        self.env, self.radio, self.state, self.devices = env, radio, state, devices
        self.schedulers, self.backhaul = schedulers, backhaul
        self.cell_site = radio.layout.cell_site
        rates = {d: radio.rate_per_rb(nominal_sinr[d], d) for d in (UL, DL)}
        self.rate_per_rb_nominal = rates
        #: Nominal rates: alone in its cell with its full RB allocation, at the nominal
        #: interference (every other cell loaded, see build_multicell).
        self.rate_ul_bps = rates[UL] * min(radio.rb_cap[UL], radio.n_rb[UL])
        self.rate_dl_bps = rates[DL] * min(radio.rb_cap[DL], radio.n_rb[DL])

    # -- the Network protocol -----------------------------------------------------------

    def start_round(self, round: int) -> None:
        return None

    def upload(self, env: simpy.Environment, client: int, bits: float) -> simpy.Process:
        return env.process(self._upload(client, bits))

    def download(self, env: simpy.Environment, client: int, bits: float) -> simpy.Process:
        return env.process(self._download([client], bits, multicast=False))

    def multicast(self, env: simpy.Environment, clients: list[int], bits: float) -> simpy.Process:
        return env.process(self._download(list(clients), bits, multicast=True))

    def features(self, clients: np.ndarray) -> dict[str, np.ndarray]:
        """``bandwidth_hz``: the uplink RBs a client gets alone in its cell x 180 kHz."""
        rbs = min(self.radio.rb_cap[UL], self.radio.n_rb[UL])
        return {Feature.BANDWIDTH_HZ: np.full(len(clients), rbs * RB_BANDWIDTH_HZ)}

    def summary(self) -> dict[str, float]:
        """Time-average RB utilisation per direction, averaged over the cells."""
        out: dict[str, float] = {}
        for name in (UL, DL):
            cells = self.schedulers[name]
            out[f"rb_utilisation_{name}"] = float(np.mean([s.utilisation() for s in cells]))
            out[f"rb_utilisation_{name}_fl"] = float(
                np.mean([s.utilisation(fl_only=True) for s in cells])
            )
        return out

    # -- transfers ----------------------------------------------------------------------

    def _ul_flow(self, client: int, bits: float) -> tuple[CellScheduler, Flow]:
        d, cell = self.devices, int(self.devices.serving[client])
        gain, power = d.gain_mw[client], float(d.ul_power_mw[client])
        sinr = self.state.ul_sinr(gain, power, cell)
        rate = float(self.radio.rate_per_rb(np.array(sinr), UL))
        scheduler = self.schedulers[UL][cell]
        scheduler.pending = power * gain
        return scheduler, Flow(bits, rate, self.radio.rb_cap[UL], client=client)

    def _upload(self, client: int, bits: float) -> Generator[simpy.Event, Any, Transfer | None]:
        try:
            if self.radio.first_grant_s > 0:  # the first uplink grant (netfl.radio.air)
                yield self.env.timeout(self.radio.first_grant_s)
            scheduler, flow = self._ul_flow(client, bits)
            yield from _leg(scheduler, flow)
            for link in self.backhaul[int(self.cell_site[self.devices.serving[client]])]:
                yield from link.carry(bits)
        except simpy.Interrupt:
            return None
        return Transfer(client, bits, flow.start_s, self.env.now)

    def _download(
        self, clients: list[int], bits: float, *, multicast: bool
    ) -> Generator[simpy.Event, Any, Any]:
        if not clients:
            return {}
        by_cell: dict[int, list[int]] = {}
        for c in clients:
            by_cell.setdefault(int(self.devices.serving[c]), []).append(c)
        procs = [
            self.env.process(self._cell_download(cell, members, bits))
            for cell, members in by_cell.items()
        ]
        try:
            results = yield self.env.all_of(procs)
        except simpy.Interrupt:
            for proc in procs:
                if proc.is_alive:
                    proc.interrupt("cancelled")
            return None
        transfers: dict[int, Transfer] = {}
        for proc in procs:
            transfers.update(results[proc])
        return transfers if multicast else transfers[clients[0]]

    def _cell_download(
        self, cell: int, clients: list[int], bits: float
    ) -> Generator[simpy.Event, Any, dict[int, Transfer]]:
        """One downlink flow in ``cell`` at the rate of its worst client (multicast)."""
        start = math.nan
        try:
            for link in reversed(self.backhaul[int(self.cell_site[cell])]):
                first = yield from link.carry(bits)
                start = first if math.isnan(start) else start
            gains = self.devices.gain_mw[clients]
            sinr = min(self.state.dl_sinr(g, cell) for g in gains)
            rate = float(self.radio.rate_per_rb(np.array(sinr), DL))
            flow = Flow(bits, rate, self.radio.rb_cap[DL], client=clients[0])
            yield from _leg(self.schedulers[DL][cell], flow)
        except simpy.Interrupt:
            return {}
        start = flow.start_s if math.isnan(start) else start
        return {c: Transfer(c, bits, start, self.env.now) for c in clients}


class CellUsers:
    """Background users of one cell and direction, drawn in batches, served by the cell.

    ``next()`` (the :class:`~netfl.radio.traffic.UserPool` interface) evaluates the user's
    rate at the moment its flow starts and leaves its interference contribution for the
    cell's scheduler.
    """

    def __init__(
        self,
        radio: MultiCellRadio,
        state: Interference,
        scheduler: CellScheduler,
        rng: np.random.Generator,
        batch: int = 256,
    ) -> None:
        self.radio, self.state, self.scheduler, self.rng = radio, state, scheduler, rng
        self.batch = batch
        self._gains: list[np.ndarray] = []

    def _refill(self) -> None:
        layout, cell = self.radio.layout, self.scheduler.cell
        site = int(layout.cell_site[cell])
        for _ in range(100):
            c = self.radio.cell
            x, y = drop_uniform_area(self.batch, layout.site_radius_m, c.min_distance_m, self.rng)
            xy = layout.site_xy_m[site] + np.column_stack([x, y])
            heights = drop_heights(
                self.batch, c.indoor_fraction, self.rng, outdoor_height_m=c.ue_height_m
            )
            gains = self.radio.gains(xy, heights, self.rng, self.rng)
            mine = gains.serving_cell == cell
            self._gains.extend(_mw(gains.coupling_gain_db[mine]))
            if self._gains:
                return
        raise ValueError(f"no background user of cell {cell} is served by it")

    def next(self) -> tuple[float, Callable[[int], float] | None]:
        cell = self.scheduler.cell
        for _ in range(1000):
            if not self._gains:
                self._refill()
            gain = self._gains.pop()
            if self.scheduler.direction == DL:
                sinr = self.state.dl_sinr(gain, cell)
                contribution = None
            else:
                power = float(self.radio.ul_power_rb_mw(-10 * np.log10(gain[cell])))
                sinr = self.state.ul_sinr(gain, power, cell)
                contribution = power * gain
            rate = float(self.radio.rate_per_rb(np.array(sinr), self.scheduler.direction))
            if rate > 0:
                self.scheduler.pending = contribution
                return rate, None
        raise ValueError(f"no background user of cell {cell} has coverage")


def nominal_sinr(radio: MultiCellRadio, devices: Devices) -> dict[str, np.ndarray]:
    """Each device's SINR at the nominal load: downlink, every other cell transmitting;
    uplink, every other cell with one transmitting device whose interference is the mean of
    that cell's FL devices' (cells without FL devices: none)."""
    n_cells = radio.layout.n_cells
    gain, serving = devices.gain_mw, devices.serving
    rows = np.arange(len(serving))
    own = gain[rows, serving]
    p_dl = radio.dl_power_rb_mw
    dl = p_dl * own / (p_dl * (gain.sum(axis=1) - own) + radio.noise_rb_mw[DL])
    contribution = devices.ul_power_mw[:, None] * gain  # (devices, victim cells)
    sums = np.zeros((n_cells, n_cells))
    np.add.at(sums, serving, contribution)
    counts = np.bincount(serving, minlength=n_cells)
    mean = sums / np.maximum(counts, 1)[:, None]
    at_victim = mean.sum(axis=0) - np.diagonal(mean)  # interference at each cell from the others
    ul = devices.ul_power_mw * own / (at_victim[serving] + radio.noise_rb_mw[UL])
    return {UL: ul, DL: dl}


def build_multicell(
    scenario: Scenario,
    env: simpy.Environment,
    streams: Streams,
    timeline: Any,
    n: int,
    channel: Any,
    mappings: dict[str, RateMapping],
    backhaul: Callable[[int], list[BackhaulLink]],
) -> tuple[MultiCellNetwork, dict[str, Any], list[Any]]:
    """The network for ``n`` FL devices, their ``clients.parquet`` columns and the
    background sources (``backhaul(site)``: the links from a site to the aggregator)."""
    config = scenario.radio
    assert isinstance(config, LteRadioConfig)
    radio = MultiCellRadio(scenario, channel, mappings)
    xy, heights = radio.drop(n, streams.get("radio.heights"), streams.get("radio.drop"))
    gains = radio.gains(xy, heights, streams.get("radio.los"), streams.get("radio.shadowing"))
    serving = gains.serving_cell
    coupling_loss = gains.coupling_loss_db
    devices = Devices(serving, _mw(gains.coupling_gain_db), radio.ul_power_rb_mw(coupling_loss))
    state = Interference(radio)
    links = {UL: config.uplink, DL: config.downlink}
    schedulers = {
        d: [
            CellScheduler(env, radio.n_rb[d], links[d].scheduler, state, cell, d)
            for cell in range(radio.layout.n_cells)
        ]
        for d in (UL, DL)
    }
    sinr = nominal_sinr(radio, devices)
    network = MultiCellNetwork(
        env,
        radio,
        state,
        devices,
        schedulers,
        [backhaul(site) for site in range(radio.layout.n_sites)],
        sinr,
    )
    sources = _traffic(scenario, radio, state, schedulers, streams, timeline)
    site = radio.layout.cell_site[serving]
    offsets = radio.layout.site_offsets_m(xy)[np.arange(n), site]
    columns = {
        "x_m": xy[:, 0],
        "y_m": xy[:, 1],
        "distance_m": np.hypot(offsets[:, 0], offsets[:, 1]),
        "los": gains.los[np.arange(n), site],
        "cell": serving.astype(np.int32),
        "indoor": heights.indoor,
        "ue_height_m": heights.height_m,
        "coupling_loss_db": coupling_loss,
        "snr_ul_db": linear_to_db(
            devices.ul_power_mw * devices.gain_mw[np.arange(n), serving] / radio.noise_rb_mw[UL]
        ),
        "sinr_ul_db": linear_to_db(sinr[UL]),
        "sinr_dl_db": linear_to_db(sinr[DL]),
    }
    return network, columns, sources


def _traffic(
    scenario: Scenario,
    radio: MultiCellRadio,
    state: Interference,
    schedulers: dict[str, list[CellScheduler]],
    streams: Streams,
    timeline: Any,
) -> list[Any]:
    """Every background source runs in every cell, from per-cell streams."""
    log = FlowLog(timeline if scenario.traffic.record_flows else None)
    sources: list[Any] = []
    for index, source in enumerate(scenario.traffic.sources):
        direction = UL if source.direction == "uplink" else DL
        for cell, scheduler in enumerate(schedulers[direction]):
            if isinstance(source, ConstantLoadSource):
                constant_load(scheduler, source.load_fraction)
                continue
            users = CellUsers(
                radio, state, scheduler, streams.get(f"traffic.{index}.cell{cell}.users")
            )
            if isinstance(source, FullBufferSource):
                sources.append(
                    FullBuffer(
                        scheduler,
                        users=source.users,
                        pool=users,
                        rb_cap=source.rb_per_flow,
                        log=log,
                    )
                )
            elif isinstance(source, FtpSource):
                ftp = FtpModel1(
                    scheduler.env,
                    scheduler,
                    arrival_rate_hz=source.arrival_rate_hz,
                    sizes=source.file_size_bits.sample,
                    users=users,
                    rng=streams.get(f"traffic.{index}.cell{cell}.arrivals"),
                    rb_cap=source.rb_per_flow,
                    log=log,
                )
                ftp.start()
                sources.append(ftp)
    return sources
