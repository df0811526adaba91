"""Background traffic: FTP Model 1 against the M/G/1-PS result, full buffer, constant load."""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

import numpy as np
import pytest
import simpy

from netfl.radio.scheduler import Flow, FluidScheduler
from netfl.radio.traffic import FlowLog, FtpModel1, FullBuffer, UserPool, constant_load
from netfl.recorder.timeline import Timeline

RATE_PER_RB = 1e5
N_RB = 10
CAPACITY_BPS = N_RB * RATE_PER_RB


def _pool() -> UserPool:
    return UserPool(lambda rng, n: (np.full(n, RATE_PER_RB), [None] * n), np.random.default_rng(0))


def _ftp(
    env: simpy.Environment, sched: FluidScheduler, seed: int, sizes: Any, rate_hz: float, log=None
) -> FtpModel1:
    ftp = FtpModel1(
        env,
        sched,
        arrival_rate_hz=rate_hz,
        sizes=sizes,
        users=_pool(),
        rng=np.random.default_rng(seed),
        log=log,
    )
    ftp.start()
    return ftp


@pytest.mark.parametrize(
    "sizes",
    [
        pytest.param(lambda rng, n: np.full(n, 4e5), id="constant-0.4Mbit"),
        pytest.param(lambda rng, n: rng.exponential(4e5, n), id="exponential-0.4Mbit"),
    ],
)
def test_ftp_mean_transfer_time_matches_mg1_processor_sharing(sizes):
    """E[T] = E[S] / (C - λ E[S]) for any size distribution (insensitivity), and the
    utilisation equals the offered load λ E[S] / C. λ = 1.25 /s, E[S] = 0.4 Mbit,
    C = 1 Mbit/s: ρ = 0.5, E[T] = 0.8 s. About 40,000 files."""
    env = simpy.Environment()
    sched = FluidScheduler(env, N_RB, "equal")
    rate_hz, mean_bits = 1.25, 4e5
    ftp = _ftp(env, sched, 7, sizes, rate_hz)
    env.run(until=32_000)
    expected_s = mean_bits / (CAPACITY_BPS - rate_hz * mean_bits)
    times = np.asarray(ftp.transfer_times_s[500:])  # skip the warm-up from an empty cell
    assert times.size > 35_000
    assert times.mean() == pytest.approx(expected_s, rel=0.03)
    assert sched.utilisation() == pytest.approx(rate_hz * mean_bits / CAPACITY_BPS, rel=0.02)


def test_ftp_logs_background_flows_in_the_timeline():
    env = simpy.Environment()
    sched = FluidScheduler(env, N_RB, "equal")
    timeline = Timeline()
    ftp = _ftp(env, sched, 1, lambda rng, n: np.full(n, 4e5), 2.0, FlowLog(timeline))
    env.run(until=50)
    table = timeline.to_arrow().to_pandas()
    starts = table[table.kind == "background_flow_start"]
    ends = table[table.kind == "background_flow_end"]
    assert len(starts) == ftp.arrivals and len(ends) == len(ftp.transfer_times_s) > 50
    assert (table.client == -1).all() and (ends.bits == 4e5).all()
    assert np.allclose(ends.rate_bps * ends.duration_s, 4e5)


def _fl_upload(
    env: simpy.Environment, sched: FluidScheduler, out: list[Flow], bits: float
) -> Generator[simpy.Event, Any, None]:
    flow = Flow(bits, RATE_PER_RB, N_RB)
    yield sched.open(flow)
    out.append(flow)


@pytest.mark.parametrize("users", [1, 3])
def test_full_buffer_users_take_their_equal_share(users):
    env = simpy.Environment()
    sched = FluidScheduler(env, N_RB, "equal")
    FullBuffer(sched, users=users, pool=_pool())
    out: list[Flow] = []
    env.process(_fl_upload(env, sched, out, 1e6))
    env.run(until=100)
    # The FL flow gets 1/(users + 1) of the cell for its whole transfer.
    assert out[0].end_s == pytest.approx((users + 1) * 1e6 / CAPACITY_BPS)
    assert sched.utilisation() == pytest.approx(1.0)


def test_constant_load_takes_its_fraction_of_rbs():
    env = simpy.Environment()
    sched = FluidScheduler(env, N_RB, "equal")
    constant_load(sched, 0.6)
    out: list[Flow] = []
    env.process(_fl_upload(env, sched, out, 1e6))
    env.run()
    assert out[0].end_s == pytest.approx(1e6 / (0.4 * CAPACITY_BPS))


def test_user_pool_draws_in_batches_from_its_own_stream():
    calls: list[int] = []

    def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, list[Any]]:
        calls.append(n)
        return rng.uniform(size=n), [None] * n

    a, b = (
        UserPool(draw, np.random.default_rng(3), batch=4),
        UserPool(draw, np.random.default_rng(3)),
    )
    first = [a.next()[0] for _ in range(6)]
    assert calls[:2] == [4, 4]
    assert first[:4] == pytest.approx(np.random.default_rng(3).uniform(size=4).tolist())
    assert b.next()[0] == pytest.approx(first[0])


def test_user_pool_skips_users_without_coverage():
    def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, list[Any]]:
        return np.array([0.0, 5.0, 0.0, 7.0]), ["a", "b", "c", "d"]

    pool = UserPool(draw, np.random.default_rng(0), batch=4)
    users = [pool.next() for _ in range(3)]
    assert [(rate, div, link) for rate, _, div, link in users] == [
        (5.0, "b", None),
        (7.0, "d", None),
        (5.0, "b", None),
    ]
    assert all(math.isnan(sinr) for _, sinr, _, _ in users)  # no radio: no SINR
    dead = UserPool(lambda rng, n: (np.zeros(n), [None] * n), np.random.default_rng(0))
    with pytest.raises(ValueError, match="coverage"):
        dead.next()
