"""The fluid processor-sharing RB scheduler: exact event times and invariants."""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.radio.scheduler import Flow, FluidScheduler, allocate_equal, allocate_fifo

RATE_PER_RB = 1e5  # bit/s on one RB


def _send(
    env: simpy.Environment,
    sched: FluidScheduler,
    log: list[Flow],
    bits: float,
    delay: float = 0.0,
    cap: float | None = None,
    rate: float = RATE_PER_RB,
) -> Generator[simpy.Event, Any, None]:
    yield env.timeout(delay)
    flow = Flow(bits, rate, cap or sched.n_rb)
    yield sched.open(flow)
    log.append(flow)


def test_a_flow_alone_gets_the_full_rate():
    env = simpy.Environment()
    sched = FluidScheduler(env, 10, "equal")
    log: list[Flow] = []
    env.process(_send(env, sched, log, 2e6))
    env.run()
    # 10 RBs x 1e5 bit/s = 1 Mbit/s -> 2 s
    assert log[0].start_s == 0 and log[0].end_s == pytest.approx(2.0)


def test_rb_cap_limits_a_lone_flow():
    env = simpy.Environment()
    sched = FluidScheduler(env, 10, "equal")
    log: list[Flow] = []
    env.process(_send(env, sched, log, 1e6, cap=4))
    env.run()
    assert log[0].end_s == pytest.approx(1e6 / (4 * RATE_PER_RB))


@pytest.mark.parametrize("policy", ["equal", "proportional_fair"])
@pytest.mark.parametrize("n", [1, 2, 5, 17])
def test_n_equal_flows_finish_together_at_n_times_the_single_time(policy, n):
    env = simpy.Environment()
    sched = FluidScheduler(env, 10, policy)
    log: list[Flow] = []
    for _ in range(n):
        env.process(_send(env, sched, log, 1e6))
    env.run()
    single = 1e6 / (10 * RATE_PER_RB)
    assert [f.end_s for f in log] == pytest.approx([n * single] * n)


def test_join_and_leave_recomputes_rates():
    # 1 Mbit/s cell. A: 1 Mbit at t=0; B: 0.5 Mbit at t=0.5. Alone A sends 0.5 Mbit by
    # 0.5 s; then both at 0.5 Mbit/s: B ends at 1.5 s, A has 0 left at 1.5 s too.
    env = simpy.Environment()
    sched = FluidScheduler(env, 10, "equal")
    log: list[Flow] = []
    env.process(_send(env, sched, log, 1e6))
    env.process(_send(env, sched, log, 0.5e6, delay=0.5))
    env.run()
    assert [f.end_s for f in log] == pytest.approx([1.5, 1.5])
    # C joins later with a cap: A 1 Mbit from 0; C 0.2 Mbit capped at 2 RBs from 0.1 s
    env = simpy.Environment()
    sched = FluidScheduler(env, 10, "equal")
    log = []
    env.process(_send(env, sched, log, 1e6))
    env.process(_send(env, sched, log, 0.2e6, delay=0.1, cap=2))
    env.run()
    # C at 0.2 Mbit/s for 1 s -> ends 1.1 s; A: 0.1 + 0.8 * 1.0 + remaining 0.1 at 1 Mbit/s
    assert log[0].end_s == pytest.approx(1.1)
    assert log[1].end_s == pytest.approx(1.2)


def test_fifo_serves_one_after_another_and_start_is_after_queueing():
    env = simpy.Environment()
    sched = FluidScheduler(env, 10, "fifo")
    log: list[Flow] = []
    for delay in (0.0, 0.1, 0.2):
        env.process(_send(env, sched, log, 1e6, delay=delay))
    env.run()
    assert [f.start_s for f in log] == pytest.approx([0.0, 1.0, 2.0])
    assert [f.end_s for f in log] == pytest.approx([1.0, 2.0, 3.0])


def test_fifo_with_caps_runs_flows_side_by_side():
    env = simpy.Environment()
    sched = FluidScheduler(env, 10, "fifo")
    log: list[Flow] = []
    for _ in range(3):
        env.process(_send(env, sched, log, 0.4e6, cap=4))
    env.run()
    # 4 + 4 RBs at once, the third gets the 2 left, then 4 when the first two end (1 s)
    ends = sorted(f.end_s for f in log)
    assert ends[:2] == pytest.approx([1.0, 1.0])
    # third: 0.2 Mbit in the first second, 0.2 Mbit at 0.4 Mbit/s -> 1.5 s
    assert ends[2] == pytest.approx(1.5)


def test_cancel_releases_rbs_at_once():
    env = simpy.Environment()
    sched = FluidScheduler(env, 10, "equal")
    stay = Flow(1e6, RATE_PER_RB, 10)
    gone = Flow(1e6, RATE_PER_RB, 10)
    sched.open(stay)
    sched.open(gone)

    def cancel() -> Generator[simpy.Event, Any, None]:
        yield env.timeout(0.4)
        sched.close(gone)
        assert stay.rbs == 10 and stay.rate_bps == pytest.approx(1e6)

    env.process(cancel())
    env.run()
    # 0.2 Mbit by 0.4 s at half rate, 0.8 Mbit at full rate -> 1.2 s
    assert stay.end_s == pytest.approx(1.2)
    assert math.isnan(gone.end_s) and not gone.done.triggered  # type: ignore[union-attr]
    assert sched.bits_delivered == pytest.approx(1e6 + 0.2e6)


def test_reserved_fraction_slows_flows():
    env = simpy.Environment()
    sched = FluidScheduler(env, 10, "equal")
    sched.reserve(0.25)
    log: list[Flow] = []
    env.process(_send(env, sched, log, 0.75e6))
    env.run()
    assert log[0].end_s == pytest.approx(1.0)
    assert sched.utilisation() == pytest.approx(1.0)


def test_proportional_fair_applies_the_diversity_gain():
    env = simpy.Environment()
    sched = FluidScheduler(env, 10, "proportional_fair")
    flows = [Flow(1e6, RATE_PER_RB, 10, diversity=lambda m: 1.0 + 0.5 * (m - 1)) for _ in range(3)]
    for flow in flows:
        sched.open(flow)
    # 3 competing: each has 10/3 RBs at 2x -> 1e6 / (1e6/3 * 2) = 1.5 s
    env.run()
    assert [f.end_s for f in flows] == pytest.approx([1.5, 1.5, 1.5])


def test_zero_bit_flow_completes_at_once_and_bad_flows_are_refused():
    env = simpy.Environment()
    sched = FluidScheduler(env, 10)
    flow = Flow(0.0, RATE_PER_RB, 10)
    assert sched.open(flow).triggered and flow.end_s == 0.0
    with pytest.raises(ValueError):
        Flow(-1.0, RATE_PER_RB, 10)
    with pytest.raises(ValueError):
        FluidScheduler(env, 0)
    with pytest.raises(ValueError, match="unknown policy"):
        FluidScheduler(env, 10, "max_rate")  # type: ignore[arg-type]


# -- allocation invariants -----------------------------------------------------------------

caps_strategy = st.lists(st.floats(0.1, 60.0), min_size=1, max_size=30)


@given(caps=caps_strategy, n_rb=st.floats(1.0, 100.0))
def test_equal_allocation_is_max_min_fair_and_conserves_rbs(caps, n_rb):
    caps_arr = np.array(caps)
    rbs = np.array(allocate_equal(caps, n_rb))
    assert np.all(rbs <= caps_arr + 1e-9) and np.all(rbs >= 0)
    assert rbs.sum() == pytest.approx(min(n_rb, caps_arr.sum()), rel=1e-9)
    # Every flow below its cap holds the largest share (nobody could give it more).
    below = rbs < caps_arr - 1e-9
    if below.any():
        assert np.allclose(rbs[below], rbs.max())


@given(caps=caps_strategy, n_rb=st.floats(1.0, 100.0))
def test_fifo_allocation_serves_in_order(caps, n_rb):
    caps_arr = np.array(caps)
    rbs = np.array(allocate_fifo(caps, n_rb))
    assert rbs.sum() == pytest.approx(min(n_rb, caps_arr.sum()), rel=1e-9)
    # A flow gets RBs only if every earlier flow is at its cap.
    short = np.flatnonzero(rbs < caps_arr - 1e-9)
    if short.size:
        assert np.all(rbs[short[0] + 1 :] == 0)


arrivals = st.lists(
    st.tuples(
        st.floats(0.0, 5.0),  # arrival time
        st.floats(1e3, 2e6),  # bits
        st.integers(1, 10),  # RB cap
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(pattern=arrivals, policy=st.sampled_from(["fifo", "equal", "proportional_fair"]))
def test_bits_delivered_equal_capacity_times_busy_time(pattern, policy):
    """With one per-RB rate, bits = rate x RB-seconds; at full load, capacity x busy time."""
    env = simpy.Environment()
    sched = FluidScheduler(env, 10, policy)
    log: list[Flow] = []
    checks: list[tuple[float, float]] = []
    original = sched._reallocate

    def checked() -> float:
        next_completion_s = original()
        used = sum(f.rbs for f in sched.active)
        demand = sum(f.rb_cap for f in sched.active)
        checks.append((used, min(10.0, demand)))
        return next_completion_s

    sched._reallocate = checked  # type: ignore[method-assign]
    for t, bits, cap in pattern:
        env.process(_send(env, sched, log, bits, delay=t, cap=cap))
    env.run()
    assert len(log) == len(pattern)
    total_bits = sum(bits for _, bits, _ in pattern)
    assert sched.bits_delivered == pytest.approx(total_bits, rel=1e-9)
    assert sched.rb_seconds * RATE_PER_RB == pytest.approx(total_bits, rel=1e-9)
    # Work conserving and never over the band: used RBs = min(band, sum of caps).
    for used, expected in checks:
        assert used == pytest.approx(expected, abs=1e-9)
    for flow in log:
        assert flow.start_s <= flow.end_s and flow.remaining_bits == 0.0


@settings(max_examples=40, deadline=None)
@given(pattern=arrivals)
def test_uncapped_equal_sharing_is_busy_exactly_while_work_remains(pattern):
    """Uncapped PS: the cell runs at full capacity whenever a flow is active, so the busy
    time (union of flows' [arrival, end]) times capacity equals the bits delivered."""
    env = simpy.Environment()
    sched = FluidScheduler(env, 10, "equal")
    log: list[Flow] = []
    arrivals_s: dict[int, float] = {}

    def send(t: float, bits: float) -> Generator[simpy.Event, Any, None]:
        yield env.timeout(t)
        flow = Flow(bits, RATE_PER_RB, 10)
        arrivals_s[id(flow)] = env.now
        yield sched.open(flow)
        log.append(flow)

    for t, bits, _ in pattern:
        env.process(send(t, bits))
    env.run()
    intervals = sorted((arrivals_s[id(f)], f.end_s) for f in log)
    busy, current_start, current_end = 0.0, *intervals[0]
    for start, end in intervals[1:]:
        if start > current_end:
            busy += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    busy += current_end - current_start
    capacity = 10 * RATE_PER_RB
    assert capacity * busy == pytest.approx(sum(b for _, b, _ in pattern), rel=1e-9)


# -- the processor-sharing path against the general pass (issue 16 item 9) ---------------
flow_sets = st.lists(
    st.tuples(
        st.floats(0.0, 3.0),  # arrival time
        st.floats(1e3, 2e6),  # bits
        st.sampled_from([10.0, 10.0, 10.0, 4.0]),  # RB cap: mostly uncapped, some binding
        st.floats(1e4, 1e6),  # rate per RB
        st.one_of(st.none(), st.floats(0.0, 4.0)),  # cancelled at (if before its end)
    ),
    min_size=1,
    max_size=30,
)


def _run_set(make, pattern, policy):
    from tests import scheduler_oracle

    env = simpy.Environment()
    sched = make(env, 10, policy)
    flows = []
    flow_cls = Flow if make is FluidScheduler else scheduler_oracle.Flow

    def send(t, bits, cap, rate, cancel):
        yield env.timeout(t)
        flow = flow_cls(bits, rate, cap)
        flows.append(flow)
        done = sched.open(flow)
        if cancel is not None and cancel > t:
            yield env.any_of([done, env.timeout(cancel - t)])
            if not done.triggered:
                sched.close(flow)

    for args in pattern:
        env.process(send(*args))
    env.run()
    return [(f.start_s, f.end_s) for f in flows], sched.bits_delivered, sched.rb_seconds


@settings(max_examples=150, deadline=None)
@given(pattern=flow_sets, policy=st.sampled_from(["equal", "proportional_fair"]))
def test_processor_sharing_gives_the_general_pass_event_times(pattern, policy):
    from tests.scheduler_oracle import FluidScheduler as Oracle

    got, bits, rb_s = _run_set(FluidScheduler, pattern, policy)
    want, want_bits, want_rb_s = _run_set(Oracle, pattern, policy)
    assert len(got) == len(want)
    for (start, end), (w_start, w_end) in zip(got, want, strict=True):
        assert start == pytest.approx(w_start, rel=1e-9, abs=1e-9, nan_ok=True)
        assert end == pytest.approx(w_end, rel=1e-9, abs=1e-9, nan_ok=True)
    assert bits == pytest.approx(want_bits, rel=1e-9)
    assert rb_s == pytest.approx(want_rb_s, rel=1e-9)


def test_uncapped_equal_sharing_takes_the_processor_sharing_path():
    env = simpy.Environment()
    sched = FluidScheduler(env, 10, "equal")
    flows = [Flow(1e6, RATE_PER_RB, 10) for _ in range(3)]
    for flow in flows:
        sched.open(flow)
    assert sched._ps  # O(log n) per event
    sched.open(Flow(1e6, RATE_PER_RB, 4))  # a binding cap: the general pass
    assert not sched._ps
    env.run()
    # M/G/1-PS by hand: 3 uncapped flows of 1 Mbit and one capped at 4 RBs, 10 RBs of 0.1
    # Mbit/s each. Max-min: all four share 2.5 RBs (cap 4 not binding at 4 flows) ->
    # everyone finishes at 4 x 1 Mbit / 1 Mbit/s = 4 s.
    assert [f.end_s for f in flows] == pytest.approx([4.0, 4.0, 4.0])
    assert sched._ps or not sched.active
