"""Resource blocks shared by transfers: an event-driven fluid processor-sharing resource.

A :class:`FluidScheduler` holds the RBs of one direction of the cell (or the capacity of a
backhaul link). Each active :class:`Flow` gets a (possibly fractional) number of RBs from
the policy and transfers ``rbs * rate_per_rb_bps`` bit/s. On every arrival, departure or
cancellation the scheduler brings every flow's remaining bits up to date, recomputes the
allocation and schedules one timer for the next completion (design.md, "Time model"): the
cost grows with the number of flows, never with bytes or simulated milliseconds.

Policies (``shared/reference/radio.md``, "LTE numerology and scheduling"):

- ``fifo``: flows are served in arrival order, each up to its RB cap, until the RBs run out
  (with the cap equal to the band, one flow at a time: FedCS's scheduled uploads).
- ``equal``: round robin as a fluid: max-min fair RB shares under the caps (water-filling),
  so each flow slows down as others join (the MAB-CS system model, 002 Sec. II).
- ``proportional_fair``: the same RB shares (without fast fading PF maximises
  ``sum log(n_i r_i)``, which equal shares ``n_i`` do), and each flow's rate multiplied by
  its multi-user diversity gain when the flows see Rayleigh fading (a flow's ``diversity``).

Interfaces: :meth:`FluidScheduler.open` starts a flow (its ``done`` event fires with the
flow when the last bit is delivered) and :meth:`FluidScheduler.close` cancels it, releasing
its RBs at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import simpy

Policy = Literal["fifo", "equal", "proportional_fair"]
POLICIES: tuple[Policy, ...] = ("fifo", "equal", "proportional_fair")


def allocate_fifo(caps: np.ndarray, n_rb: float) -> np.ndarray:
    """RBs per flow, flows in arrival order: each takes up to its cap of what is left."""
    caps = np.asarray(caps, dtype=float)
    before = np.cumsum(caps) - caps
    return np.clip(n_rb - before, 0.0, caps)


def allocate_equal(caps: np.ndarray, n_rb: float) -> np.ndarray:
    """Max-min fair (water-filling) RB shares: ``min(cap_i, L)`` with ``sum = n_rb``.

    If the caps add up to no more than ``n_rb`` every flow gets its cap.
    """
    caps = np.asarray(caps, dtype=float)
    n = caps.size
    if n == 0 or caps.sum() <= n_rb:
        return caps.copy()
    order = np.sort(caps)
    capped_before = np.concatenate(([0.0], np.cumsum(order)[:-1]))
    # Level if the k smallest flows are held at their caps and the rest share equally.
    level = (n_rb - capped_before) / (n - np.arange(n))
    k = int(np.argmax(order >= level))
    return np.minimum(caps, level[k])


ALLOCATORS: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {
    "fifo": allocate_fifo,
    "equal": allocate_equal,
    "proportional_fair": allocate_equal,
}


@dataclass(eq=False)
class Flow:
    """One transfer on one scheduler.

    ``rate_per_rb_bps`` is the flow's rate on one RB (its channel); ``diversity(m)`` is its
    rate multiplier when ``m`` flows compete for each RB under proportional fair (None: 1).
    """

    bits: float
    rate_per_rb_bps: float
    rb_cap: float
    client: int = -1
    fl: bool = True
    diversity: Callable[[int], float] | None = None
    remaining_bits: float = field(init=False)
    rbs: float = 0.0
    rate_bps: float = 0.0
    start_s: float = math.nan
    end_s: float = math.nan
    done: simpy.Event | None = None

    def __post_init__(self) -> None:
        if not self.bits >= 0:
            raise ValueError(f"a flow needs a non-negative size, got {self.bits} bits")
        if not self.rate_per_rb_bps >= 0 or not self.rb_cap > 0:
            raise ValueError("a flow needs rate_per_rb_bps >= 0 and rb_cap > 0")
        self.remaining_bits = float(self.bits)


class FluidScheduler:
    """RBs of one direction shared by the active flows under ``policy``.

    Parameters
    ----------
    env
        The SimPy environment.
    n_rb
        Resource blocks (or capacity units) to share.
    policy
        ``fifo``, ``equal`` or ``proportional_fair``.
    """

    def __init__(self, env: simpy.Environment, n_rb: float, policy: Policy = "equal") -> None:
        if not n_rb > 0:
            raise ValueError(f"n_rb must be positive, got {n_rb}")
        if policy not in ALLOCATORS:
            raise ValueError(f"unknown policy {policy!r}; one of {', '.join(POLICIES)}")
        self.env = env
        self.n_rb = float(n_rb)
        self.policy = policy
        self._allocate = ALLOCATORS[policy]
        self.reserved_rb = 0.0
        self.active: list[Flow] = []
        self._last_s = env.now
        self._timer_token = 0
        #: Integrals over time since creation: RB-seconds used (all flows, FL flows,
        #: reserved) and bits delivered.
        self.rb_seconds = 0.0
        self.rb_seconds_fl = 0.0
        self.rb_seconds_reserved = 0.0
        self.bits_delivered = 0.0
        self.bits_delivered_fl = 0.0

    # -- public -------------------------------------------------------------------------

    def reserve(self, fraction: float) -> None:
        """Take ``fraction`` of the RBs away from the flows for good (constant load)."""
        if not 0 <= fraction <= 1:
            raise ValueError(f"fraction must be in [0, 1], got {fraction}")
        self._advance()
        self.reserved_rb = min(self.n_rb, self.reserved_rb + fraction * self.n_rb)
        self._update()

    def open(self, flow: Flow) -> simpy.Event:
        """Start ``flow`` now; returns its ``done`` event (value: the flow)."""
        flow.done = self.env.event()
        if flow.bits == 0:
            flow.start_s = flow.end_s = self.env.now
            flow.done.succeed(flow)
            return flow.done
        self._advance()
        self.active.append(flow)
        self._update()
        return flow.done

    def close(self, flow: Flow) -> None:
        """Cancel ``flow`` (no-op if it already finished); its RBs go to the others now."""
        if flow not in self.active:
            return
        self._advance()
        self.active.remove(flow)
        flow.rbs = flow.rate_bps = 0.0
        self._update()

    @property
    def used_rb(self) -> float:
        return self.reserved_rb + sum(f.rbs for f in self.active)

    def utilisation(self, until_s: float | None = None) -> float:
        """Time-average fraction of the RBs in use (flows and reserved) since time 0."""
        self._advance()
        horizon = self.env.now if until_s is None else until_s
        return self.rb_seconds / (self.n_rb * horizon) if horizon > 0 else math.nan

    # -- internals ----------------------------------------------------------------------

    def _advance(self) -> None:
        """Deliver bits at the current rates from the last update to now."""
        now = self.env.now
        dt = now - self._last_s
        if dt <= 0:
            return
        self._last_s = now
        self.rb_seconds_reserved += self.reserved_rb * dt
        self.rb_seconds += self.reserved_rb * dt
        for flow in self.active:
            if flow.rate_bps > 0:
                sent = min(flow.rate_bps * dt, flow.remaining_bits)
                flow.remaining_bits -= sent
                self.rb_seconds += flow.rbs * dt
                self.bits_delivered += sent
                if flow.fl:
                    self.rb_seconds_fl += flow.rbs * dt
                    self.bits_delivered_fl += sent

    def _update(self) -> None:
        self._reallocate()
        self._schedule_next()

    def _reallocate(self) -> None:
        flows = self.active
        if not flows:
            return
        caps = np.fromiter((f.rb_cap for f in flows), float, len(flows))
        rbs = self._allocate(caps, self.n_rb - self.reserved_rb)
        competing = 1
        if self.policy == "proportional_fair":
            # Flows that compete for each RB: how many times over the caps cover the band.
            available = max(self.n_rb - self.reserved_rb, 1e-12)
            competing = max(1, min(len(flows), round(float(caps.sum()) / available)))
        now = self.env.now
        for flow, n in zip(flows, rbs.tolist(), strict=True):
            gain = flow.diversity(competing) if flow.diversity is not None else 1.0
            flow.rbs = n
            flow.rate_bps = n * flow.rate_per_rb_bps * gain
            if flow.rate_bps > 0 and math.isnan(flow.start_s):
                flow.start_s = now

    def _schedule_next(self) -> None:
        self._timer_token += 1
        best, best_dt = None, math.inf
        for flow in self.active:
            if flow.rate_bps > 0:
                dt = flow.remaining_bits / flow.rate_bps
                if dt < best_dt:
                    best, best_dt = flow, dt
        if best is None or not math.isfinite(best_dt):
            return
        token = self._timer_token
        timer = self.env.timeout(best_dt)
        timer.callbacks.append(lambda _event: self._on_timer(token, best))

    def _on_timer(self, token: int, target: Flow) -> None:
        if token != self._timer_token:
            return  # superseded by a later arrival or departure
        self._advance()
        now = self.env.now
        finished = []
        for flow in self.active:
            # The target is due now; others finishing within a nanosecond go with it.
            if flow is target or flow.remaining_bits <= flow.rate_bps * 1e-9:
                finished.append(flow)
        for flow in finished:
            self.bits_delivered += flow.remaining_bits
            if flow.fl:
                self.bits_delivered_fl += flow.remaining_bits
            flow.remaining_bits = 0.0
            flow.end_s = now
            flow.rbs = flow.rate_bps = 0.0
            self.active.remove(flow)
        self._update()
        for flow in finished:
            assert flow.done is not None
            flow.done.succeed(flow)
