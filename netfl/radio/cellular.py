"""The cellular network as the FL protocol sees it: the one radio engine's transfers.

An upload is one flow on the uplink scheduler of the device's serving cell, then the
model's trip over its site's backhaul links to the aggregator (if it is not at the BS); a
download is the reverse; a multicast (FedCS's distribution) is one downlink flow per cell
involved, which its clients there receive at the rate of the worst of them. Each flow's
SINR is evaluated against what the cells emit when it starts (:class:`netfl.radio.cells.
Cells`) and follows them while it is in flight through the radio update
(:mod:`netfl.radio.update`). A device's rate per RB is scaled each round by the MAB-CS
throughput fluctuation when it is on (Yoshida et al. 2020 eqs. (8), (11)), and a
transfer draws one Rayleigh fade under ``fast_fading: rayleigh_block``. Interrupting a
transfer process cancels the flow and releases its RBs at once.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy

from channel_models import power_control
from netfl.features import Feature
from netfl.fluctuation import sample_mab_cs
from netfl.radio.cells import DL, UL, Cells, RadioLink
from netfl.radio.network import Handover, LinkFailure, LinkLost, Transfer
from netfl.radio.scheduler import Flow
from netfl.radio.system import RadioSystem
from netfl.radio.topology import BackhaulLink, carry

if TYPE_CHECKING:
    from netfl.radio.update import Moving, RadioUpdate

_LONG = {UL: "uplink", DL: "downlink"}


@dataclass(frozen=True)
class DeviceLinks:
    """The FL devices' serving cells, coupling gains and powers, and their SINR and rate
    per RB alone (no other cell transmitting) and at the nominal load.

    Uplink: ``ul_power_db`` is a device's power per RB within its power limit, and the
    ``alone`` figures hold there (a transfer's start, before the scheduler lowers the power
    per RB of a power-limited device holding more RBs); the ``nominal`` figures are those
    of a transfer alone in its cell on its full allocation (its cap, or the band)."""

    serving: np.ndarray  # (devices,)
    gain_db: np.ndarray  # (devices, cells)
    ul_power_db: np.ndarray  # (devices,)
    alone_sinr_db: dict[str, np.ndarray]
    alone_rate_per_rb_bps: dict[str, np.ndarray]
    nominal_sinr_db: dict[str, np.ndarray]
    nominal_rate_per_rb_bps: dict[str, np.ndarray]


class CellularNetwork:
    """The :class:`~netfl.radio.network.Network` of a layout's cells."""

    def __init__(
        self,
        env: simpy.Environment,
        system: RadioSystem,
        cells: Cells,
        devices: DeviceLinks,
        backhaul: list[list[BackhaulLink]],
        *,
        fading_rng: np.random.Generator | None = None,
        fluctuation_eta: float | None = None,
        fluctuation_rng: np.random.Generator | None = None,
        update: RadioUpdate | None = None,
    ) -> None:
        self.env, self.system, self.cells, self.devices = env, system, cells, devices
        #: The radio update that keeps this network's links in flight current.
        self.update = update
        #: Whether devices move (transfers then follow them through handovers), and what
        #: moves them.
        self.mobile = False
        self.motion: Moving | None = None
        self._transfers: dict[int, set[simpy.Process]] = {}
        self._detached: dict[int, simpy.Event] = {}
        self.backhaul = backhaul
        self.cell_site = system.layout.cell_site
        self.fading_rng = fading_rng
        self.fluctuation_eta, self.fluctuation_rng = fluctuation_eta, fluctuation_rng
        rates = devices.nominal_rate_per_rb_bps
        #: Nominal rates: alone in its cell with its full RB allocation, the other cells
        #: at the nominal load (docs/radio.md).
        self.rate_ul_bps = rates[UL] * min(system.rb_cap[UL], system.n_rb[UL])
        self.rate_dl_bps = rates[DL] * min(system.rb_cap[DL], system.n_rb[DL])
        #: This round's throughput factor per client (MAB-CS fluctuation; 1 when off).
        self.round_factor = np.ones(len(self.rate_ul_bps))
        self._diversity: dict[tuple[str, int], Any] = {}
        # Per-flow constants, read twice a client update: whether a direction's transfers
        # wait for their slots (TDD), whether a flow draws a block fade, and whether flows
        # have a multi-user diversity gain (proportional fair under Rayleigh fading).
        self._slotted = {d: system.air.expected_wait_s[_LONG[d]] > 0.0 for d in (UL, DL)}
        self._block_fading = system.config.fast_fading == "rayleigh_block"
        self._diverse = {d: system.diversity(d, 0.0) is not None for d in (UL, DL)}

    # -- the Network protocol -----------------------------------------------------------

    def start_round(self, round: int) -> None:
        """Draw this round's throughput of every client (eq. (8), mu = theta_k)."""
        if self.fluctuation_eta is None or self.fluctuation_rng is None:
            return
        theta = self.rate_ul_bps
        positive = theta > 0
        drawn = sample_mab_cs(theta[positive], self.fluctuation_eta, self.fluctuation_rng)
        self.round_factor = np.ones_like(theta)
        self.round_factor[positive] = drawn / theta[positive]

    def upload(self, env: simpy.Environment, client: int, bits: float) -> simpy.Process:
        return env.process(self._upload(client, bits))

    def download(self, env: simpy.Environment, client: int, bits: float) -> simpy.Process:
        return env.process(self._download([client], bits, multicast=False))

    def multicast(self, env: simpy.Environment, clients: list[int], bits: float) -> simpy.Process:
        return env.process(self._download(list(clients), bits, multicast=True))

    def features(self, clients: np.ndarray) -> dict[str, np.ndarray]:
        """Per-candidate context reported in the resource request.

        ``bandwidth_hz``: the uplink bandwidth the client is allocated when it transmits
        alone (its RB cap x the RB bandwidth), the B_{t,n} of RBCS-F's context (Huang et
        al. 2021 eq. (14)).
        """
        system = self.system
        rbs = min(system.rb_cap[UL], system.n_rb[UL])
        features: dict[str, np.ndarray] = {
            Feature.BANDWIDTH_HZ: np.full(len(clients), rbs * system.air.rb_bandwidth_hz)
        }
        if self.motion is not None:
            clients = np.asarray(clients, dtype=np.int64)
            counts = self.motion.client_totals(len(self.devices.serving))["n_handovers"]
            features[Feature.SPEED_MPS] = self.motion.speed_mps[clients]
            features[Feature.SERVING_CELL] = self.devices.serving[clients].astype(float)
            features[Feature.HANDOVERS] = counts[clients].astype(float)
        return features

    def covered(self, clients: np.ndarray) -> np.ndarray:
        """Which ``clients`` have coverage: a rate above 0 in both directions when alone in
        the network. A device without it is out of service (not connected): it never
        answers a resource request (netfl/fl/request.py), instead of being selected for a
        transfer that never ends. A moving device counts as covered: its links change, and
        losing them is a radio link failure."""
        alone = self.devices.alone_rate_per_rb_bps
        clients = np.asarray(clients, dtype=np.int64)
        covered = (alone[UL][clients] > 0) & (alone[DL][clients] > 0)
        if self.motion is not None:
            covered |= self.motion.speed_mps[clients] > 0
        return covered

    def client_totals(self) -> dict[str, np.ndarray]:
        """Per-client radio counters for ``clients.parquet`` (handovers of moving devices)."""
        if self.motion is None:
            return {}
        return self.motion.client_totals(len(self.devices.serving))

    def summary(self) -> dict[str, float]:
        """Radio figures for ``summary.json``: time-average RB utilisation per direction,
        averaged over the cells, and the background's in the cells that carried FL."""
        out: dict[str, float] = {}
        for name in (UL, DL):
            out[f"rb_utilisation_{name}"] = self.cells.utilisation(name)
            out[f"rb_utilisation_{name}_fl"] = self.cells.utilisation(name, fl_only=True)
            out[f"rb_utilisation_{name}_background"] = self.cells.background_utilisation(name)
        return out

    # -- flows --------------------------------------------------------------------------

    def _flow(self, direction: str, client: int, bits: float) -> Flow:
        """A flow of ``client`` in ``direction`` at the SINR it sees now."""
        system, d = self.system, self.devices
        cell = int(d.serving[client])
        power = float(d.ul_power_db[client]) if direction == UL else system.dl_power_db
        fade = 1.0
        if self._block_fading:
            assert self.fading_rng is not None
            fade = float(self.fading_rng.exponential())
        scale = float(self.round_factor[client])
        limit = system.power_limit_rb(direction, power)
        link = RadioLink(cell, direction, d.gain_db[client], power, fade, scale, client, -1, limit)
        rate, sinr, diversity = self._rate(link)
        return Flow(
            bits,
            rate,
            system.rb_cap[direction],
            client=client,
            diversity=diversity,
            link=link,
            power_limit_rb=limit,
            sinr_db=sinr,
        )

    def _rate(self, link: RadioLink) -> tuple[float, float, Any]:
        """A link's rate per RB, SINR and diversity gain against what the cells emit now."""
        system, d, direction = self.system, self.devices, link.direction
        interference = self.cells.link_interference_mw(link)
        alone = interference == 0.0 and not self.mobile
        if alone:  # the precomputed rate of a static device (an isolated cell's flows)
            sinr = float(d.alone_sinr_db[direction][link.device])
            rate = float(d.alone_rate_per_rb_bps[direction][link.device])
        else:
            sinr = float(system.sinr_db(direction, np.array(link.signal_db), interference))
            rate = float(system.rate_per_rb(direction, np.array(sinr)))
        if self._block_fading:
            rate = system.faded_rate_per_rb(direction, sinr, link.fade)
        diversity = self._diversity_of(direction, link.device, sinr, alone)
        return rate * link.scale, sinr, diversity

    def _diversity_of(self, direction: str, client: int, sinr: float, alone: bool) -> Any:
        if not self._diverse[direction]:  # no multi-user diversity gain in this direction
            return None
        if not alone:
            return self.system.diversity(direction, sinr)
        # Cached only where there is a gain: a cache of Nones (equal sharing, no fading)
        # grew by the devices ever served, a dict the cyclic GC walked at every collection.
        key = (direction, client)
        gain = self._diversity.get(key)
        if gain is None:
            gain = self.system.diversity(direction, sinr)
            if gain is not None:
                self._diversity[key] = gain
        return gain

    def _alone_bps(self, direction: str, flow: Flow) -> float:
        """The flow's rate alone in its cell on its full allocation (beyond its power limit,
        at the power per RB its maximum power leaves)."""
        rbs = min(flow.rb_cap, self.system.n_rb[direction])
        if rbs <= flow.power_limit_rb:
            return flow.rate_per_rb_bps * rbs
        drop = power_control.power_drop_db(rbs, flow.power_limit_rb)
        return float(self.system.limited_rates([flow], np.atleast_1d(drop))[0]) * rbs

    def _slot_wait(self, direction: str, flow: Flow) -> Generator[simpy.Event, Any, None]:
        """TDD: wait for the direction's slots (:mod:`netfl.radio.air`); none in FDD/LTE."""
        system = self.system
        alone_bps = self._alone_bps(direction, flow)
        if alone_bps <= 0:
            return
        delay = system.air.access_delay_s(_LONG[direction], flow.bits / alone_bps)
        if delay > 0:
            yield self.env.timeout(delay)
            # The interference may have moved meanwhile: start at the SINR of now.
            rate, flow.sinr_db, diversity = self._rate(flow.link)
            flow.rate_per_rb_bps = rate
            flow.diversity = diversity if flow.diversity is not None else None

    def _upload(self, client: int, bits: float) -> Generator[simpy.Event, Any, Transfer | None]:
        try:
            return (yield from self.upload_steps(client, bits))
        except simpy.Interrupt:
            return None  # the leg in progress released its share

    def upload_steps(self, client: int, bits: float) -> Generator[simpy.Event, Any, Transfer]:
        """:meth:`upload` as steps of the caller's own process (``yield from``): no
        process of its own, two SimPy events fewer a transfer. Interrupting the caller
        cancels the transfer (the leg in progress releases its share) and reaches it."""
        grant_s = self.system.air.first_grant_s  # SR -> grant -> PUSCH, once per upload
        if grant_s > 0:
            yield self.env.timeout(grant_s)
        start, cell = yield from self._leg(UL, client, bits)
        for link in self.backhaul[int(self.cell_site[cell])]:
            if not link.free:
                yield from link.carry(bits)
        return Transfer(client, bits, start, self.env.now)

    def download_steps(self, client: int, bits: float) -> Generator[simpy.Event, Any, Transfer]:
        """:meth:`download` as steps of the caller's own process (see :meth:`upload_steps`):
        the backhaul, then the client's own flow (:meth:`_cell_download` for one client)."""
        return (yield from self._unicast_down(int(self.devices.serving[client]), client, bits))

    # -- the radio leg, through handovers -----------------------------------------------

    def _leg(
        self, direction: str, client: int, bits: float, flow: Flow | None = None
    ) -> Generator[simpy.Event, Any, tuple[float, int]]:
        """Carry ``bits`` of ``client`` on its serving cell; returns when the first bit
        flowed and the cell the last one left from. A moving device's transfer follows it:
        at a handover the bits left continue in the target cell once the interruption is
        over; a radio link failure fails the transfer with :class:`LinkLost`."""
        flow = flow if flow is not None else self._flow(direction, client, bits)
        if not self.mobile:  # static devices: one flow, the same events as ever
            if self._slotted[direction]:
                yield from self._slot_wait(direction, flow)
            yield from carry(self.cells.schedulers[direction][flow.link.cell], flow)
            return flow.start_s, flow.link.cell
        me = self.env.active_process
        assert me is not None  # called from a transfer process
        transfers = self._transfers.setdefault(client, set())
        transfers.add(me)
        start, resume_s = math.nan, -math.inf
        try:
            while True:
                try:
                    if self.env.now < resume_s:
                        yield self.env.timeout(resume_s - self.env.now)
                    while client in self._detached:
                        yield self._detached[client]
                    if flow is None:
                        flow = self._flow(direction, client, bits)
                    yield from self._slot_wait(direction, flow)
                    yield from carry(self.cells.schedulers[direction][flow.link.cell], flow)
                    return (flow.start_s if math.isnan(start) else start), flow.link.cell
                except simpy.Interrupt as interrupt:
                    cause = interrupt.cause
                    if isinstance(cause, Handover):
                        if flow is not None:
                            bits = flow.remaining_bits
                            start = flow.start_s if math.isnan(start) else start
                        flow, resume_s = None, cause.resume_s
                        continue
                    if isinstance(cause, LinkFailure):
                        raise LinkLost(client) from None
                    raise
        finally:
            transfers.discard(me)

    def hand_over(self, devices: np.ndarray, targets: np.ndarray, resume_s: float) -> None:
        """``devices`` are served by ``targets`` from now on; their transfers in flight
        pause until ``resume_s`` and continue there (:meth:`_leg`)."""
        self._serve(devices, targets)
        transfers = self._transfers
        for device in devices.tolist():
            for proc in list(transfers.get(device, ())):
                if proc.is_alive:
                    proc.interrupt(Handover(resume_s))

    def lose_link(self, device: int) -> None:
        """Radio link failure: ``device``'s transfers in flight are lost and new ones wait
        until it is attached again (:meth:`attach`)."""
        self._detached.setdefault(device, self.env.event())
        for proc in list(self._transfers.get(device, ())):
            if proc.is_alive:
                proc.interrupt(LinkFailure())

    def attach(self, device: int, cell: int) -> None:
        """``device`` is attached again, to ``cell``, after a radio link failure."""
        self._serve(device, cell)
        event = self._detached.pop(device, None)
        if event is not None:
            event.succeed()

    def _serve(self, device: int | np.ndarray, cell: int | np.ndarray) -> None:
        d = self.devices
        d.serving[device] = cell
        d.ul_power_db[device] = self.system.ul_power_db(-d.gain_db[device, cell])

    def _download(
        self, clients: list[int], bits: float, *, multicast: bool
    ) -> Generator[simpy.Event, Any, Any]:
        if not clients:
            return {}
        by_cell: dict[int, list[int]] = {}
        for c in clients:
            by_cell.setdefault(int(self.devices.serving[c]), []).append(c)
        if len(by_cell) == 1:  # one cell: no sub-process, the same events as one flow
            ((cell, members),) = by_cell.items()
            try:
                transfers = yield from self._cell_download(cell, members, bits, multicast)
            except simpy.Interrupt:
                return None  # the leg in progress released its share
            return transfers if multicast else transfers[clients[0]]
        procs = [
            self.env.process(self._cell_process(cell, members, bits, multicast))
            for cell, members in by_cell.items()
        ]
        try:
            results = yield self.env.all_of(procs)
        except simpy.Interrupt:
            for proc in procs:
                if proc.is_alive:
                    proc.interrupt("cancelled")
            return None
        out: dict[int, Transfer] = {}
        for proc in procs:
            out.update(results[proc])
        return out

    def _cell_process(
        self, cell: int, clients: list[int], bits: float, multicast: bool
    ) -> Generator[simpy.Event, Any, dict[int, Transfer]]:
        try:
            return (yield from self._cell_download(cell, clients, bits, multicast))
        except simpy.Interrupt:
            return {}

    def _backhaul_down(self, cell: int, bits: float) -> Generator[simpy.Event, Any, float]:
        """The model down the backhaul to ``cell``'s site; returns when its first bit
        flowed (NaN: no link on the way)."""
        start = math.nan
        for link in reversed(self.backhaul[int(self.cell_site[cell])]):
            if link.free:  # carry would return now, and yield nothing
                first = self.env.now
            else:
                first = yield from link.carry(bits)
            start = first if math.isnan(start) else start
        return start

    def _unicast_down(
        self, cell: int, client: int, bits: float
    ) -> Generator[simpy.Event, Any, Transfer]:
        """The backhaul to ``cell``, then the client's own flow, which follows a moving
        device through handovers."""
        start = yield from self._backhaul_down(cell, bits)
        first, _ = yield from self._leg(DL, client, bits, self._flow(DL, client, bits))
        return Transfer(client, bits, first if math.isnan(start) else start, self.env.now)

    def _cell_download(
        self, cell: int, clients: list[int], bits: float, multicast: bool
    ) -> Generator[simpy.Event, Any, dict[int, Transfer]]:
        """One downlink flow in ``cell`` at the rate of its worst client (multicast)."""
        if len(clients) == 1:
            return {clients[0]: (yield from self._unicast_down(cell, clients[0], bits))}
        start = yield from self._backhaul_down(cell, bits)
        flows = [self._flow(DL, c, bits) for c in clients]
        # Multicast: one transmission at the worst client's rate reaches everyone; it stays
        # in its cell while a member moves (docs/mobility.md).
        flow = min(flows, key=lambda f: f.rate_per_rb_bps)
        flow.diversity = None if multicast else flow.diversity
        yield from self._slot_wait(DL, flow)
        yield from carry(self.cells.schedulers[DL][cell], flow)
        first = flow.start_s
        start = first if math.isnan(start) else start
        return {c: Transfer(c, bits, start, self.env.now) for c in clients}
