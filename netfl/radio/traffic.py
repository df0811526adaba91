"""Background traffic: users outside the federation competing for the same RBs.

- :class:`FtpModel1`: 3GPP FTP Model 1 (TR 36.814 A.2.1.3.1): files arrive as a Poisson
  process of rate λ per cell, each for a new user dropped in the cell, who leaves when
  the file is delivered. Under processor sharing the mean transfer time is
  ``E[T] = E[S] / (C - λ E[S])`` (M/G/1-PS, insensitive to the size distribution).
- :class:`FullBuffer`: users with data for the whole run.
- :func:`constant_load`: a fixed fraction of the RBs always taken.

Each source draws from its own random streams and may log its transfers in the timeline
as ``background_flow_start`` / ``background_flow_end`` (client -1).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, Protocol

import numpy as np
import simpy

from netfl.radio.scheduler import Flow, FluidScheduler
from netfl.trace.timeline import Timeline

#: ``(rng, n) -> (rate_per_rb_bps, diversity or None per user)`` for ``n`` fresh users.
UserDraw = Callable[
    [np.random.Generator, int], tuple[np.ndarray, list[Callable[[int], float] | None]]
]
SizeDraw = Callable[[np.random.Generator, int], np.ndarray]


class Users(Protocol):
    """Where background flows get their user: ``next()`` gives its rate per RB (and its
    diversity gain under proportional fair, or None) for a flow about to start."""

    def next(self) -> tuple[float, Callable[[int], float] | None]: ...


class UserPool:
    """Fresh background users' channels, drawn in batches from one stream."""

    def __init__(self, draw: UserDraw, rng: np.random.Generator, batch: int = 256) -> None:
        self._draw, self._rng, self._batch = draw, rng, batch
        self._rates: list[float] = []
        self._diversity: list[Callable[[int], float] | None] = []

    def next(self) -> tuple[float, Callable[[int], float] | None]:
        """The next user with coverage (users whose rate is 0 are skipped: never served)."""
        while not self._rates:
            rates, diversity = self._draw(self._rng, self._batch)
            covered = [i for i, rate in enumerate(rates.tolist()) if rate > 0]
            if not covered:
                raise ValueError(f"none of {self._batch} background users has coverage")
            self._rates = [float(rates[i]) for i in reversed(covered)]
            self._diversity = [diversity[i] for i in reversed(covered)]
        return self._rates.pop(), self._diversity.pop()


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
        rate, diversity = self.users.next()
        flow = Flow(size_bits, rate, self.rb_cap, fl=False, diversity=diversity)
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
            rate, diversity = pool.next()
            flow = Flow(float("inf"), rate, rb_cap or scheduler.n_rb, fl=False, diversity=diversity)
            (log or FlowLog(None)).start(scheduler.env.now, flow)
            scheduler.open(flow)
            self.flows.append(flow)


def constant_load(scheduler: FluidScheduler, load_fraction: float) -> None:
    """Take ``load_fraction`` of the scheduler's RBs for the whole run (not a flow: not
    logged in the timeline; it shows in the RB utilisation)."""
    scheduler.reserve(load_fraction)
