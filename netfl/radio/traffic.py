"""Background traffic: users outside the federation competing for the same RBs.

- :class:`FtpModel1`: 3GPP FTP Model 1 (TR 36.814 A.2.1.3.1): files arrive as a Poisson
  process of rate λ per cell, each for a new user dropped in the cell, who leaves when
  the file is delivered. Under processor sharing the mean transfer time is
  ``E[T] = E[S] / (C - λ E[S])`` (M/G/1-PS, insensitive to the size distribution).
- :class:`FullBuffer`: users with data for the whole run.
- :func:`constant_load`: a fixed fraction of the RBs always taken.

Every source of ``traffic.sources`` runs in every cell (:func:`start_sources`), each cell
with its own arrival stream ``traffic.<i>.cell<c>.arrivals``; the source's users are
dropped like the FL devices over the whole layout from ``traffic.<i>.users`` and each
belongs to the cell that serves it (:class:`LayoutUsers`); a flow's SINR is evaluated
against the other cells when it starts and follows them in flight like an FL transfer's.
Each source may log its transfers in the timeline as ``background_flow_start`` /
``background_flow_end`` (client -1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import simpy

from netfl.config.traffic import ConstantLoadSource, FtpSource, FullBufferSource
from netfl.radio.cells import DL, UL, Cells, RadioLink
from netfl.radio.scheduler import Flow, FluidScheduler
from netfl.radio.system import RadioSystem, drop_users
from netfl.recorder.timeline import Timeline

if TYPE_CHECKING:
    from netfl.config import Scenario
    from netfl.rng import Streams

SizeDraw = Callable[[np.random.Generator, int], np.ndarray]
Diversity = Callable[[int], float] | None


class Users(Protocol):
    """Where background flows get their user: ``next()`` gives its rate per RB, the SINR
    that rate holds for (NaN without a radio), its diversity gain under proportional fair
    (or None) and its radio link (or None) for a flow about to start."""

    def next(self) -> tuple[float, float, Diversity, RadioLink | None]: ...


class UserPool:
    """Users whose rates per RB come from ``draw(rng, n) -> (rates, diversity per user)``,
    drawn in batches from one stream, with no radio link (a single scheduler's users)."""

    def __init__(
        self,
        draw: Callable[[np.random.Generator, int], tuple[np.ndarray, list[Diversity]]],
        rng: np.random.Generator,
        batch: int = 256,
    ) -> None:
        self._draw, self._rng, self._batch = draw, rng, batch
        self._rates: list[float] = []
        self._diversity: list[Diversity] = []

    def next(self) -> tuple[float, float, Diversity, RadioLink | None]:
        """The next user with coverage (users whose rate is 0 are skipped: never served)."""
        while not self._rates:
            rates, diversity = self._draw(self._rng, self._batch)
            covered = [i for i, rate in enumerate(rates.tolist()) if rate > 0]
            if not covered:
                raise ValueError(f"none of {self._batch} background users has coverage")
            self._rates = [float(rates[i]) for i in reversed(covered)]
            self._diversity = [diversity[i] for i in reversed(covered)]
        return self._rates.pop(), math.nan, self._diversity.pop(), None


class LayoutUsers:
    """Background users of one source, dropped like the FL devices over the whole layout
    (``cell.drop``, indoor share) in batches from one stream, each queued at the cell that
    serves it (its strongest): a cell's users are the people in its service area, and none
    drawn is thrown away."""

    def __init__(self, system: RadioSystem, rng: np.random.Generator, per_cell: int = 64) -> None:
        self.system, self.rng = system, rng
        self.batch = per_cell * system.n_cells
        self._queues: list[list[tuple[np.ndarray, float]]] = [[] for _ in range(system.n_cells)]

    def take(self, cell: int) -> tuple[np.ndarray, float]:
        """The next user of ``cell``: its coupling gains to every cell and uplink power."""
        queue = self._queues[cell]
        for _ in range(100):
            if queue:
                return queue.pop()
            self._refill()
        raise ValueError(f"no background user of cell {cell} is served by it")

    def _refill(self) -> None:
        system = self.system
        users = drop_users(system, self.batch, self.rng)
        gains = system.gains(users, self.rng, self.rng, self.rng)
        power = system.ul_power_db(gains.coupling_loss_db).tolist()
        # Reversed, so that each queue pops its users in the order they were drawn.
        for i in range(self.batch - 1, -1, -1):
            self._queues[int(gains.serving_cell[i])].append((gains.coupling_gain_db[i], power[i]))


class CellUsers:
    """Background users of one cell and direction (from a :class:`LayoutUsers` pool).

    ``next()`` evaluates the user's SINR against what the cells emit when its flow starts.
    A user below the lowest rate even without interference (no coverage) is skipped: it
    would never be served. One with coverage whom the interference of the moment puts below
    it starts at rate 0 and waits for the radio update to bring its rate back (as a flow in
    flight does when interference rises), rather than being replaced by a luckier user;
    without the update (``radio.update_interval_s: null``) nothing would bring it back, so
    it is skipped as well.
    """

    def __init__(self, pool: LayoutUsers, cells: Cells, cell: int, direction: str) -> None:
        self.pool, self.cells, self.cell, self.direction = pool, cells, cell, direction
        self.system = pool.system
        self._waits = getattr(self.system.config, "update_interval_s", None) is not None

    def next(self) -> tuple[float, float, Diversity, RadioLink | None]:
        system, direction = self.system, self.direction
        for _ in range(1000):
            gain, ul_power = self.pool.take(self.cell)
            power = ul_power if direction == UL else system.dl_power_db
            limit = system.power_limit_rb(direction, power)
            link = RadioLink(self.cell, direction, gain, power, limit_rb=limit)
            interference = self.cells.link_interference_mw(link)
            sinr = float(system.sinr_db(direction, np.array(link.signal_db), interference))
            rate = float(system.rate_per_rb(direction, np.array(sinr)))
            if rate > 0 or (self._waits and _covered(system, direction, link)):
                return rate, sinr, system.diversity(direction, sinr), link
        raise ValueError(f"no background user of cell {self.cell} has coverage")


def _covered(system: RadioSystem, direction: str, link: RadioLink) -> bool:
    """Whether the link gets a rate without interference (else it is never served)."""
    snr = system.sinr_db(direction, np.array(link.signal_db), 0.0)
    return bool(system.rate_per_rb(direction, snr) > 0)


class FlowLog:
    """Records background transfers in the timeline (or only counts them)."""

    def __init__(self, timeline: Timeline | None) -> None:
        self.timeline = timeline

    def start(self, now_s: float, flow: Flow) -> None:
        if self.timeline is not None:
            self.timeline.record(now_s, "background_flow_start", bits=flow.bits)

    def end(self, flow: Flow) -> None:
        if self.timeline is not None:
            duration = flow.end_s - flow.start_s
            self.timeline.record(
                flow.end_s,
                "background_flow_end",
                bits=flow.bits,
                duration_s=duration,
                rate_bps=flow.bits / duration if duration > 0 else float("inf"),
            )


class FtpModel1:
    """Poisson file arrivals; each file is one flow of a new user (TR 36.814 A.2.1.3.1).

    ``transfer_times_s`` collects each delivered file's sojourn time (arrival to last bit),
    the quantity of the M/G/1-PS formula.
    """

    def __init__(
        self,
        env: simpy.Environment,
        scheduler: FluidScheduler,
        *,
        arrival_rate_hz: float,
        sizes: SizeDraw,
        users: Users,
        rng: np.random.Generator,
        rb_cap: float | None = None,
        log: FlowLog | None = None,
    ) -> None:
        if not arrival_rate_hz > 0:
            raise ValueError(f"arrival_rate_hz must be positive, got {arrival_rate_hz}")
        self.env, self.scheduler = env, scheduler
        self.arrival_rate_hz = arrival_rate_hz
        self.sizes, self.users, self.rng = sizes, users, rng
        self.rb_cap = rb_cap or scheduler.n_rb
        self.log = log or FlowLog(None)
        self.transfer_times_s: list[float] = []
        self.arrivals = 0

    def start(self) -> simpy.Process:
        return self.env.process(self._arrivals())

    def _arrivals(self) -> Generator[simpy.Event, Any, None]:
        env = self.env
        while True:
            # Draw gaps in batches: one numpy call per 256 files.
            for gap, size in zip(
                self.rng.exponential(1.0 / self.arrival_rate_hz, 256),
                self.sizes(self.rng, 256),
                strict=True,
            ):
                yield env.timeout(float(gap))
                self._arrive(float(size))

    def _arrive(self, size_bits: float) -> None:
        flow = _flow(size_bits, self.rb_cap, *self.users.next())
        arrived_s = self.env.now
        self.arrivals += 1
        self.log.start(arrived_s, flow)
        done = self.scheduler.open(flow)
        done.callbacks.append(lambda _event: self._finished(flow, arrived_s))

    def _finished(self, flow: Flow, arrived_s: float) -> None:
        self.transfer_times_s.append(flow.end_s - arrived_s)
        self.log.end(flow)


class FullBuffer:
    """``users`` flows that never run out of data, started at time 0."""

    def __init__(
        self,
        scheduler: FluidScheduler,
        *,
        users: int,
        pool: Users,
        rb_cap: float | None = None,
        log: FlowLog | None = None,
    ) -> None:
        self.flows = []
        for _ in range(users):
            flow = _flow(float("inf"), rb_cap or scheduler.n_rb, *pool.next())
            (log or FlowLog(None)).start(scheduler.env.now, flow)
            scheduler.open(flow)
            self.flows.append(flow)


def _flow(
    bits: float,
    rb_cap: float,
    rate: float,
    sinr_db: float,
    diversity: Diversity,
    link: RadioLink | None,
) -> Flow:
    """A background flow of a user from :meth:`Users.next` (its power limit, if any, from
    its link)."""
    limit = math.inf if link is None else link.limit_rb
    return Flow(
        bits,
        rate,
        rb_cap,
        fl=False,
        diversity=diversity,
        link=link,
        power_limit_rb=limit,
        sinr_db=sinr_db,
    )


def constant_load(scheduler: FluidScheduler, load_fraction: float) -> None:
    """Take ``load_fraction`` of the scheduler's RBs for the whole run (not a flow: not
    logged in the timeline; it shows in the RB utilisation)."""
    scheduler.reserve(load_fraction)


def start_sources(
    scenario: Scenario,
    system: RadioSystem,
    cells: Cells,
    streams: Streams,
    timeline: Timeline | None,
) -> list[Any]:
    """Start every background source of ``traffic.sources`` in every cell."""
    log = FlowLog(timeline if scenario.traffic.record_flows else None)
    sources: list[Any] = []
    for index, source in enumerate(scenario.traffic.sources):
        direction = UL if source.direction == "uplink" else DL
        pool = None
        if not isinstance(source, ConstantLoadSource):
            pool = LayoutUsers(system, streams.get(f"traffic.{index}.users"))
        for cell, scheduler in enumerate(cells.schedulers[direction]):
            if pool is None:
                assert isinstance(source, ConstantLoadSource)
                constant_load(scheduler, source.load_fraction)
                continue
            users = CellUsers(pool, cells, cell, direction)
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
