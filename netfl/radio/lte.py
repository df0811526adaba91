"""The LTE cell as a :class:`~netfl.radio.network.Network`: transfers share resource blocks.

An upload is one flow on the uplink :class:`~netfl.radio.scheduler.FluidScheduler`, then
the model's trip over the backhaul links to the aggregator (if it is not at the BS); a
download is the reverse; a multicast is one downlink flow that every selected client
receives at the rate of the worst of them (FedCS's distribution step). Each flow's rate
per RB comes from the client's link budget (:mod:`netfl.radio.link`), scaled each round
by the MAB-CS throughput fluctuation when it is on (Yoshida et al. 2020 eqs. (8),
(11)). Interrupting a transfer process cancels the flow and releases its RBs at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from channel_models.rate import RateMapping, db_to_linear
from netfl.features import Feature
from netfl.fluctuation import sample_mab_cs
from netfl.radio.air import AirInterface
from netfl.radio.link import FastFading, diversity_gain
from netfl.radio.network import Transfer
from netfl.radio.scheduler import Flow, FluidScheduler


def _leg(scheduler: FluidScheduler, flow: Flow) -> Generator[simpy.Event, Any, Flow]:
    """Carry ``flow`` on ``scheduler`` (the radio or a backhaul link); an interrupt
    cancels it, releasing its share at once, and propagates."""
    done = scheduler.open(flow)
    try:
        yield done
    except simpy.Interrupt:
        scheduler.close(flow)
        raise
    return flow


class BackhaulLink:
    """A wired link: latency plus a capacity shared equally by the models crossing it."""

    def __init__(self, env: simpy.Environment, latency_s: float, capacity_bps: float) -> None:
        if latency_s < 0 or not capacity_bps > 0:
            raise ValueError("a backhaul link needs latency_s >= 0 and capacity_bps > 0")
        self.env = env
        self.latency_s = latency_s
        self.capacity_bps = capacity_bps
        self.scheduler = FluidScheduler(env, 1.0, "equal") if math.isfinite(capacity_bps) else None

    def carry(self, bits: float) -> Generator[simpy.Event, Any, float]:
        """Send ``bits`` over the link (store-and-forward); returns when bits first flowed."""
        start = self.env.now
        if self.scheduler is not None:
            flow = yield from _leg(self.scheduler, Flow(bits, self.capacity_bps, 1.0))
            start = flow.start_s
        if self.latency_s > 0:
            yield self.env.timeout(self.latency_s)
        return start


@dataclass(frozen=True)
class Channels:
    """Per-client radio quantities, index = client id."""

    sinr_ul_db: np.ndarray
    sinr_dl_db: np.ndarray
    rate_per_rb_ul_bps: np.ndarray
    rate_per_rb_dl_bps: np.ndarray


class LteNetwork:
    """Uplink and downlink schedulers plus the backhaul path to the aggregator."""

    def __init__(
        self,
        env: simpy.Environment,
        *,
        uplink: FluidScheduler,
        downlink: FluidScheduler,
        channels: Channels,
        mappings: dict[str, RateMapping],
        rb_cap_ul: float,
        rb_cap_dl: float,
        fast_fading: FastFading = "none",
        fading_rng: np.random.Generator | None = None,
        fluctuation_eta: float | None = None,
        fluctuation_rng: np.random.Generator | None = None,
        backhaul: list[BackhaulLink] | None = None,
        air: AirInterface | None = None,
    ) -> None:
        self.env = env
        self.uplink, self.downlink = uplink, downlink
        self.channels = channels
        self.mappings = mappings  # per direction, "uplink"/"downlink"
        self.rb_cap_ul, self.rb_cap_dl = rb_cap_ul, rb_cap_dl
        self.fast_fading = fast_fading
        self.fading_rng = fading_rng
        self.fluctuation_eta = fluctuation_eta
        self.fluctuation_rng = fluctuation_rng
        self.backhaul = backhaul or []
        self.air = air or AirInterface()
        #: Nominal rates: the client alone in the cell with its full RB allocation.
        self.rate_ul_bps = channels.rate_per_rb_ul_bps * min(rb_cap_ul, uplink.n_rb)
        self.rate_dl_bps = channels.rate_per_rb_dl_bps * min(rb_cap_dl, downlink.n_rb)
        #: This round's throughput factor per client (MAB-CS fluctuation; 1 when off).
        self.round_factor = np.ones(len(self.rate_ul_bps))
        self._diversity: dict[tuple[str, int], Callable[[int], float]] = {}

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

    # -- extras -------------------------------------------------------------------------

    def features(self, clients: np.ndarray) -> dict[str, np.ndarray]:
        """Per-candidate context reported in the resource request.

        ``bandwidth_hz``: the uplink bandwidth the client is allocated when it transmits
        alone (its RB cap x 180 kHz), the B_{t,n} of RBCS-F's context (Huang et al. 2021 eq. (14)).
        """
        rbs = min(self.rb_cap_ul, self.uplink.n_rb)
        return {Feature.BANDWIDTH_HZ: np.full(len(clients), rbs * self.air.rb_bandwidth_hz)}

    def summary(self) -> dict[str, float]:
        """Radio figures for ``summary.json``: time-average RB utilisation per direction."""
        out: dict[str, float] = {}
        for name, sched in (("ul", self.uplink), ("dl", self.downlink)):
            out[f"rb_utilisation_{name}"] = sched.utilisation()
            out[f"rb_utilisation_{name}_fl"] = sched.utilisation(fl_only=True)
        return out

    # -- transfers ----------------------------------------------------------------------

    def _flow(self, direction: str, client: int, bits: float) -> Flow:
        if direction == "ul":
            sinr_db, base, cap, scheduler = (
                self.channels.sinr_ul_db,
                self.channels.rate_per_rb_ul_bps,
                self.rb_cap_ul,
                self.uplink,
            )
        else:
            sinr_db, base, cap, scheduler = (
                self.channels.sinr_dl_db,
                self.channels.rate_per_rb_dl_bps,
                self.rb_cap_dl,
                self.downlink,
            )
        rate = float(base[client])
        diversity = None
        if self.fast_fading == "rayleigh_block":
            assert self.fading_rng is not None
            fade = self.fading_rng.exponential()
            sinr = db_to_linear(sinr_db[client]) * fade
            direction_name = "uplink" if direction == "ul" else "downlink"
            mapping = self.mappings[direction_name]
            rate = float(mapping.rate_bps(sinr, self.air.rb_bandwidth_hz))
            rate *= self.air.rate_factor(direction_name)
        elif self.fast_fading == "rayleigh" and scheduler.policy == "proportional_fair":
            # Multi-user diversity exists only under proportional fair (as for background
            # users, build.CellRadio.user_draw); other policies would multiply by 1.
            key = (direction, client)
            if key not in self._diversity:
                self._diversity[key] = diversity_gain(
                    self.mappings["uplink" if direction == "ul" else "downlink"],
                    float(db_to_linear(sinr_db[client])),
                )
            diversity = self._diversity[key]
        rate *= float(self.round_factor[client])
        return Flow(bits, rate, cap, client=client, diversity=diversity)

    def _slot_wait(
        self, direction: str, flow: Flow, scheduler: FluidScheduler
    ) -> Generator[simpy.Event, Any, None]:
        """TDD: wait for the direction's slots (:mod:`netfl.radio.air`); none in FDD/LTE."""
        alone_bps = flow.rate_per_rb_bps * min(flow.rb_cap, scheduler.n_rb)
        if alone_bps <= 0:
            return
        delay = self.air.access_delay_s(direction, flow.bits / alone_bps)
        if delay > 0:
            yield self.env.timeout(delay)

    def _upload(self, client: int, bits: float) -> Generator[simpy.Event, Any, Transfer | None]:
        flow = self._flow("ul", client, bits)
        try:
            yield from self._slot_wait("uplink", flow, self.uplink)
            yield from _leg(self.uplink, flow)
            for link in self.backhaul:
                yield from link.carry(bits)
        except simpy.Interrupt:
            return None  # the leg in progress released its share
        return Transfer(client, bits, flow.start_s, self.env.now)

    def _download(
        self, clients: list[int], bits: float, *, multicast: bool
    ) -> Generator[simpy.Event, Any, Any]:
        if not clients:
            return {}
        try:
            start = math.nan
            for link in reversed(self.backhaul):
                first = yield from link.carry(bits)
                start = first if math.isnan(start) else start
            flows = [self._flow("dl", c, bits) for c in clients]
            # Multicast: one transmission at the worst client's rate reaches everyone.
            flow = min(flows, key=lambda f: f.rate_per_rb_bps)
            flow.diversity = None if multicast and len(flows) > 1 else flow.diversity
            yield from self._slot_wait("downlink", flow, self.downlink)
            yield from _leg(self.downlink, flow)
        except simpy.Interrupt:
            return None  # the leg in progress released its share
        start = flow.start_s if math.isnan(start) else start
        transfers = {c: Transfer(c, bits, start, self.env.now) for c in clients}
        return transfers if multicast else transfers[clients[0]]
