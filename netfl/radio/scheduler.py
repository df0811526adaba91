"""Resource blocks shared by transfers: an event-driven fluid processor-sharing resource.

A :class:`FluidScheduler` holds the RBs of one direction of the cell (or the capacity of a
backhaul link). Each active :class:`Flow` gets a (possibly fractional) number of RBs from
the policy and transfers ``rbs * rate_per_rb_bps`` bit/s. On every arrival, departure or
cancellation the scheduler brings every flow's remaining bits up to date, recomputes the
allocation and schedules one timer for the next completion (design.md, "Time model"): the
cost grows with the number of flows, never with bytes or simulated milliseconds.

Policies (``docs/radio.md``, "Sharing the resource blocks"):

- ``fifo``: flows are served in arrival order, each up to its RB cap, until the RBs run out
  (with the cap equal to the band, one flow at a time: FedCS's scheduled uploads).
- ``equal``: round robin as a fluid: max-min fair RB shares under the caps (water-filling),
  so each flow slows down as others join (the MAB-CS system model, Yoshida et al. 2020 Sec. II).
- ``proportional_fair``: the RB shares that maximise ``sum log(rate_i)`` (Kelly): equal
  shares while rates are linear in the RBs, fewer RBs for flows beyond their power limit
  (:mod:`netfl.radio.fair_share`); each flow's rate multiplied by its multi-user diversity
  gain when the flows see Rayleigh fading (a flow's ``diversity``).

**Power-limited flows.** A flow's rate is ``rbs * rate_per_rb_bps`` up to its
``power_limit_rb`` (``M*``, the uplink power control's limit, :mod:`channel_models.
power_control`); beyond, its device spreads its maximum power over the RBs it holds and the
scheduler asks ``limited_rates`` (the radio's hook) for its rate per RB at the SINR
``10 log10(rbs / M*)`` dB lower. The allocation of ``fifo`` and ``equal`` does not change
(the head of the line takes its cap; equal shares), only the rates that go with it.

Interfaces: :meth:`FluidScheduler.open` starts a flow (its ``done`` event fires with the
flow when the last bit is delivered) and :meth:`FluidScheduler.close` cancels it, releasing
its RBs at once.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

import numpy as np
import simpy
from simpy.events import NORMAL

from channel_models.power_control import power_drop_db
from netfl.config.radio import Policy
from netfl.radio.fair_share import allocate_proportional_fair

POLICIES: tuple[Policy, ...] = get_args(Policy)


def allocate_fifo(caps: Sequence[float], n_rb: float) -> list[float]:
    """RBs per flow, flows in arrival order: each takes up to its cap of what is left."""
    out = []
    left = n_rb
    for cap in caps:
        take = cap if cap < left else max(left, 0.0)
        out.append(take)
        left -= take
    return out


def allocate_equal(caps: Sequence[float], n_rb: float) -> list[float]:
    """Max-min fair (water-filling) RB shares: ``min(cap_i, L)`` with ``sum = n_rb``.

    If the caps add up to no more than ``n_rb`` every flow gets its cap. Pure Python: the
    number of active flows is small and this runs on every arrival and departure.
    """
    caps = list(caps)
    if sum(caps) <= n_rb:
        return caps
    equal_share = n_rb / len(caps)
    if min(caps) >= equal_share:  # the usual case: nobody's cap binds
        return [equal_share] * len(caps)
    # Raise the level through the sorted caps: the k smallest flows are held at their
    # caps and the others share what is left equally.
    left, n = float(n_rb), len(caps)
    level = left / n
    for k, cap in enumerate(sorted(caps)):
        level = left / (n - k)
        if cap >= level:
            break
        left -= cap
    return [cap if cap < level else level for cap in caps]


ALLOCATORS: dict[str, Callable[[Sequence[float], float], list[float]]] = {
    "fifo": allocate_fifo,
    "equal": allocate_equal,
    "proportional_fair": allocate_equal,
}


@dataclass(eq=False, slots=True)
class Flow:
    """One transfer on one scheduler.

    ``rate_per_rb_bps`` is the flow's rate on one RB (its channel); ``diversity(m)`` is its
    rate multiplier when ``m`` flows compete for each RB under proportional fair (None: 1).
    ``link`` is the radio link it runs on (:class:`netfl.radio.cells.RadioLink`; the
    scheduler does not read it): the radio update recomputes the rates of flows in flight
    from it (:meth:`FluidScheduler.set_rates`). ``power_limit_rb`` is the RBs up to which
    ``rate_per_rb_bps`` holds (inf: any allocation), ``sinr_db`` the SINR per RB it holds
    for (the radio's ``limited_rates`` hook reads both beyond the limit).
    """

    bits: float
    rate_per_rb_bps: float
    rb_cap: float
    client: int = -1
    fl: bool = True
    diversity: Callable[[int], float] | None = None
    link: Any = None
    power_limit_rb: float = math.inf
    sinr_db: float = math.nan
    #: The last rate per RB beyond the limit: (sinr_db, rbs, power_limit_rb, rate), reused
    #: while the three hold (:func:`refresh_limited`).
    limited: tuple[float, float, float, float] | None = field(default=None, repr=False)
    remaining_bits: float = field(init=False)
    start_s: float = math.nan
    end_s: float = math.nan
    done: simpy.Event | None = None
    id: int = -1
    _rbs: float = field(default=0.0, repr=False)
    _rate_bps: float = field(default=0.0, repr=False)
    _owner: FluidScheduler | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.bits >= 0:
            raise ValueError(f"a flow needs a non-negative size, got {self.bits} bits")
        if not self.rate_per_rb_bps >= 0 or not self.rb_cap > 0:
            raise ValueError("a flow needs rate_per_rb_bps >= 0 and rb_cap > 0")
        self.remaining_bits = float(self.bits)

    def _shared(self) -> bool:
        """Served by processor sharing now (its RBs are the scheduler's common share)."""
        owner = self._owner
        return owner is not None and owner._ps and owner._active.get(self.id) is self

    @property
    def rbs(self) -> float:
        """RBs the flow holds now."""
        return self._owner._share() if self._shared() else self._rbs  # type: ignore[union-attr]

    @rbs.setter
    def rbs(self, value: float) -> None:
        self._rbs = value

    @property
    def rate_bps(self) -> float:
        """The flow's rate now, bit/s."""
        if self._shared():
            return self._owner._share() * self.rate_per_rb_bps  # type: ignore[union-attr]
        return self._rate_bps

    @rate_bps.setter
    def rate_bps(self, value: float) -> None:
        self._rate_bps = value


class _Timer(simpy.Event):
    """A scheduler's timer: ``env.timeout(delay_s)`` (the same event, scheduled the same
    way) whose callback is the scheduler's, with the token it was set with (no closure
    per timer: several timers a client update)."""

    def __init__(self, scheduler: FluidScheduler, delay_s: float) -> None:
        env = self.env = scheduler.env
        self.callbacks = [scheduler._on_timer]
        self._value = None
        self._ok = True
        self.token = scheduler._timer_token
        env.schedule(self, NORMAL, delay_s)


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

    ``on_change(flow, n_rb)``, when set, is called whenever a flow's RB count changes (0 when
    it leaves); the reserved constant load reports as a flow with ``client`` -1.

    Two exact ways to run the same fluid model. **Processor sharing** (``equal`` or
    ``proportional_fair`` when every active flow's cap covers the band, no flow has a
    diversity gain and no RB log is kept): every flow holds the same share s = available /
    n of the RBs, so a virtual clock V (RB-seconds per flow, dV/dt = s) and each flow's
    finishing tag F = V(arrival) + bits / rate_per_rb, kept in a heap, give the next
    completion without touching the other flows: O(log n) per arrival or departure. The
    **general pass** (any policy, caps that bind, diversity, the RB log) brings every
    flow's remaining bits up to date and re-runs the allocation: O(n) per event. The
    scheduler switches between them as flows come and go (converting the tags to remaining
    bits or back, once), with the same event times (tests/test_radio_scheduler.py).
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
        self._ps_policy = policy != "fifo"  # processor sharing can serve it (_ps_eligible)
        self.on_change: Callable[[Flow, float], None] | None = None
        #: Rates per RB of flows beyond their power limit, their SINR lowered by the dB
        #: given (set by the radio for its uplinks; None: no flow has a limit).
        self.limited_rates: Callable[[list[Flow], np.ndarray], np.ndarray] | None = None
        self._next_id = 0
        self.reserved_rb = 0.0
        self._reserved_flow = Flow(math.inf, 0.0, self.n_rb, fl=False)
        self._active: dict[int, Flow] = {}  # by flow id, in arrival order
        self._last_s = env.now
        self._timer_token = 0
        self._timer_at = math.inf
        # Totals over the active flows, kept by _reallocate for _advance.
        self._used_rb = self._used_rb_fl = self._rate_bps = 0.0
        #: Integrals over time since creation: RB-seconds used (all flows and the reserved
        #: load, FL flows alone) and bits delivered.
        self.rb_seconds = 0.0
        self.rb_seconds_fl = 0.0
        self.bits_delivered = 0.0
        # Processor sharing: the virtual clock, the tags' heap, and the active flows'
        # totals; flows the PS path cannot serve are counted in _irregular.
        self._ps = False
        self._virtual = 0.0
        self._heap: list[tuple[float, int, Flow]] = []
        self._tags: dict[int, float] = {}
        self._sum_rate_per_rb = 0.0
        self._n_fl = 0
        self._irregular = 0
        # The active flows' power limits (finite ones), the smallest on top of a heap
        # (entries of flows gone or re-limited are dropped when they surface).
        self._limit_of: dict[int, float] = {}
        self._limits: list[tuple[float, int]] = []

    @property
    def active(self) -> list[Flow]:
        """The active flows, in arrival order."""
        return list(self._active.values())

    # -- public -------------------------------------------------------------------------

    def reserve(self, fraction: float) -> None:
        """Take ``fraction`` of the RBs away from the flows for good (constant load)."""
        if not 0 <= fraction <= 1:
            raise ValueError(f"fraction must be in [0, 1], got {fraction}")
        self._advance()
        self.reserved_rb = min(self.n_rb, self.reserved_rb + fraction * self.n_rb)
        if self.on_change is not None:
            self.on_change(self._reserved_flow, self.reserved_rb)
        self._irregular = sum(not self._regular(f) for f in self._active.values())
        self._update()

    def open(self, flow: Flow) -> simpy.Event:
        """Start ``flow`` now; returns its ``done`` event (value: the flow)."""
        flow.done = self.env.event()
        flow.id, self._next_id = self._next_id, self._next_id + 1
        flow._owner = self
        if flow.bits == 0:
            flow.start_s = flow.end_s = self.env.now
            done, flow.done = flow.done, None  # no flow <-> event cycle for the GC to find
            return done.succeed(flow)
        self._advance()
        self._active[flow.id] = flow
        self._sum_rate_per_rb += flow.rate_per_rb_bps
        self._n_fl += flow.fl
        self._irregular += not self._regular(flow)
        self._track_limit(flow)
        if self._ps:
            self._push(flow, flow.remaining_bits)
        self._update()
        return flow.done

    def close(self, flow: Flow) -> None:
        """Cancel ``flow`` (no-op if it already finished); its RBs go to the others now."""
        if flow.id not in self._active or self._active[flow.id] is not flow:
            return
        self._advance()
        self._remove(flow)
        self._release(flow)
        self._update()

    def set_rates(
        self, changes: Sequence[tuple[Flow, float, Callable[[int], float] | None]]
    ) -> None:
        """Give flows in flight new rates per RB (and diversity gains) from now on: the
        radio update's hook when the interference they see changes. Bits already delivered
        stay delivered; the next completion is rescheduled once."""
        self._advance()
        now = self.env.now
        for flow, rate, diversity in changes:
            if self._active.get(flow.id) is not flow:
                continue  # finished or cancelled meanwhile
            if self._ps:
                flow.remaining_bits = self._remaining_ps(flow)
            was_irregular = not self._regular(flow)
            self._sum_rate_per_rb += rate - flow.rate_per_rb_bps
            flow.rate_per_rb_bps = rate
            flow.diversity = diversity
            self._irregular += (not self._regular(flow)) - was_irregular
            if self._ps:
                if flow.start_s != flow.start_s and rate > 0:
                    flow.start_s = now  # a stalled flow's first bits flow now
                self._push(flow, flow.remaining_bits)
        self._update()

    def set_power_limits(self, changes: Sequence[tuple[Flow, float]]) -> None:
        """Give flows in flight new power limits (a moving device's path loss changed)."""
        self._advance()
        for flow, limit_rb in changes:
            if self._active.get(flow.id) is not flow:
                continue
            flow.power_limit_rb = limit_rb
            self._track_limit(flow)
        self._update()

    def rbs_in_use(self) -> float:
        """RBs the flows hold now (the reserved constant load not included)."""
        if self._ps:
            return self.n_rb - self.reserved_rb if self._active else 0.0
        return self._used_rb

    def utilisation(self, fl_only: bool = False) -> float:
        """Time-average fraction of the RBs in use since time 0: by every flow and the
        reserved load, or (``fl_only``) by FL flows alone."""
        self._advance()
        horizon = self.env.now
        used = self.rb_seconds_fl if fl_only else self.rb_seconds
        return used / (self.n_rb * horizon) if horizon > 0 else math.nan

    # -- internals ----------------------------------------------------------------------

    def _regular(self, flow: Flow) -> bool:
        """Whether processor sharing can serve ``flow`` whatever the others do: its cap
        never binds and it has no diversity gain (its power limit: :meth:`_ps_eligible`)."""
        return flow.diversity is None and flow.rb_cap >= self.n_rb - self.reserved_rb

    def _track_limit(self, flow: Flow) -> None:
        if math.isfinite(flow.power_limit_rb):
            self._limit_of[flow.id] = flow.power_limit_rb
            heapq.heappush(self._limits, (flow.power_limit_rb, flow.id))
            if len(self._limits) > 2 * len(self._limit_of) + 16:
                # Stale entries (flows gone or re-limited) sink under a long-lived small
                # limit and are never popped: rebuild from the live ones, O(flows).
                self._limits = [(limit, i) for i, limit in self._limit_of.items()]
                heapq.heapify(self._limits)
        else:
            self._limit_of.pop(flow.id, None)

    def _smallest_limit(self) -> float:
        limits, limit_of = self._limits, self._limit_of
        while limits and limit_of.get(limits[0][1]) != limits[0][0]:
            heapq.heappop(limits)
        return limits[0][0] if limits else math.inf

    def _ps_eligible(self) -> bool:
        """Processor sharing serves the flows while every rate is linear in the common
        share: no cap binds, no diversity gain, and the share is within every power limit
        (re-checked at each event: a departure that raises the share past a limit sends
        the scheduler to the general pass)."""
        available = self.n_rb - self.reserved_rb
        return (
            self._ps_policy
            and self.on_change is None
            and self._irregular == 0
            and available > 0
            and (not self._limit_of or self._smallest_limit() >= available / len(self._active))
        )

    def _share(self) -> float:
        """RBs per flow under processor sharing."""
        n = len(self._active)
        return (self.n_rb - self.reserved_rb) / n if n else 0.0

    def _push(self, flow: Flow, remaining_bits: float) -> None:
        rate = flow.rate_per_rb_bps
        tag = self._virtual + remaining_bits / rate if rate > 0 else math.inf
        self._tags[flow.id] = tag
        heapq.heappush(self._heap, (tag, flow.id, flow))

    def _remove(self, flow: Flow) -> None:
        del self._active[flow.id]
        self._sum_rate_per_rb -= flow.rate_per_rb_bps
        self._n_fl -= flow.fl
        self._irregular -= not self._regular(flow)
        self._limit_of.pop(flow.id, None)
        if self._ps:
            flow.remaining_bits = self._remaining_ps(flow)
            self._tags.pop(flow.id, None)  # its heap entry is dropped when it surfaces
        if not self._active:
            self._sum_rate_per_rb = 0.0  # no rounding residue when idle

    def _remaining_ps(self, flow: Flow) -> float:
        tag = self._tags.get(flow.id, math.inf)
        if not math.isfinite(tag):
            return flow.remaining_bits
        return max((tag - self._virtual) * flow.rate_per_rb_bps, 0.0)

    def _advance(self) -> None:
        """Deliver bits at the current rates from the last update to now."""
        now = self.env.now
        dt = now - self._last_s
        if dt <= 0:
            return
        self._last_s = now
        if self._ps:
            n = len(self._active)
            share = (self.n_rb - self.reserved_rb) / n if n else 0.0  # _share()
            self._virtual += share * dt
            self.rb_seconds += (self.reserved_rb + share * len(self._active)) * dt
            self.rb_seconds_fl += share * self._n_fl * dt
            self.bits_delivered += share * self._sum_rate_per_rb * dt
            return
        self.rb_seconds += (self.reserved_rb + self._used_rb) * dt
        self.rb_seconds_fl += self._used_rb_fl * dt
        self.bits_delivered += self._rate_bps * dt
        # The timer never lets a flow overshoot by more than rounding; completion settles
        # the remainder exactly (see _on_timer). The general pass: each flow's own rate.
        for flow in self._active.values():
            flow.remaining_bits -= flow._rate_bps * dt

    def _update(self) -> None:
        eligible = self._ps_eligible()
        if eligible != self._ps:
            self._switch(eligible)
        if self._ps:
            self._schedule_next(self._next_ps_dt())
        else:
            self._schedule_next(self._reallocate())

    def _switch(self, to_ps: bool) -> None:
        """Convert between the two paths' state (once per switch, O(n log n))."""
        if to_ps:
            self._ps = True
            self._virtual = 0.0
            self._heap, self._tags = [], {}
            now = self.env.now
            for flow in self._active.values():
                flow.rbs = flow.rate_bps = 0.0
                if flow.start_s != flow.start_s and flow.rate_per_rb_bps > 0:
                    flow.start_s = now
                self._push(flow, flow.remaining_bits)
            self._used_rb = self._used_rb_fl = self._rate_bps = 0.0
            return
        for flow in self._active.values():
            flow.remaining_bits = self._remaining_ps(flow)
        self._ps = False
        self._heap, self._tags = [], {}

    def _next_ps_dt(self) -> float:
        """Time to the earliest finishing tag (stale heap entries are dropped)."""
        heap, tags = self._heap, self._tags
        while heap and tags.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        if not heap or not math.isfinite(heap[0][0]):
            return math.inf
        active = self._active
        share = (self.n_rb - self.reserved_rb) / len(active) if active else 0.0  # _share()
        if share <= 0:
            return math.inf
        self._mark_started(self.env.now)
        return (heap[0][0] - self._virtual) / share

    def _mark_started(self, now: float) -> None:
        """Flows that just arrived start now (every active PS flow is served at once)."""
        # The newest flows are the last inserted; walk back while they have no start.
        for flow in reversed(self._active.values()):
            if flow.start_s == flow.start_s:
                break
            if flow.rate_per_rb_bps > 0:
                flow.start_s = now

    def _reallocate(self) -> float:
        """Share the RBs among the active flows and set their rates; returns the time to
        the next completion at these rates (inf: none), found in the same pass."""
        flows = list(self._active.values())
        self._used_rb = self._used_rb_fl = self._rate_bps = 0.0
        if not flows:
            return math.inf
        available = self.n_rb - self.reserved_rb
        if len(flows) == 1:
            rbs = [min(flows[0].rb_cap, available)]
        else:
            rbs = self._allocate([f.rb_cap for f in flows], available)
            if self.policy == "proportional_fair" and any(
                f.power_limit_rb < n for f, n in zip(flows, rbs, strict=True)
            ):
                rbs = self._fair_shares(flows, available)
        per_rb = self._rates_per_rb(flows, rbs)
        competing = 1
        if self.policy == "proportional_fair":
            # Flows that compete for each RB: how many times over the caps cover the band.
            demand = sum(f.rb_cap for f in flows)
            competing = max(1, min(len(flows), round(demand / max(available, 1e-12))))
        now = self.env.now
        on_change = self.on_change
        used = used_fl = total_rate = 0.0
        best_dt = math.inf
        for flow, n, rate_per_rb in zip(flows, rbs, per_rb, strict=True):
            if on_change is not None and n != flow._rbs:
                on_change(flow, n)
            rate = n * rate_per_rb
            if flow.diversity is not None:
                rate *= flow.diversity(competing)
            flow._rbs = n  # the general pass: not shared (no properties)
            flow._rate_bps = rate
            used += n
            total_rate += rate
            if flow.fl:
                used_fl += n
            if rate > 0:
                if flow.start_s != flow.start_s:  # NaN: first bits flow now
                    flow.start_s = now
                dt = flow.remaining_bits / rate
                if dt < best_dt:
                    best_dt = dt
        self._used_rb, self._used_rb_fl, self._rate_bps = used, used_fl, total_rate
        return best_dt

    def _rates_per_rb(self, flows: list[Flow], rbs: Sequence[float]) -> list[float]:
        """Each flow's rate per RB on ``rbs``: ``rate_per_rb_bps`` up to its power limit,
        the radio's ``limited_rates`` beyond (:func:`refresh_limited`)."""
        per_rb = [f.rate_per_rb_bps for f in flows]
        if self.limited_rates is None:
            return per_rb
        beyond = [
            i for i, (f, n) in enumerate(zip(flows, rbs, strict=True)) if n > f.power_limit_rb
        ]
        if beyond:
            refresh_limited(
                [flows[i] for i in beyond], [rbs[i] for i in beyond], self.limited_rates
            )
            for i in beyond:
                per_rb[i] = flows[i].limited[3]  # type: ignore[index]
        return per_rb

    def _fair_shares(self, flows: list[Flow], available: float) -> list[float]:
        """Proportional fair shares when power limits bind (:mod:`netfl.radio.fair_share`):
        ``g``, a flow's SINR with its whole power on one RB, is its SINR per RB at the
        limit times ``M*``."""
        limits = np.array([f.power_limit_rb for f in flows])
        sinr_db = np.array([f.sinr_db for f in flows])
        with np.errstate(invalid="ignore"):
            g = np.where(np.isfinite(limits), np.power(10.0, sinr_db / 10.0) * limits, np.inf)
        caps = np.array([f.rb_cap for f in flows])
        return allocate_proportional_fair(caps, available, limits, g).tolist()

    def _release(self, flow: Flow) -> None:
        if self.on_change is not None and flow.rbs > 0:
            self.on_change(flow, 0.0)
        flow._rbs = flow._rate_bps = 0.0  # the setters' fields (it left: not shared)

    def _schedule_next(self, best_dt: float) -> None:
        """Make sure a timer fires at the next completion, ``best_dt`` from now.

        A pending timer that fires no later than that is kept (it wakes, finds nothing due
        and sets the next one), so a burst of arrivals, which only delays completions,
        costs one timer instead of one each.
        """
        if not math.isfinite(best_dt):
            self._timer_token += 1  # nothing to finish: forget any pending timer
            self._timer_at = math.inf
            return
        best_dt = max(best_dt, 0.0)  # a flow due at this very instant
        due = self.env.now + best_dt
        if self._timer_at <= due:
            return
        self._timer_token += 1
        self._timer_at = due
        _Timer(self, best_dt)

    def _on_timer(self, timer: _Timer) -> None:
        if timer.token != self._timer_token:
            return  # superseded by an earlier completion
        self._timer_at = math.inf
        self._advance()
        now = self.env.now
        # Flows due within this time of now finish now (far above float rounding).
        tolerance = 1e-9 + 1e-12 * abs(now)
        finished = self._due_ps(tolerance) if self._ps else self._due(tolerance)
        if finished is None:
            return  # woke early: the next timer is set
        for flow in finished:
            self.bits_delivered += flow.remaining_bits
            flow.remaining_bits = 0.0
            flow.end_s = now
            self._remove(flow)
            flow.remaining_bits = 0.0
            self._release(flow)
        self._update()
        for flow in finished:
            done, flow.done = flow.done, None  # no flow <-> event cycle for the GC to find
            assert done is not None
            done.succeed(flow)

    def _due(self, tolerance: float) -> list[Flow] | None:
        """General path: the flows due now, or None after setting the next timer."""
        finished = []
        best_dt = math.inf
        for flow in self._active.values():
            rate = flow._rate_bps  # the general pass: not shared
            if flow.remaining_bits <= rate * tolerance:
                finished.append(flow)
            elif rate > 0:
                dt = flow.remaining_bits / rate
                if dt < best_dt:
                    best_dt = dt
        if not finished:
            self._schedule_next(best_dt)  # woke early: arrivals pushed the completion back
            return None
        return finished

    def _due_ps(self, tolerance: float) -> list[Flow] | None:
        """Processor sharing: pop the tags due now (within the tolerance at the share)."""
        active, virtual = self._active, self._virtual
        share = (self.n_rb - self.reserved_rb) / len(active) if active else 0.0  # _share()
        limit = virtual + share * tolerance
        heap, tags = self._heap, self._tags
        finished = []
        while heap:
            tag, flow_id, flow = heap[0]
            if tags.get(flow_id) != tag:
                heapq.heappop(heap)  # cancelled or re-tagged
                continue
            if tag > limit:
                break
            heapq.heappop(heap)
            # _remaining_ps(flow): the tag is finite (at most the limit)
            flow.remaining_bits = max((tag - virtual) * flow.rate_per_rb_bps, 0.0)
            del tags[flow_id]  # a re-tagged flow may hold a second entry of the same tag
            finished.append(flow)
        if not finished:
            self._schedule_next(self._next_ps_dt())
            return None
        return finished


def refresh_limited(
    flows: Sequence[Flow],
    rbs: Sequence[float],
    limited_rates: Callable[[list[Flow], np.ndarray], np.ndarray],
) -> None:
    """Set :attr:`Flow.limited` for ``flows`` held on ``rbs`` RBs beyond their power
    limits: one vectorised ``limited_rates`` call for those whose SINR, RBs or power limit
    moved since their last (the rate follows all three: TS 36.213's power over ``M`` RBs,
    :func:`channel_models.power_control.power_drop_db`)."""
    stale = [
        i
        for i, (f, n) in enumerate(zip(flows, rbs, strict=True))
        if f.limited is None or f.limited[:3] != (f.sinr_db, n, f.power_limit_rb)
    ]
    if not stale:
        return
    drop = power_drop_db(
        np.array([rbs[i] for i in stale]), np.array([flows[i].power_limit_rb for i in stale])
    )
    rates = limited_rates([flows[i] for i in stale], drop)
    for i, rate in zip(stale, rates.tolist(), strict=True):
        flow = flows[i]
        flow.limited = (flow.sinr_db, rbs[i], flow.power_limit_rb, rate)
