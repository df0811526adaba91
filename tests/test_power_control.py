"""Uplink power control (issue 33 part 1): the PUSCH power of TS 36.213 / TS 38.213 for the
RBs a transfer holds, the scheduler's shares under it (equal, fifo, proportional fair), the
interference that follows the power transmitted, and the keys' bad input."""

from __future__ import annotations

import doctest
import math
from typing import Any

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

import channel_models.power_control as pc
import netfl.radio.fair_share as fair_share
from netfl.cli import main
from netfl.radio.build import build_radio
from netfl.radio.cells import UL
from netfl.radio.scheduler import Flow, FluidScheduler
from netfl.recorder.timeline import Timeline
from netfl.rng import Streams
from netfl.scenario import scenario_from_data

B_HZ = 180e3  # one LTE RB


@pytest.mark.parametrize("module", [pc, fair_share])
def test_docstring_examples_hold(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


# -- the formula: TS 36.213 eq. (5.1.1.1-1), TS 38.213 Sec. 7.1.1 --------------------------


@pytest.mark.parametrize(
    ("n_rb", "pl_db", "p0", "alpha", "mu", "expected_dbm"),
    [
        # 10 log10(10) + (-106) + 1.0 x 110 = 14 dBm: below P_CMAX.
        (10, 110.0, -106.0, 1.0, 0, 14.0),
        # 10 log10(50) - 106 + 110 = 20.99 dBm.
        (50, 110.0, -106.0, 1.0, 0, 20.9897),
        # 10 log10(50) - 106 + 120 = 30.99 dBm: P_CMAX = 23 dBm binds.
        (50, 120.0, -106.0, 1.0, 0, 23.0),
        # 10 log10(6) - 80 + 0.8 x 110 = 15.78 dBm.
        (6, 110.0, -80.0, 0.8, 0, 15.7815),
        # NR, 30 kHz (mu 1): 10 log10(2 x 15) - 80 + 0.8 x 110 = 22.77 dBm.
        (15, 110.0, -80.0, 0.8, 1, 22.7712),
        # alpha 0: no path-loss compensation, P0 per RB: 10 log10(25) - 10 = 3.98 dBm.
        (25, 140.0, -10.0, 0.0, 0, 3.9794),
    ],
)
def test_pusch_power_is_ts_36_213s_equation(n_rb, pl_db, p0, alpha, mu, expected_dbm):
    power = float(pc.pusch_power_dbm(n_rb, pl_db, p0, alpha, 23.0, numerology=mu))
    assert power == pytest.approx(expected_dbm, abs=1e-4)
    per_rb = float(pc.per_rb_power_dbm(n_rb, pl_db, p0, alpha, 23.0, numerology=mu))
    assert per_rb == pytest.approx(expected_dbm - 10 * math.log10(n_rb), abs=1e-4)


def test_the_power_limit_is_where_p_cmax_starts_to_bind():
    # P_ol = -106 + 116 = 10 dBm per RB: 13 dB below 23 dBm, so 10^1.3 = 19.95 RBs.
    limit = float(pc.power_limit_rbs(23.0, pc.open_loop_dbm(116.0, -106.0, 1.0)))
    assert limit == pytest.approx(10**1.3)
    # Up to it the power per RB is P_ol; beyond, the SINR per RB falls 3 dB per doubling.
    assert pc.power_drop_db(limit / 2, limit) == 0.0
    assert float(pc.power_drop_db(4 * limit, limit)) == pytest.approx(10 * math.log10(4))
    assert float(pc.per_rb_power_dbm(4 * limit, 116.0, -106.0, 1.0, 23.0)) == pytest.approx(
        10.0 - 10 * math.log10(4)
    )


@settings(max_examples=200, deadline=None)
@given(
    n_rb=st.floats(0.01, 273.0),
    pl_db=st.floats(40.0, 180.0),
    p0=st.floats(-126.0, 24.0),
    alpha=st.sampled_from(pc.ALPHAS),
    p_cmax=st.floats(-40.0, 33.0),
    mu=st.integers(0, 3),
)
def test_power_is_never_above_p_cmax_and_its_share_per_rb_never_rises_with_the_rbs(
    n_rb, pl_db, p0, alpha, p_cmax, mu
):
    total = float(pc.pusch_power_dbm(n_rb, pl_db, p0, alpha, p_cmax, numerology=mu))
    per_rb = float(pc.per_rb_power_dbm(n_rb, pl_db, p0, alpha, p_cmax, numerology=mu))
    assert total <= p_cmax + 1e-9
    assert per_rb <= p_cmax + 1e-9  # one RB at most: a share below an RB is time sharing
    more = float(pc.per_rb_power_dbm(n_rb * 1.5, pl_db, p0, alpha, p_cmax, numerology=mu))
    assert more <= per_rb + 1e-9


# -- the scheduler's shares and rates ------------------------------------------------------


def _shannon(flows: list[Flow], drop_db: np.ndarray) -> np.ndarray:
    """The radio's hook with Shannon's rate: ``B log2(1 + SINR)`` at the lowered SINR."""
    sinr = np.array([f.sinr_db for f in flows]) - drop_db
    return B_HZ * np.log2(1.0 + 10 ** (sinr / 10))


def _flow(sinr_ol: float, limit_rb: float = math.inf, cap: float = 50.0) -> Flow:
    """A flow at SINR ``sinr_ol`` (linear) per RB within its power limit ``limit_rb``."""
    rate = B_HZ * math.log2(1 + sinr_ol)
    return Flow(1e12, rate, cap, power_limit_rb=limit_rb, sinr_db=10 * math.log10(sinr_ol))


def _shares(policy: str, flows: list[Flow], n_rb: float = 50.0) -> list[Flow]:
    env = simpy.Environment()
    scheduler = FluidScheduler(env, n_rb, policy)
    scheduler.limited_rates = _shannon
    for flow in flows:
        scheduler.open(flow)
    env.run(until=1e-6)
    return flows


def _rate(rbs: float, sinr_ol: float, limit_rb: float) -> float:
    """Shannon's rate of ``rbs`` RBs at the power per RB the power limit leaves."""
    return rbs * B_HZ * math.log2(1 + sinr_ol * min(1.0, limit_rb / max(rbs, 1.0)))


# Flow a: no limit, SINR 2 per RB. Flow b: power-limited from 5 RBs, SINR 2 per RB there
# (so 10, 10 dB, with its whole power on one RB).
A, B = (2.0, math.inf), (2.0, 5.0)


def test_equal_shares_keep_m_over_n_and_the_limited_flow_spreads_its_power():
    a, b = _shares("equal", [_flow(*A), _flow(*B)])
    assert (a.rbs, b.rbs) == (25.0, 25.0)
    assert a.rate_bps == pytest.approx(_rate(25, *A))
    # b: 23 dBm over 25 RBs, 10 log10(25 / 5) = 7 dB below its power per RB at 5 RBs.
    assert b.rate_bps == pytest.approx(25 * B_HZ * math.log2(1 + 2 * 5 / 25))
    assert b.rate_bps < 0.5 * a.rate_bps


def test_fifo_gives_the_head_of_the_line_its_cap_whatever_its_power():
    b, a = _shares("fifo", [_flow(*B, cap=50.0), _flow(*A, cap=50.0)])
    assert (b.rbs, a.rbs) == (50.0, 0.0)
    assert b.rate_bps == pytest.approx(50 * B_HZ * math.log2(1 + 10 / 50))
    assert a.rate_bps == 0.0


def test_proportional_fair_maximises_the_sum_of_log_rates():
    a, b = _shares("proportional_fair", [_flow(*A), _flow(*B)])
    assert a.rbs + b.rbs == pytest.approx(50.0)
    # The optimum by brute force over the split (analytic: M_a = L, phi(10 / M_b) = 10 / L).
    m = np.linspace(0.01, 49.99, 500_001)
    utility = np.log(m * np.log2(1 + 2.0)) + np.log(
        (50 - m) * np.log2(1 + 2.0 * np.minimum(1.0, 5.0 / np.maximum(50 - m, 1.0)))
    )
    best = float(m[np.argmax(utility)])
    assert a.rbs == pytest.approx(best, abs=2e-4)
    assert b.rbs == pytest.approx(10.6078, abs=1e-3)  # fewer RBs than the equal 25...
    # ...at a higher SINR per RB than under equal shares, and a higher sum of log rates.
    equal = math.log(_rate(25, *A)) + math.log(_rate(25, *B))
    assert math.log(a.rate_bps) + math.log(b.rate_bps) > equal


def test_proportional_fair_without_a_binding_limit_is_equal_sharing():
    flows = _shares("proportional_fair", [_flow(2.0), _flow(5.0, 30.0), _flow(0.5, 20.0)])
    assert [f.rbs for f in flows] == pytest.approx([50 / 3] * 3)


def test_processor_sharing_holds_while_every_share_is_within_its_power_limit():
    """Processor sharing needs rates linear in the common share: a lone flow beyond its
    limit sends the scheduler to the general pass, a second flow that halves the share
    within the limit brings it back, and the same event times follow either way."""
    env = simpy.Environment()
    scheduler = FluidScheduler(env, 50.0, "equal")
    scheduler.limited_rates = _shannon
    limited = _flow(2.0, 30.0)
    scheduler.open(limited)  # alone: 50 RBs, beyond its 30
    env.run(until=1e-6)
    assert not scheduler._ps
    assert limited.rate_bps == pytest.approx(_rate(50, 2.0, 30.0))
    other = _flow(1.0)
    scheduler.open(other)  # 25 RBs each: within its limit, every rate linear
    env.run(until=2e-6)
    assert scheduler._ps
    assert limited.rate_bps == pytest.approx(25 * limited.rate_per_rb_bps)
    scheduler.close(other)  # alone again: beyond its limit
    assert not scheduler._ps
    assert limited.rate_bps == pytest.approx(_rate(50, 2.0, 30.0))


@settings(max_examples=60, deadline=None)
@given(
    flows=st.lists(
        st.tuples(st.floats(1e5, 5e6), st.floats(0.0, 2.0), st.floats(2.0, 80.0)),
        min_size=1,
        max_size=8,
    )
)
def test_event_times_do_not_depend_on_the_path_that_serves_the_flows(flows):
    """The same arrivals with power limits, served with processor sharing allowed and with
    the general pass forced (an RB log keeps it there): the same completion times."""
    ends = []
    for forced in (False, True):
        env = simpy.Environment()
        scheduler = FluidScheduler(env, 50.0, "equal")
        scheduler.limited_rates = _shannon
        if forced:
            scheduler.on_change = lambda flow, n: None
        made = []

        def send(bits, delay, limit, env=env, scheduler=scheduler, made=made):
            yield env.timeout(delay)
            flow = _flow(3.0, limit)
            flow.bits = flow.remaining_bits = bits
            made.append(flow)
            yield scheduler.open(flow)

        for bits, delay, limit in flows:
            env.process(send(bits, delay, limit))
        env.run()
        ends.append(sorted(f.end_s for f in made))
    assert ends[0] == pytest.approx(ends[1], rel=1e-9, abs=1e-12)


flow_sets = st.lists(
    st.tuples(
        st.floats(0.05, 1e3),  # SINR per RB within the limit
        st.one_of(st.just(math.inf), st.floats(1.0, 120.0)),  # power limit M*
        st.floats(0.5, 120.0),  # RB cap
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(specs=flow_sets, n_rb=st.floats(1.0, 110.0))
def test_every_policy_shares_out_every_rb_within_the_caps(specs, n_rb):
    for policy in ("equal", "fifo", "proportional_fair"):
        flows = _shares(policy, [_flow(s, m, cap) for s, m, cap in specs], n_rb)
        rbs = np.array([f.rbs for f in flows])
        caps = np.array([cap for _, _, cap in specs])
        assert np.all(rbs >= -1e-12) and np.all(rbs <= caps * (1 + 1e-12))
        assert rbs.sum() == pytest.approx(min(n_rb, caps.sum()), rel=1e-9)


@settings(max_examples=100, deadline=None)
@given(specs=flow_sets, n_rb=st.floats(2.0, 110.0), data=st.data())
def test_no_move_of_rbs_between_two_flows_raises_proportional_fairs_utility(specs, n_rb, data):
    flows = _shares("proportional_fair", [_flow(s, m, cap) for s, m, cap in specs], n_rb)
    rbs = np.array([f.rbs for f in flows])
    if len(flows) < 2 or np.any(rbs <= 0):
        return

    def utility(shares: np.ndarray) -> float:
        return sum(math.log(_rate(x, s, m)) for x, (s, m, _) in zip(shares, specs, strict=True))

    base = utility(rbs)
    i, j = data.draw(st.lists(st.integers(0, len(flows) - 1), min_size=2, max_size=2, unique=True))
    delta = data.draw(st.floats(0.01, 0.5)) * min(rbs[i], specs[j][2] - rbs[j])
    if delta <= 1e-9:
        return
    moved = rbs.copy()
    moved[i] -= delta
    moved[j] += delta
    assert utility(moved) <= base + 1e-6 * abs(base)


@settings(max_examples=200, deadline=None)
@given(sinr=st.floats(0.01, 1e4), limit=st.floats(1.0, 100.0), rbs=st.floats(0.1, 273.0))
def test_shannon_rate_grows_with_the_rbs_linearly_up_to_the_limit_then_slower(sinr, limit, rbs):
    flow = _flow(sinr, limit, cap=1e9)
    env = simpy.Environment()
    scheduler = FluidScheduler(env, rbs, "equal")
    scheduler.limited_rates = _shannon
    rates = []
    for n in (rbs, rbs * 1.25):
        rates.append(scheduler._rates_per_rb([flow], [n])[0] * n)
    assert rates[1] >= rates[0] * (1 - 1e-12)  # more RBs never carry less
    if rbs * 1.25 <= limit:
        assert rates[1] == pytest.approx(1.25 * rates[0])  # linear within the limit
    else:
        assert rates[1] <= 1.25 * rates[0] * (1 + 1e-12)  # concave beyond


def test_a_new_power_limit_moves_the_rate_of_a_flow_beyond_it():
    """A moving device's path loss moves its limit M* while its SINR per RB within the
    limit stays (alpha = 1): the rate beyond the limit must follow M*, eq. (5.1.1.1-1)'s
    P_CMAX spread over M RBs (the analytic rate :func:`_rate`), not keep the last one."""
    env = simpy.Environment()
    scheduler = FluidScheduler(env, 50.0, "equal")
    scheduler.limited_rates = _shannon
    flow = _flow(2.0, 20.0)
    scheduler.open(flow)
    env.run(until=1.0)
    assert flow.rate_bps == pytest.approx(_rate(50.0, 2.0, 20.0))
    scheduler.set_power_limits([(flow, 5.0)])
    env.run(until=2.0)
    assert flow.rate_bps == pytest.approx(_rate(50.0, 2.0, 5.0))
    assert flow.rate_bps < _rate(50.0, 2.0, 20.0) / 2  # 6 dB less power per RB


def test_the_power_limit_heap_stays_bounded_by_the_flows_in_flight():
    """A long-lived flow with a small limit keeps the others' stale heap entries buried:
    the heap is rebuilt from the live limits rather than growing with the flows served."""
    env = simpy.Environment()
    scheduler = FluidScheduler(env, 50.0, "equal")
    scheduler.limited_rates = _shannon
    scheduler.open(_flow(2.0, 1.0))  # never ends (1e12 bits)
    for _ in range(2000):
        short = Flow(1e3, B_HZ, 50.0, power_limit_rb=30.0, sinr_db=3.0)
        scheduler.open(short)
        env.run(until=short.done)
    assert len(scheduler._limit_of) == 1
    assert len(scheduler._limits) <= 2 * len(scheduler._limit_of) + 17


# -- the engine: isolated cell, interference, the default network ---------------------------


def _network(radio: dict[str, Any], cell: dict[str, Any], n: int = 8) -> tuple[Any, Any]:
    data = {
        "seed": 3,
        "cell": cell,
        "radio": {"model": "lte", **radio},
        "devices": {"groups": [{"count": n, "n_samples": 10}]},
        "fl": {"rounds": 1, "clients_per_round": 1, "model_size_bits": 1e6},
        "learning": None,
    }
    scenario = scenario_from_data(data)
    env = simpy.Environment()
    build = build_radio(scenario, env, Streams(scenario.seed), Timeline(), n)
    return env, build.network


ISOLATED = {"sites": 1, "sectors": 1, "indoor_fraction": 0.0, "radius_m": 500.0}
UMI = {"channel_model": "umi_nlos", "carrier_frequency_hz": 2.5e9}


def test_a_lone_power_limited_upload_runs_at_its_full_power_spread_over_the_band():
    radio = {**UMI, "uplink_power_control": {"p0_dbm": -80.0, "alpha": 1.0}}
    env, network = _network(radio, ISOLATED)
    system, d = network.system, network.devices
    limits = system.ul_limit_rb(d.ul_power_db)
    client = int(np.argmin(limits))
    assert limits[client] < 50  # at 23 dBm before it holds the band
    drop = 10 * math.log10(50 / limits[client])
    sinr = d.alone_sinr_db[UL][client] - drop
    rate = float(system.rate_per_rb(UL, np.array(sinr))) * 50
    assert rate == pytest.approx(network.rate_ul_bps[client])  # the nominal column agrees
    proc = network.upload(env, client, 4e6)
    env.run(until=proc)
    assert proc.value.duration_s == pytest.approx(4e6 / rate, rel=1e-9)


def test_the_straggler_of_a_shared_band_gets_its_power_back():
    """Issue 33's example: five uploads share 50 RBs. With a fixed 23 dBm over 50 RBs, the
    cell-edge device puts 6 dBm on each of its 10 RBs; at the power limit (P0 -80 dBm,
    alpha 1: the edge device is beyond it) it spreads 23 dBm over them, 7 dB more per RB."""
    sinr = {}
    for mode in ("fixed_per_rb", "open_loop"):
        control = {"mode": mode} if mode == "fixed_per_rb" else {"p0_dbm": -80.0}
        cell = {**ISOLATED, "radius_m": 300.0}
        env, network = _network({**UMI, "uplink_power_control": control}, cell, 5)
        worst = int(np.argmin(network.devices.alone_sinr_db[UL]))
        procs = [network.upload(env, c, 1e9) for c in range(5)]
        env.run(until=0.1)
        flow = next(f for f in network.cells.schedulers[UL][0].active if f.client == worst)
        assert flow.rbs == pytest.approx(10.0)
        per_rb = flow.rate_bps / flow.rbs
        sinr[mode] = float(network.devices.alone_sinr_db[UL][worst]), per_rb
        del procs
    fixed_sinr = sinr["fixed_per_rb"][0]
    # Open loop, beyond its limit: 23 dBm over 10 RBs = 13 dBm per RB, against 6 dBm fixed.
    assert sinr["open_loop"][1] == pytest.approx(
        float(network.system.rate_per_rb(UL, np.array(fixed_sinr + 23 - 10 - 6.0103)))
    )
    # The worst of the five sits at 2.7 dB with 6 dBm per RB: 2.3x the rate (docs/radio.md).
    assert fixed_sinr == pytest.approx(2.74, abs=0.01)
    assert sinr["open_loop"][1] / sinr["fixed_per_rb"][1] == pytest.approx(2.30, abs=0.01)


MULTI = {"sites": 7, "sectors": 1, "inter_site_distance_m": 200.0, "indoor_fraction": 0.0}


def test_interference_follows_the_power_each_device_transmits():
    """E[j, i] = 1/N sum_u min(M_u, M*_u) P_u g_u,i: a power-limited device radiates its
    maximum power whatever its share; one within its limit radiates P_u on each RB held."""
    radio = {**UMI, "uplink_power_control": {"p0_dbm": -70.0, "alpha": 0.8}}
    env, network = _network(radio, {**MULTI, "device_sites": "all"}, 60)
    system, d, cells = network.system, network.devices, network.cells
    in_zero = np.flatnonzero(d.serving == 0)
    limits = system.ul_limit_rb(d.ul_power_db)
    ordered = in_zero[np.argsort(limits[in_zero])]
    limited, free = int(ordered[0]), int(ordered[-1])
    assert limits[limited] < 25 and limits[free] > 50
    scheduler = cells.schedulers[UL][0]

    def expected(shares: dict[int, float]) -> np.ndarray:
        total = sum(
            min(m, limits[u]) * 10 ** ((d.ul_power_db[u] + d.gain_db[u]) / 10)
            for u, m in shares.items()
        )
        return total / 50

    scheduler.open(network._flow(UL, limited, 1e12))
    env.run(until=1e-3)
    assert cells.ul_emission_mw()[0] == pytest.approx(expected({limited: 50.0}), rel=1e-9)
    scheduler.open(network._flow(UL, free, 1e12))
    env.run(until=2e-3)
    # The limited device still transmits 23 dBm (on 25 RBs now), the other P on 25 RBs.
    assert cells.ul_emission_mw()[0] == pytest.approx(
        expected({limited: 25.0, free: 25.0}), rel=1e-9
    )
    pcmax_mw = 10 ** (23 / 10) * 10 ** (d.gain_db[limited] / 10) / 50
    own = limits[limited] * 10 ** ((d.ul_power_db[limited] + d.gain_db[limited]) / 10) / 50
    assert own == pytest.approx(pcmax_mw)


def test_the_default_network_uses_the_3gpp_uplink_power_control():
    scenario = scenario_from_data({})
    control = scenario.radio.uplink_power_control
    assert (control.mode, control.p0_dbm, control.alpha, control.p_cmax_dbm) == (
        "open_loop",
        -106.0,
        1.0,
        23.0,
    )


@pytest.mark.parametrize(
    "radio",
    [{}, {"uplink_power_control": {"mode": "fixed_per_rb"}}, {"model": "nr"}],
    ids=["open_loop", "fixed_per_rb", "nr"],
)
def test_a_resolved_scenario_reads_back_as_itself(radio):
    scenario = scenario_from_data({"radio": radio})
    again = scenario_from_data(scenario.model_dump(mode="json"))
    assert again.radio == scenario.radio


# -- bad input: one line naming the key, exit 2 -------------------------------------------


@pytest.mark.parametrize(
    ("radio", "key"),
    [
        ({"uplink_power_control": {"p0_dbm": -127}}, "uplink_power_control"),
        ({"uplink_power_control": {"p0_dbm": 25}}, "uplink_power_control.p0_dbm"),
        ({"model": "nr", "uplink_power_control": {"p0_dbm": -203}}, "p0_dbm"),
        ({"uplink_power_control": {"alpha": 0.3}}, "uplink_power_control.alpha"),
        ({"uplink_power_control": {"p_cmax_dbm": 33.5}}, "uplink_power_control.p_cmax_dbm"),
        ({"uplink": {"p0_dbm": -80}}, "uplink.p0_dbm"),
        ({"uplink": {"alpha": 0.8}}, "uplink.alpha"),
        ({"uplink": {"tx_power_dbm": 20}}, "uplink.tx_power_dbm"),
        ({"uplink": {"tx_power_rbs": 10}}, "uplink.tx_power_rbs"),
        ({"model": "nr", "ue_tx_power_dbm": 26}, "ue_tx_power_dbm"),
        (
            {"uplink_power_control": {"mode": "fixed_per_rb", "p0_dbm": -80}},
            "uplink_power_control.p0_dbm",
        ),
    ],
)
def test_bad_power_control_input_is_one_line_naming_the_key(tmp_path, capsys, radio, key):
    import yaml

    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"radio": radio}))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and key in err[0], err
