"""Shadowing and LOS state along trajectories: the autocorrelation exp(-d / d_cor).

Checked empirically against Gudmundson's exponential autocorrelation (the AR(1) must keep
it between any two positions on a straight path), and the LOS state's flips against the
Gaussian-copula probability 2 (Phi(z) - Phi_2(z, z; rho)) for a threshold z = Phi^-1(p).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from netfl.radio.shadowing import (
    LOS_DECORRELATION_M,
    SHADOWING_DECORRELATION_M,
    CorrelatedLosState,
    CorrelatedShadowing,
    decorrelation_distance_m,
)


def test_autocorrelation_along_a_path_is_exp_minus_distance_over_d_cor():
    devices, sites, sigma, d_cor = 4000, 5, 6.0, 13.0
    state = CorrelatedShadowing(np.full((devices, sites), sigma), d_cor, np.random.default_rng(0))
    first = state.shadowing_db.ravel().copy()
    walked = 0.0
    for step_m, checks in [(1.0, 1), (1.0, 4), (2.5, 2), (5.0, 4)]:
        for _ in range(checks):
            now = state.advance(np.full(devices, step_m)).ravel()
            walked += step_m
        assert np.corrcoef(first, now)[0, 1] == pytest.approx(np.exp(-walked / d_cor), abs=0.02)
        assert now.std() == pytest.approx(sigma, rel=0.03)


def test_a_device_that_moves_1_m_keeps_its_shadowing():
    state = CorrelatedShadowing(np.full((20000, 1), 4.0), 10.0, np.random.default_rng(1))
    before = state.shadowing_db.copy()
    after = state.advance(np.full(20000, 1.0))
    assert np.corrcoef(before.ravel(), after.ravel())[0, 1] == pytest.approx(np.exp(-0.1), abs=0.01)
    # The change is sigma sqrt(2 (1 - rho)), far below a new independent draw's sigma sqrt(2).
    assert np.std(after - before) == pytest.approx(4.0 * np.sqrt(2 * (1 - np.exp(-0.1))), rel=0.03)


def test_a_minimum_step_holds_the_value_but_keeps_the_correlation_per_distance():
    n, d_cor = 20000, 10.0
    state = CorrelatedShadowing(
        np.full((n, 1), 4.0), d_cor, np.random.default_rng(5), min_step_m=1.0
    )
    first = state.shadowing_db.ravel().copy()
    for k in range(1, 9):
        now = state.advance(np.full(n, 0.25)).ravel()
        assert np.array_equal(now, first) == (k < 4)  # moves once 1 m is reached
    # 2 m walked, in two moves of 1 m: the correlation of the field 2 m apart.
    assert np.corrcoef(first, now)[0, 1] == pytest.approx(np.exp(-2.0 / d_cor), abs=0.02)


def test_standing_still_keeps_the_value_and_inf_draws_afresh():
    rng = np.random.default_rng(2)
    initial = rng.normal(0.0, 7.0, (3000, 2))
    state = CorrelatedShadowing(np.full((3000, 2), 7.0), 13.0, rng, initial_db=initial)
    assert np.array_equal(state.advance(np.zeros(3000)), initial)
    fresh = state.advance(np.full(3000, np.inf))
    assert abs(np.corrcoef(initial.ravel(), fresh.ravel())[0, 1]) < 0.05
    with pytest.raises(ValueError, match="moved_m"):
        state.advance(np.full(3000, -1.0))


def test_redraw_changes_only_the_links_whose_state_changed():
    state = CorrelatedShadowing(np.full((100, 3), 4.0), 10.0, np.random.default_rng(3))
    before = state.shadowing_db.copy()
    links = np.zeros((100, 3), dtype=bool)
    links[:, 1] = True
    state.redraw(links, np.full((100, 3), 7.82), np.full((100, 3), 13.0))
    after = state.shadowing_db
    assert np.array_equal(after[:, [0, 2]], before[:, [0, 2]])
    assert not np.any(after[:, 1] == before[:, 1])
    assert np.all(state.sigma_db[:, 1] == 7.82) and np.all(state.d_cor_m[:, 1] == 13.0)


def test_decorrelation_distances_are_tr38901_table_7_5_6():
    los = np.array([[True, False], [True, False]])
    assert decorrelation_distance_m("uma", los).tolist() == [[37.0, 50.0], [37.0, 50.0]]
    indoor = np.array([False, True])
    assert decorrelation_distance_m("umi", los, indoor).tolist() == [[10.0, 13.0], [7.0, 7.0]]
    assert SHADOWING_DECORRELATION_M[("rma", "nlos")] == 120.0
    assert LOS_DECORRELATION_M["umi"] == LOS_DECORRELATION_M["uma"] == 50.0


def test_los_state_keeps_its_marginal_and_flips_as_the_gaussian_copula_says():
    n, p = 200_000, 0.3
    rng = np.random.default_rng(4)
    uniform = rng.random((n, 1))
    state = CorrelatedLosState(uniform, LOS_DECORRELATION_M["umi"], rng)
    before = uniform < p
    after = state.advance(np.full(n, 1.0), np.full((n, 1), p))
    assert after.mean() == pytest.approx(p, abs=0.005)
    rho = np.exp(-1.0 / 50.0)
    z = stats.norm.ppf(p)
    both_los = stats.multivariate_normal([0, 0], [[1, rho], [rho, 1]]).cdf([z, z])
    assert (before != after).mean() == pytest.approx(2 * (p - both_los), rel=0.08)
    assert (before != after).mean() < 0.2 * 2 * p * (1 - p)  # far fewer than fresh draws
    # Far away the states are independent: P(flip) = 2 p (1 - p).
    far = state.advance(np.full(n, 1e6), np.full((n, 1), p))
    assert (after != far).mean() == pytest.approx(2 * p * (1 - p), abs=0.01)


def test_moving_some_devices_by_rows_is_moving_all_with_zeros_for_the_rest():
    """advance_rows / redraw_links (what the radio update calls for the devices due) leave
    every state, and every draw, as advance / redraw over the whole matrix would."""
    sigma = np.where(np.random.default_rng(0).random((30, 19)) < 0.5, 4.0, 7.82)
    uniform = np.random.default_rng(1).random((30, 19))
    whole = (
        CorrelatedShadowing(sigma, 10.0, np.random.default_rng(2)),
        CorrelatedLosState(uniform, 50.0, np.random.default_rng(3)),
    )
    rows = (
        CorrelatedShadowing(sigma, 10.0, np.random.default_rng(2)),
        CorrelatedLosState(uniform, 50.0, np.random.default_rng(3)),
    )
    rng = np.random.default_rng(4)
    for _ in range(20):
        due = np.flatnonzero(rng.random(30) < 0.4)
        moved = np.zeros(30)
        moved[due] = rng.choice([0.0, 0.7, 1.3, np.inf], len(due))
        p_los = rng.random((30, 19))
        los = whole[1].advance(moved, p_los)
        assert np.array_equal(rows[1].advance_rows(due, moved[due], p_los[due]), los[due])
        flip = np.zeros((30, 19), dtype=bool)
        flip[due] = rng.random((len(due), 19)) < 0.1
        new_sigma, new_dcor = np.full((30, 19), 3.0), np.full((30, 19), 13.0)
        whole[0].redraw(flip, new_sigma, new_dcor)
        device, site = np.nonzero(flip)
        rows[0].redraw_links(device, site, new_sigma[flip], new_dcor[flip])
        shadow = whole[0].advance(moved)
        assert np.array_equal(rows[0].advance_rows(due, moved[due]), shadow[due])
        assert np.array_equal(rows[0].shadowing_db, shadow)
