"""Handover (Event A3, TTT, L3 filter, interruption) and radio link failure.

RSRP comes from a log-distance path loss with exponent 3.76, independent of the engine (the
cell boundaries of (a) do not depend on the law, only on its decreasing with distance), with
the layout's nearest images of the sites for wrap-around. The known results:

(a) fluid flow (Thomas, Gilbert & Mazziotto 1988): devices uniform in the plane with uniform
    directions at speed v cross the boundary of a region of area A and perimeter L at the
    rate v L / (pi A). Omni hexagons of circumradius R: L = 6 R, A = 3 sqrt(3) R^2 / 2, so
    4 v / (sqrt(3) pi R) per device. With 3 sectors (boresights between the neighbours,
    TR 38.901 Sec. 7.8) and a symmetric sector pattern, the edges between sites stay where
    they were and the three sectors split each hexagon along the rays to its corners at
    90, 210 and 330 degrees: each cell is a rhombus of perimeter 4 R and area A / 3, so
    cells change at 8 v / (sqrt(3) pi R), twice the omni rate (half of them between the
    sectors of one site).
(b) more hysteresis or time-to-trigger: fewer ping-pongs, later handovers.
(c) a device on a straight line between two sites hands over after crossing the boundary
    shifted by offset and hysteresis, within TTT plus one update.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from netfl.config.dist import Constant, Exponential
from netfl.config.mobility import HandoverConfig
from netfl.map.layout import hex_layout
from netfl.mobility.random_direction import RandomDirectionModel
from netfl.radio.handover import INDICATION_PERIOD_S, HandoverState, filter_weight
from netfl.radio.shadowing import CorrelatedShadowing

GOOD_SINR = 10.0


def pathloss_db(distance_m):
    """Log-distance path loss (dB, up to a constant that cancels in every comparison)."""
    return 37.6 * np.log10(np.maximum(distance_m, 1.0))


def immediate(**extra):
    """Zero offset, hysteresis and TTT, no L3 filter: association = strongest cell."""
    return HandoverConfig(
        a3_offset_db=0, hysteresis_db=0, time_to_trigger_s=0, filter_coefficient=0, **extra
    )


def state(rsrp, config, t_s=0.0, dt_s=0.1):
    rsrp = np.asarray(rsrp, dtype=float)
    hs = HandoverState(len(rsrp), rsrp.argmax(axis=1), config)
    hs.step(t_s, dt_s, rsrp, np.full(len(rsrp), GOOD_SINR))
    return hs


# --- the layer-3 filter ---------------------------------------------------------------------


def test_filter_keeps_its_time_constant_whatever_the_update_interval():
    assert filter_weight(4, 0.2) == 0.5  # TS 36.331: a = 1/2^(k/4) per 200 ms input
    assert filter_weight(0, 0.05) == 1.0
    responses = []
    for dt in (0.05, 0.1, 0.25):
        hs = state([[-80.0, -90.0]], HandoverConfig(filter_coefficient=8))
        t = 0.0
        for _ in range(round(1.0 / dt)):
            t += dt
            hs.step(t, dt, np.array([[-80.0, -80.0]]), np.array([GOOD_SINR]))
        responses.append(hs.filtered_dbm[0, 1])
    # Step response after 1 s: -90 + 10 (1 - (1 - a)^5), a = 1/2^(8/4) = 1/4.
    assert responses == pytest.approx([-90 + 10 * (1 - 0.75**5)] * 3)


# --- Event A3 -------------------------------------------------------------------------------


def run_levels(hs, levels, dt=0.04, t0=0.0):
    """Step through RSRP rows (one per update); return (time, events) per step."""
    out, t = [], t0
    for row in levels:
        t += dt
        out.append((t, hs.step(t, dt, np.atleast_2d(row), np.array([GOOD_SINR]))))
    return out


def test_a3_hands_over_when_entering_held_for_time_to_trigger():
    config = HandoverConfig(
        a3_offset_db=1.0, hysteresis_db=1.0, time_to_trigger_s=0.16, filter_coefficient=0
    )
    hs = state([[-80.0, -90.0]], config)
    # Neighbour 2.5 dB better (> Off + Hys = 2 dB) from t = 0.04 s on: TTT runs out at 0.2 s.
    steps = run_levels(hs, [[-80.0, -77.5]] * 6)
    done = [(t, e.handovers) for t, e in steps if len(e.handovers.device)]
    assert len(done) == 1
    t, handover = done[0]
    assert t == pytest.approx(0.2)
    assert (handover.source[0], handover.target[0]) == (0, 1)
    assert handover.interruption_end_s[0] == pytest.approx(0.2 + config.interruption_s)
    assert hs.serving[0] == 1 and hs.n_handovers[0] == 1


def test_a3_timer_restarts_when_the_entering_condition_breaks():
    config = HandoverConfig(hysteresis_db=1.0, time_to_trigger_s=0.16, filter_coefficient=0)
    hs = state([[-80.0, -90.0]], config)
    # Better by 1.5 dB (> Hys), then only 0.5 dB at the 3rd update, then better again.
    levels = [[-80.0, -78.5]] * 2 + [[-80.0, -79.5]] + [[-80.0, -78.5]] * 5
    times = [t for t, e in run_levels(hs, levels) if len(e.handovers.device)]
    assert times == [pytest.approx(0.16 + 0.16)]  # re-entered at 0.16 s, + TTT


@pytest.mark.parametrize("falls_back", [False, True])
def test_a_cell_triggered_during_an_interruption_waits_for_its_end_or_leaves(falls_back):
    config = HandoverConfig(
        hysteresis_db=1.0, time_to_trigger_s=0.04, filter_coefficient=0, interruption_s=0.2
    )
    hs = state([[-80.0, -90.0, -95.0]], config)
    first = run_levels(hs, [[-80.0, -75.0, -95.0]] * 2)  # -> cell 1 at 0.08 s
    assert hs.serving[0] == 1
    # Cell 2 triggers at 0.16 s, inside the interruption (until 0.28 s); then it stays
    # better, or falls back below cell 1 long enough to leave the triggered list.
    after = [-90.0, -75.0, -80.0] if falls_back else [-90.0, -75.0, -70.0]
    later = run_levels(hs, [[-90.0, -75.0, -70.0]] * 2 + [after] * 5, t0=first[-1][0])
    done = [t for t, e in later if len(e.handovers.device)]
    if falls_back:
        assert done == [] and hs.serving[0] == 1
    else:
        assert done == [pytest.approx(0.28)] and hs.serving[0] == 2


def test_a_handover_back_within_the_window_is_a_ping_pong():
    config = HandoverConfig(hysteresis_db=0, time_to_trigger_s=0, filter_coefficient=0)
    hs = state([[-80.0, -90.0]], config)
    t = 0.0
    for when, row in [(0.1, [-80.0, -70.0]), (0.6, [-70.0, -80.0]), (2.0, [-80.0, -70.0])]:
        hs.step(when, when - t, np.array([row]), np.array([GOOD_SINR]))
        t = when
    assert hs.n_handovers[0] == 3
    assert hs.n_ping_pongs[0] == 1  # back to 0 after 0.5 s; back to 1 after 1.4 s is not


# --- (a) fluid flow -------------------------------------------------------------------------


def crossings_per_device_second(sectors, pattern):
    radius_m, v_mps, n, duration_s, dt_s = 100.0, 10.0, 300, 120.0, 0.25
    layout = hex_layout(19, sectors, np.sqrt(3.0) * radius_m, wrap_around=True)
    rng = np.random.default_rng(0)
    mover = RandomDirectionModel(
        layout,
        layout.drop_uniform(n, 0.0, rng),
        Constant(value=v_mps),
        Exponential(dist="exponential", mean=30.0),
        Constant(value=0.0),
        rng,
    )

    def rsrp(xy):
        offsets = layout.site_offsets_m(xy)
        level = -pathloss_db(np.hypot(offsets[..., 0], offsets[..., 1]))[:, layout.cell_site]
        if sectors == 1:
            return level
        azimuth = np.degrees(np.arctan2(offsets[..., 1], offsets[..., 0]))[:, layout.cell_site]
        relative = (azimuth - layout.cell_boresight_deg[None, :] + 180.0) % 360.0 - 180.0
        return level + pattern(relative)

    hs = state(rsrp(mover.xy_m), immediate(), dt_s=dt_s)
    t = 0.0
    for _ in range(round(duration_s / dt_s)):
        t += dt_s
        hs.step(t, dt_s, rsrp(mover.advance(dt_s).xy_m), np.full(n, GOOD_SINR))
    return hs.n_handovers.sum() / (n * duration_s), v_mps / radius_m


def test_fluid_flow_omni_hexagons_cross_at_v_l_over_pi_a():
    rate, v_over_r = crossings_per_device_second(1, None)
    assert rate == pytest.approx(4 * v_over_r / (np.sqrt(3) * np.pi), rel=0.05)


def test_fluid_flow_three_sector_cells_cross_at_twice_the_omni_rate():
    # TR 38.901 Table 7.3-1 horizontal pattern: -min(12 (phi / 65)^2, 30) dB.
    rate, v_over_r = crossings_per_device_second(
        3, lambda phi: -np.minimum(12.0 * (phi / 65.0) ** 2, 30.0)
    )
    assert rate == pytest.approx(8 * v_over_r / (np.sqrt(3) * np.pi), rel=0.05)


# --- (b) and (c): two sites on a line -------------------------------------------------------

ISD_M, SPEED_MPS = 500.0, 10.0


def cross(config, n=400, sigma_db=0.0, dt_s=0.1, seed=0, follow_timers=False):
    """Devices drive from 10% to 90% of the way from site 0 to site 1; returns the state
    and each device's first handover time (s after the start)."""
    rng = np.random.default_rng(seed)
    shadow = CorrelatedShadowing(np.full((n, 2), sigma_db), 25.0, rng)
    x = np.full(n, 0.1 * ISD_M)

    def rsrp(x, s):
        return -pathloss_db(np.column_stack([x, ISD_M - x])) - s

    hs = HandoverState(n, np.zeros(n, dtype=np.int64), config)
    hs.step(0.0, dt_s, rsrp(x, shadow.shadowing_db), np.full(n, GOOD_SINR))
    first, t, end = np.full(n, np.nan), 0.0, 0.8 * ISD_M / SPEED_MPS
    while t < end - 1e-9:
        step = min(dt_s, hs.next_due_s() - t) if follow_timers else dt_s
        step = max(step, 1e-6)
        t += step
        x = x + SPEED_MPS * step
        events = hs.step(
            t, step, rsrp(x, shadow.advance(np.full(n, SPEED_MPS * step))), np.full(n, GOOD_SINR)
        )
        new = events.handovers.device[np.isnan(first[events.handovers.device])]
        first[new] = t
    return hs, first


def test_more_hysteresis_or_ttt_means_fewer_ping_pongs_and_later_handovers():
    t_boundary = (0.5 - 0.1) * ISD_M / SPEED_MPS
    results = {}
    for hys, ttt in [(0.0, 0.0), (2.0, 0.0), (4.0, 0.0), (0.0, 0.16), (0.0, 0.48), (0.0, 1.28)]:
        hs, first = cross(HandoverConfig(hysteresis_db=hys, time_to_trigger_s=ttt), sigma_db=6.0)
        assert (hs.serving == 1).mean() > 0.97
        results[hys, ttt] = (hs.n_ping_pongs.mean(), np.nanmean(first) - t_boundary)
    for series in (
        [(0.0, 0.0), (2.0, 0.0), (4.0, 0.0)],
        [(0.0, 0.0), (0.0, 0.16), (0.0, 0.48), (0.0, 1.28)],
    ):
        ping_pongs = [results[k][0] for k in series]
        delays = [results[k][1] for k in series]
        assert all(a > b for a, b in itertools.pairwise(ping_pongs))
        # Each step later by well over the standard error of a mean (about 0.25 s).
        assert all(b - a > 0.4 for a, b in itertools.pairwise(delays))


def boundary_time_s(offset_db):
    """When Mn - Mp = offset_db on the line: 37.6 log10((ISD - x) / x) = -offset_db."""
    ratio = 10 ** (offset_db / 37.6)  # x / (ISD - x)
    x = ISD_M * ratio / (1 + ratio)
    return (x - 0.1 * ISD_M) / SPEED_MPS


@pytest.mark.parametrize(
    "offset_db, hys_db, ttt_s, dt_s, follow",
    [
        (0.0, 0.0, 0.0, 0.1, False),
        (3.0, 1.0, 0.256, 0.064, False),  # TTT a multiple of the update interval
        (-2.0, 2.0, 0.48, 0.1, False),
        (1.5, 0.5, 0.32, 0.1, True),  # the caller also updates when a timer runs out
    ],
)
def test_straight_line_handover_within_ttt_plus_one_update_of_the_shifted_boundary(
    offset_db, hys_db, ttt_s, dt_s, follow
):
    config = HandoverConfig(
        a3_offset_db=offset_db, hysteresis_db=hys_db, time_to_trigger_s=ttt_s, filter_coefficient=0
    )
    hs, first = cross(config, n=3, dt_s=dt_s, follow_timers=follow)
    t_star = boundary_time_s(offset_db + hys_db)
    assert np.all(first > t_star + ttt_s - 1e-9)
    bound = t_star + ttt_s + dt_s + (0.0 if follow or ttt_s % dt_s < 1e-9 else dt_s)
    assert np.all(first <= bound + 1e-9)
    assert hs.n_handovers.tolist() == [1, 1, 1]


# --- radio link failure ---------------------------------------------------------------------


def test_radio_link_fails_when_sinr_stays_below_qout_for_t310():
    config = HandoverConfig(t310_s=0.5, n310=2, reestablishment_s=0.3)
    rsrp = np.array([[-80.0, -85.0]])
    hs = state(rsrp, config)
    hs.step(1.0, 0.9, rsrp, np.array([-10.0]))  # out of sync from 1.0 s
    events = hs.step(1.2, 0.2, rsrp, np.array([-10.0]))
    assert not len(events.failures.device)
    events = hs.step(1.7, 0.5, rsrp, np.array([-10.0]))
    # N310 = 2 frames start T310 at 1.02 s; it runs out at 1.52 s (seen at the 1.7 s update).
    assert events.failures.t_s.tolist() == [pytest.approx(1.0 + 2 * INDICATION_PERIOD_S + 0.5)]
    assert events.failures.cell.tolist() == [0] and not events.attached[0]
    # Detached until 1.82 s, then back on the strongest cell at the next update.
    assert not len(hs.step(1.8, 0.1, rsrp[:, ::-1], np.array([5.0])).reattached.device)
    back = hs.step(1.9, 0.1, rsrp[:, ::-1], np.array([5.0])).reattached
    assert back.cell.tolist() == [1] and back.t_s.tolist() == [pytest.approx(1.82)]
    assert hs.n_failures[0] == 1 and hs.attached[0]


def test_n311_in_sync_indications_stop_t310():
    config = HandoverConfig(t310_s=1.0, n311=3)
    rsrp = np.array([[-80.0, -85.0]])
    hs = state(rsrp, config)
    hs.step(1.0, 1.0, rsrp, np.array([-10.0]))  # T310 starts at 1.01 s
    hs.step(1.5, 0.5, rsrp, np.array([-7.0]))  # between Qout and Qin: T310 keeps running
    hs.step(1.6, 0.1, rsrp, np.array([0.0]))  # in sync from 1.6 s: stopped at 1.63 s
    events = hs.step(3.0, 1.4, rsrp, np.array([0.0]))
    assert not len(events.failures.device) and np.isnan(hs.t310_start_s[0])
    hs.step(3.1, 0.1, rsrp, np.array([-7.0]))
    hs.step(4.5, 1.4, rsrp, np.array([-10.0]))  # out of sync again at 4.5 s
    assert hs.step(5.6, 1.1, rsrp, np.array([-10.0])).failures.t_s.tolist() == [
        pytest.approx(4.51 + 1.0)
    ]


def test_next_due_names_the_earliest_running_timer():
    config = HandoverConfig(hysteresis_db=0.0, time_to_trigger_s=0.48, filter_coefficient=0)
    hs = state([[-80.0, -90.0]], config)
    assert hs.next_due_s() == np.inf
    hs.step(0.1, 0.1, np.array([[-80.0, -70.0]]), np.array([GOOD_SINR]))
    assert hs.next_due_s() == pytest.approx(0.58)
    hs.step(0.2, 0.1, np.array([[-80.0, -70.0]]), np.array([-10.0]))
    assert hs.next_due_s() == pytest.approx(0.2 + INDICATION_PERIOD_S)  # N310 = 1 frame


def test_the_a3_timers_updated_where_they_run_are_the_whole_matrix_rule():
    """_Timers.hold touches only the pairs whose condition holds now or held before, and
    gives what ``where(holds, minimum(since, t), inf)`` over the whole matrix gives, also
    when rows are stopped from outside in between (a handover restarts a device)."""
    from netfl.radio.handover import _Timers

    rng = np.random.default_rng(11)
    timers, dense = _Timers((40, 12)), np.full((40, 12), np.inf)
    for step in range(200):
        t_s = 0.1 * step
        holds = rng.random((40, 12)) < rng.choice([0.02, 0.3])
        since = timers.hold(np.flatnonzero(holds), t_s)
        dense = np.where(holds, np.minimum(dense, t_s), np.inf)
        assert np.array_equal(timers.since_s, dense)
        assert np.array_equal(since, dense[holds])
        restarted = rng.choice(40, 3, replace=False)
        timers.since_s[restarted] = dense[restarted] = np.inf
