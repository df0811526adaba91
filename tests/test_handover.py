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
    shifted by offset and hysteresis, within the time-to-trigger counted in measurement
    periods plus one period.

Measurements come at the physical-layer measurement period (``measurement_period_s``), on
the cells each device measures (its serving cell and the strongest others, chosen at each
cell search); the time-to-trigger is counted in measurement periods.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from netfl.config.dist import Constant, Exponential
from netfl.config.mobility import HandoverConfig
from netfl.map.layout import hex_layout
from netfl.mobility.random_direction import RandomDirectionModel
from netfl.radio.handover import INDICATION_PERIOD_S, HandoverState
from netfl.radio.measurement import CELL_SEARCH_PERIOD_S, filter_weight
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


def state(rsrp, config, t_s=0.0):
    rsrp = np.asarray(rsrp, dtype=float)
    hs = HandoverState(len(rsrp), rsrp.argmax(axis=1), config, rsrp.shape[1])
    hs.step(t_s, rsrp, np.full(len(rsrp), GOOD_SINR))
    return hs


# --- the layer-3 filter ---------------------------------------------------------------------


def test_lte_filter_keeps_its_200_ms_time_constant_whatever_the_measurement_period():
    assert filter_weight(4, 0.2) == 0.5  # TS 36.331: a = 1/2^(k/4) per 200 ms input
    assert filter_weight(0, 0.05) == 1.0
    responses = []
    for period in (0.1, 0.2, 0.4):
        config = HandoverConfig(filter_coefficient=8, measurement_period_s=period)
        hs = state([[-80.0, -90.0]], config)
        t = 0.0
        for _ in range(round(1.2 / period)):
            t += period
            hs.step(t, np.array([[-80.0, -80.0]]), np.array([GOOD_SINR]))
        responses.append(float(hs.filtered_dbm[0, 1]))
    # Step response after 1.2 s: -90 + 10 (1 - (1 - a)^6), a = 1/2^(8/4) = 1/4 per 200 ms.
    assert responses == pytest.approx([-90 + 10 * (1 - 0.75**6)] * 3, abs=1e-4)


def test_nr_filter_applies_its_coefficient_per_measurement_period():
    """TS 38.331 Sec. 5.5.3.2: k assumes one input per L1 measurement period."""
    period = 0.4
    config = HandoverConfig(filter_coefficient=8, measurement_period_s=period)
    rsrp = np.array([[-80.0, -90.0]])
    hs = HandoverState(1, np.array([0]), config, 2, filter_input_period_s=period)
    hs.step(0.0, rsrp, np.array([GOOD_SINR]))
    for k in (1, 2, 3):
        hs.step(k * period, np.array([[-80.0, -80.0]]), np.array([GOOD_SINR]))
    assert float(hs.filtered_dbm[0, 1]) == pytest.approx(-90 + 10 * (1 - 0.75**3), abs=1e-4)


# --- Event A3 -------------------------------------------------------------------------------


def run_levels(hs, levels, dt=0.04, t0=0.0):
    """Step through RSRP rows (one per update); return (time, events) per step."""
    out, t = [], t0
    for row in levels:
        t += dt
        out.append((t, hs.step(t, np.atleast_2d(row), np.array([GOOD_SINR]))))
    return out


def handover_times(steps):
    return [t for t, e in steps if len(e.handovers.device)]


@pytest.mark.parametrize(
    "ttt_s, period_s, periods",
    [(0.0, 0.2, 0), (0.256, 0.2, 2), (0.32, 0.16, 2), (0.48, 0.1, 5), (0.32, 0.064, 5)],
)
def test_a3_counts_the_time_to_trigger_in_measurement_periods(ttt_s, period_s, periods):
    """A neighbour whose entering condition holds at N + 1 consecutive measurements, N =
    ceil(TTT / period), triggers at the last of them; held at N only, it never does.
    Radio updates between measurements (every period / 2) count nothing."""
    config = HandoverConfig(
        hysteresis_db=1.0,
        time_to_trigger_s=ttt_s,
        filter_coefficient=0,
        measurement_period_s=period_s,
    )
    better, worse, even = [-80.0, -78.0], [-80.0, -90.0], [-80.0, -79.5]
    for held in (periods, periods + 1):
        hs = state([worse], config)
        # Measurements at k * period; the neighbour is better from the 3rd one on, for
        # `held` measurements (updates in between see the same level), then within the
        # hysteresis of the serving cell, whichever it is.
        levels = [worse] * 4 + [better] * (2 * held) + [even] * 12
        steps = run_levels(hs, levels, dt=period_s / 2)
        if held == periods:
            assert handover_times(steps) == []
        else:
            start = 3 * period_s  # the first measurement that sees it better
            assert handover_times(steps) == [pytest.approx(start + periods * period_s)]
            assert hs.serving[0] == 1 and hs.n_handovers[0] == 1


def test_a3_hands_over_when_entering_held_for_time_to_trigger():
    config = HandoverConfig(
        a3_offset_db=1.0,
        hysteresis_db=1.0,
        time_to_trigger_s=0.16,
        filter_coefficient=0,
        measurement_period_s=0.04,
    )
    hs = state([[-80.0, -90.0]], config)
    # Neighbour 2.5 dB better (> Off + Hys = 2 dB) from t = 0.04 s on: 4 periods later.
    steps = run_levels(hs, [[-80.0, -77.5]] * 6)
    done = [(t, e.handovers) for t, e in steps if len(e.handovers.device)]
    assert len(done) == 1
    t, handover = done[0]
    assert t == pytest.approx(0.2)
    assert (handover.source[0], handover.target[0]) == (0, 1)
    assert handover.interruption_end_s[0] == pytest.approx(0.2 + config.interruption_s)
    assert hs.serving[0] == 1 and hs.n_handovers[0] == 1


def test_a3_count_restarts_when_the_entering_condition_breaks():
    config = HandoverConfig(
        hysteresis_db=1.0, time_to_trigger_s=0.16, filter_coefficient=0, measurement_period_s=0.04
    )
    hs = state([[-80.0, -90.0]], config)
    # Better by 1.5 dB (> Hys), then only 0.5 dB at the 3rd update, then better again.
    levels = [[-80.0, -78.5]] * 2 + [[-80.0, -79.5]] + [[-80.0, -78.5]] * 5
    assert handover_times(run_levels(hs, levels)) == [pytest.approx(0.16 + 0.16)]


@pytest.mark.parametrize("falls_back", [False, True])
def test_a_cell_triggered_during_an_interruption_waits_for_its_end_or_leaves(falls_back):
    config = HandoverConfig(
        hysteresis_db=1.0,
        time_to_trigger_s=0.04,
        filter_coefficient=0,
        interruption_s=0.2,
        measurement_period_s=0.04,
    )
    hs = state([[-80.0, -90.0, -95.0]], config)
    first = run_levels(hs, [[-80.0, -75.0, -95.0]] * 2)  # -> cell 1 at 0.08 s
    assert hs.serving[0] == 1
    # Cell 2 triggers at 0.16 s, inside the interruption (until 0.28 s); then it stays
    # better, or falls back below cell 1 long enough to leave the triggered list.
    after = [-90.0, -75.0, -80.0] if falls_back else [-90.0, -75.0, -70.0]
    later = run_levels(hs, [[-90.0, -75.0, -70.0]] * 2 + [after] * 5, t0=first[-1][0])
    done = handover_times(later)
    if falls_back:
        assert done == [] and hs.serving[0] == 1
    else:
        assert done == [pytest.approx(0.28)] and hs.serving[0] == 2


def test_a_triggered_cell_waiting_for_an_interruption_goes_at_the_next_update():
    """The handover command does not wait for a measurement: the update after the
    interruption ends executes it."""
    config = HandoverConfig(
        hysteresis_db=1.0,
        time_to_trigger_s=0.256,  # 2 periods of 0.2 s
        filter_coefficient=0,
        interruption_s=0.7,
    )
    hs = state([[-80.0, -90.0, -95.0]], config)
    steps = run_levels(hs, [[-80.0, -75.0, -95.0]] * 6, dt=0.1)  # -> cell 1 at 0.6 s
    assert handover_times(steps) == [pytest.approx(0.6)]
    # Cell 2 enters at 0.8 s and triggers at 1.2 s, inside the interruption (until 1.3 s):
    # the update at 1.3 s, between two measurements, hands over.
    later = run_levels(hs, [[-90.0, -75.0, -70.0]] * 8, dt=0.1, t0=0.6)
    assert handover_times(later) == [pytest.approx(1.3)] and hs.serving[0] == 2


def test_a_handover_back_within_the_window_is_a_ping_pong():
    config = HandoverConfig(
        hysteresis_db=0, time_to_trigger_s=0, filter_coefficient=0, measurement_period_s=0.1
    )
    hs = state([[-80.0, -90.0]], config)
    for when, row in [(0.1, [-80.0, -70.0]), (0.6, [-70.0, -80.0]), (2.0, [-80.0, -70.0])]:
        hs.step(when, np.array([row]), np.array([GOOD_SINR]))
    assert hs.n_handovers[0] == 3
    assert hs.n_ping_pongs[0] == 1  # back to 0 after 0.5 s; back to 1 after 1.4 s is not


# --- the measured cells ---------------------------------------------------------------------


def test_after_a_search_a_device_measures_its_serving_cell_and_the_strongest_others():
    rng = np.random.default_rng(3)
    n, cells = 300, 57
    rsrp = rng.normal(-100.0, 12.0, (n, cells))
    serving = rng.integers(0, cells, n)  # anywhere, even weak: always measured
    hs = HandoverState(n, serving, HandoverConfig(), cells)
    hs.step(0.0, rsrp, np.full(n, GOOD_SINR))
    assert hs.measured_cells.shape == (n, 8)
    for i in range(n):
        others = np.delete(np.arange(cells), serving[i])
        strongest = others[np.argsort(-rsrp[i, others])[:7]]
        assert set(hs.measured_cells[i].tolist()) == {int(serving[i]), *strongest.tolist()}
    # Every cell is measured when the layout has no more than the count.
    small = HandoverState(2, np.array([0, 1]), HandoverConfig(measured_cells=12), 7)
    small.step(0.0, rsrp[:2, :7], np.full(2, GOOD_SINR))
    assert small.measured_cells.tolist() == [list(range(7))] * 2


def test_a_new_strong_cell_is_found_within_one_search_period():
    """Cell 9 (unmeasured: the weakest of 10) becomes the strongest at 1.0 s. The device
    cannot see it before the next cell search (at most 0.8 s later), then hands over to it
    after the time-to-trigger; its filter starts at its first measurement."""
    config = HandoverConfig(hysteresis_db=1.0, time_to_trigger_s=0.256, measured_cells=8)
    before = -80.0 - np.arange(10.0)  # cell 0 strongest, cell 9 weakest
    after = before.copy()
    after[9] = -60.0
    hs = HandoverState(1, np.array([0]), config, 10)
    t, joined, handover = 0.0, None, None
    for step in range(40):
        t = round(0.1 * step, 10)
        events = hs.step(t, np.array([before if t < 1.0 else after]), np.array([GOOD_SINR]))
        if joined is None and 9 in hs.measured_cells[0]:
            joined = t
            slot = hs.measured_cells[0].tolist().index(9)
            assert float(hs.filtered_dbm[0, slot]) == pytest.approx(-60.0)  # F_0 = M_1
        if len(events.handovers.device):
            handover = t
            break
    assert joined is not None and 1.0 <= joined < 1.0 + CELL_SEARCH_PERIOD_S + 1e-9
    assert handover == pytest.approx(joined + 0.4)  # ceil(0.256 / 0.2) = 2 periods
    assert hs.serving[0] == 9


def test_a_cell_kept_across_a_search_keeps_its_filter_and_its_count():
    config = HandoverConfig(hysteresis_db=1.0, time_to_trigger_s=1.024, measured_cells=3)
    rsrp = np.array([[-80.0, -78.0, -95.0, -96.0, -120.0]])
    hs = HandoverState(1, np.array([0]), config, 5)
    for step in range(9):  # searches at 0 and 0.8 s: the set stays {0, 1, 2}
        hs.step(0.1 * step, rsrp, np.array([GOOD_SINR]))
    slot = hs.measured_cells[0].tolist().index(1)
    assert hs.measured_cells[0].tolist() == [0, 1, 2]
    assert hs.entering[0, slot] == 5  # measurements at 0, 0.2, ..., 0.8 s
    assert not len(hs.step(1.0, rsrp, np.array([GOOD_SINR])).handovers.device)
    # 1.024 s is 6 periods: the 7th measurement with the condition, at 1.2 s, triggers.
    assert len(hs.step(1.2, rsrp, np.array([GOOD_SINR])).handovers.device)


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

    hs = state(rsrp(mover.xy_m), immediate(measurement_period_s=dt_s))
    t = 0.0
    for _ in range(round(duration_s / dt_s)):
        t += dt_s
        hs.step(t, rsrp(mover.advance(dt_s).xy_m), np.full(n, GOOD_SINR))
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


def cross(config, n=400, sigma_db=0.0, dt_s=0.1, seed=0):
    """Devices drive from 10% to 90% of the way from site 0 to site 1, with a radio update
    every ``dt_s``; returns the state and each device's first handover time (s after the
    start)."""
    rng = np.random.default_rng(seed)
    shadow = CorrelatedShadowing(np.full((n, 2), sigma_db), 25.0, rng)
    x = np.full(n, 0.1 * ISD_M)

    def rsrp(x, s):
        return -pathloss_db(np.column_stack([x, ISD_M - x])) - s

    hs = HandoverState(n, np.zeros(n, dtype=np.int64), config, 2)
    hs.step(0.0, rsrp(x, shadow.shadowing_db), np.full(n, GOOD_SINR))
    first, t, end = np.full(n, np.nan), 0.0, 0.8 * ISD_M / SPEED_MPS
    for k in range(1, round(end / dt_s) + 1):
        t = k * dt_s
        x = x + SPEED_MPS * dt_s
        moved = np.full(n, SPEED_MPS * dt_s)
        events = hs.step(t, rsrp(x, shadow.advance(moved)), np.full(n, GOOD_SINR))
        new = events.handovers.device[np.isnan(first[events.handovers.device])]
        first[new] = t
    return hs, first


def test_more_hysteresis_or_ttt_means_fewer_ping_pongs_and_later_handovers():
    t_boundary = (0.5 - 0.1) * ISD_M / SPEED_MPS
    results = {}
    for hys, ttt in [(0.0, 0.0), (2.0, 0.0), (4.0, 0.0), (0.0, 0.16), (0.0, 0.48), (0.0, 1.28)]:
        config = HandoverConfig(hysteresis_db=hys, time_to_trigger_s=ttt, measurement_period_s=0.1)
        hs, first = cross(config, sigma_db=6.0)
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
    "offset_db, hys_db, ttt_s, period_s, dt_s",
    [
        (0.0, 0.0, 0.0, 0.1, 0.1),
        (3.0, 1.0, 0.256, 0.064, 0.064),  # TTT a multiple of the period
        (-2.0, 2.0, 0.48, 0.1, 0.1),
        (1.5, 0.5, 0.32, 0.2, 0.1),  # 2 periods of 0.2 s, radio updates in between
        (0.0, 1.0, 0.256, 0.2, 0.1),  # the default period and TTT: 2 periods
    ],
)
def test_straight_line_handover_within_ttt_in_periods_plus_one_period_of_the_boundary(
    offset_db, hys_db, ttt_s, period_s, dt_s
):
    """The entering condition is first seen at the first measurement after the shifted
    boundary (within one period of it) and the handover comes N = ceil(TTT / period)
    periods later: after t* + TTT, and before t* + (N + 1) periods."""
    config = HandoverConfig(
        a3_offset_db=offset_db,
        hysteresis_db=hys_db,
        time_to_trigger_s=ttt_s,
        filter_coefficient=0,
        measurement_period_s=period_s,
    )
    hs, first = cross(config, n=3, dt_s=dt_s)
    t_star = boundary_time_s(offset_db + hys_db)
    periods = np.ceil(ttt_s / period_s - 1e-9)
    assert np.all(first >= t_star + ttt_s - 1e-9)
    assert np.all(first <= t_star + (periods + 1) * period_s + 1e-9)
    assert hs.n_handovers.tolist() == [1, 1, 1]


# --- radio link failure ---------------------------------------------------------------------


def test_radio_link_fails_when_sinr_stays_below_qout_for_t310():
    config = HandoverConfig(t310_s=0.5, n310=2, reestablishment_s=0.3)
    rsrp = np.array([[-80.0, -85.0]])
    hs = state(rsrp, config)
    hs.step(1.0, rsrp, np.array([-10.0]))  # out of sync from 1.0 s
    events = hs.step(1.2, rsrp, np.array([-10.0]))
    assert not len(events.failures.device)
    events = hs.step(1.7, rsrp, np.array([-10.0]))
    # N310 = 2 frames start T310 at 1.02 s; it runs out at 1.52 s (seen at the 1.7 s update).
    assert events.failures.t_s.tolist() == [pytest.approx(1.0 + 2 * INDICATION_PERIOD_S + 0.5)]
    assert events.failures.cell.tolist() == [0] and not events.attached[0]
    # Detached until 1.82 s, then back on the strongest cell at the next update.
    assert not len(hs.step(1.8, rsrp[:, ::-1], np.array([5.0])).reattached.device)
    back = hs.step(1.9, rsrp[:, ::-1], np.array([5.0])).reattached
    assert back.cell.tolist() == [1] and back.t_s.tolist() == [pytest.approx(1.82)]
    assert hs.n_failures[0] == 1 and hs.attached[0]


def test_n311_in_sync_indications_stop_t310():
    config = HandoverConfig(t310_s=1.0, n311=3)
    rsrp = np.array([[-80.0, -85.0]])
    hs = state(rsrp, config)
    hs.step(1.0, rsrp, np.array([-10.0]))  # T310 starts at 1.01 s
    hs.step(1.5, rsrp, np.array([-7.0]))  # between Qout and Qin: T310 keeps running
    hs.step(1.6, rsrp, np.array([0.0]))  # in sync from 1.6 s: stopped at 1.63 s
    events = hs.step(3.0, rsrp, np.array([0.0]))
    assert not len(events.failures.device) and np.isnan(hs.t310_start_s[0])
    hs.step(3.1, rsrp, np.array([-7.0]))
    hs.step(4.5, rsrp, np.array([-10.0]))  # out of sync again at 4.5 s
    assert hs.step(5.6, rsrp, np.array([-10.0])).failures.t_s.tolist() == [
        pytest.approx(4.51 + 1.0)
    ]


def test_next_due_names_the_earliest_running_timer():
    config = HandoverConfig(
        hysteresis_db=0.0, time_to_trigger_s=0.48, filter_coefficient=0, measurement_period_s=0.1
    )
    hs = state([[-80.0, -90.0]], config)
    assert hs.next_due_s() == np.inf
    hs.step(0.1, np.array([[-80.0, -70.0]]), np.array([GOOD_SINR]))
    assert hs.next_due_s() == pytest.approx(0.2)  # the next measurement counts on
    hs.step(0.15, np.array([[-80.0, -70.0]]), np.array([-10.0]))  # not a measurement
    assert hs.next_due_s() == pytest.approx(0.2)
    hs.step(0.2, np.array([[-80.0, -70.0]]), np.array([-10.0]))
    assert hs.next_due_s() == pytest.approx(0.2 + INDICATION_PERIOD_S)  # N310 = 1 frame
