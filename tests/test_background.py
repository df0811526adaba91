"""Background compute load: the M/G/1 queue a device's FL job shares (netfl.fl.background)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.config.devices import BackgroundLoad
from netfl.fl.background import BackgroundQueue, stationary_jobs
from netfl.sampling import equilibrium_work
from tests.protocol_helpers import events, group, run, scenario

EXPONENTIAL = {"dist": "exponential", "mean": 2.0}
UNIFORM = {"dist": "uniform", "low": 1.0, "high": 5.0}
LOGNORMAL = {"dist": "lognormal", "median": 2.0, "sigma": 0.5}
CHOICE = {"dist": "choice", "values": [1.0, 3.0], "p": [0.25, 0.75]}


def _mean_response(load: BackgroundLoad, work_s: float, n: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    total = 0.0
    for _ in range(n):
        jobs = equilibrium_work(
            load.job_work_s, rng, int(stationary_jobs(load.utilization, rng, 1)[0])
        )
        _start, end = BackgroundQueue(load, jobs.tolist(), 0.0, rng).serve(0.0, work_s)
        total += end
    return total / n


@pytest.mark.parametrize("work", [EXPONENTIAL, 3.0, UNIFORM, LOGNORMAL, CHOICE])
def test_processor_sharing_slows_a_job_by_one_over_one_minus_rho(work):
    """M/G/1-PS: E[T | x] = x / (1 - rho), for any job-size distribution (insensitivity)."""
    load = BackgroundLoad(arrival_rate_hz=0.15, job_work_s=work, discipline="ps")
    rho = load.utilization
    mean = _mean_response(load, 4.0, 6000, seed=1)
    assert mean == pytest.approx(4.0 / (1 - rho), rel=0.03)


@pytest.mark.parametrize("work", [EXPONENTIAL, 3.0, UNIFORM, LOGNORMAL, CHOICE])
def test_fifo_waits_the_pollaczek_khinchine_workload(work):
    """M/G/1-FIFO: E[T | x] = x + lambda E[S^2] / (2 (1 - rho))."""
    load = BackgroundLoad(arrival_rate_hz=0.15, job_work_s=work, discipline="fifo")
    second_moment = {
        "exponential": 2 * 2.0**2,
        "constant": 3.0**2,
        "uniform": (1 + 5 + 25) / 3,  # (a^2 + ab + b^2) / 3
        "lognormal": 2.0**2 * np.exp(2 * 0.5**2),  # median^2 e^{2 sigma^2}
        "choice": 0.25 * 1.0**2 + 0.75 * 3.0**2,
    }[load.job_work_s.dist]
    wait = 0.15 * second_moment / (2 * (1 - load.utilization))
    assert _mean_response(load, 4.0, 6000, seed=2) == pytest.approx(4.0 + wait, rel=0.03)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(1e-13, 20.0), max_size=6),
    st.floats(1e-13, 20.0),
    st.sampled_from(["ps", "fifo"]),
    st.sampled_from([0.0, 3.7e4, 1.0e8]),
)
def test_without_arrivals_the_job_ends_as_the_disciplines_say(jobs, work, discipline, now):
    """PS: a job of size x among residuals r_i ends at x + sum min(r_i, x); FIFO: sum r_i + x.

    Also late in a long run, where t + (a tiny residual) rounds to t: the queue must still
    terminate (regression: it used to spin on a residual below the float spacing of t).
    """
    load = BackgroundLoad(arrival_rate_hz=0.0, job_work_s=1.0, discipline=discipline)
    queue = BackgroundQueue(load, list(jobs), now, np.random.default_rng(0))
    start, end = queue.serve(now, work)
    tolerance = 1e-9 * max(1.0, now)  # float spacing of t is ~1e-16 t
    if discipline == "ps":
        assert start == now
        assert end - now == pytest.approx(work + sum(min(r, work) for r in jobs), abs=tolerance)
    else:
        assert start - now == pytest.approx(sum(jobs), abs=tolerance)
        assert end - now == pytest.approx(sum(jobs) + work, abs=tolerance)


def test_stationary_count_is_geometric():
    counts = stationary_jobs(0.6, np.random.default_rng(3), 200_000)
    assert counts.mean() == pytest.approx(0.6 / 0.4, rel=0.02)
    assert np.mean(counts == 0) == pytest.approx(0.4, abs=0.005)


def test_an_unstable_background_load_is_refused():
    with pytest.raises(ValueError, match="utilization rho"):
        BackgroundLoad(arrival_rate_hz=1.0, job_work_s=1.5)


def test_devices_with_background_load_update_about_one_over_one_minus_rho_slower():
    """End to end, over many rounds: compute time / (work / capability) -> 1 / (1 - rho)."""
    load = {"arrival_rate_hz": 0.1, "job_work_s": {"dist": "exponential", "mean": 5.0}}
    data = scenario(
        [group("busy", 10, background=load), group("idle", 10)],
        fl={"rounds": 300, "clients_per_round": 20, "model_size_bits": 1.0e3},
    )
    world = run(data)
    compute = events(world, "compute_end")
    busy = compute[compute["client"] < 10]["duration_s"]
    idle = compute[compute["client"] >= 10]["duration_s"]
    alone = 100 / 50.0  # n_samples / compute_sps
    assert idle.to_numpy() == pytest.approx(alone)
    rho = 0.1 * 5.0
    assert busy.mean() / alone == pytest.approx(1 / (1 - rho), rel=0.05)
    # mu reported in the resource request is the PS share: 1 / (1 + N), N ~ geometric.
    mu = np.concatenate([ctx.features["mu"][:10] for ctx in world.strategy.contexts])
    assert np.mean(mu == 1.0) == pytest.approx(1 - rho, abs=0.03)
