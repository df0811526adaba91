"""Shadowing and LOS state along trajectories: the autocorrelation exp(-d / d_cor).

Checked empirically against Gudmundson's exponential autocorrelation (the AR(1) must keep
it between any two positions on a straight path), and the LOS state's flips against the
Gaussian-copula probability 2 (Phi(z) - Phi_2(z, z; rho)) for a threshold z = Phi^-1(p).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from channel_models import tr38901
from channel_models.antenna import SectorAntenna
from netfl.map.layout import hex_layout
from netfl.radio.measurement import MeasuredCells
from netfl.radio.motion import mw_of_db
from netfl.radio.propagation import Environment, drop_heights, link_gains
from netfl.radio.shadowing import (
    LOS_DECORRELATION_M,
    SHADOWING_DECORRELATION_M,
    CorrelatedLosState,
    CorrelatedShadowing,
    Links,
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


def test_a_link_looked_at_rarely_keeps_the_correlation_of_the_distance_between_looks():
    """The processes move lazily, by all the distance since they last moved (the AR(1) is
    Markov): a link evaluated every 5 m, or only once after 20 m, has the correlation of
    the field over that distance, and a link nobody asked for stays put."""
    n, d_cor = 20000, 13.0
    state = CorrelatedShadowing(np.full((n, 2), 7.82), d_cor, np.random.default_rng(6))
    first = state.shadowing_db.copy()
    every = Links.of(np.column_stack([np.ones(n, bool), np.zeros(n, bool)]))
    for _ in range(4):
        state.move(slice(None), np.full(n, 5.0))
        state.advance_links(every)  # site 0 every 5 m
    assert np.array_equal(state.shadowing_db[:, 1], first[:, 1])  # site 1 never asked
    once = Links.of(np.column_stack([np.zeros(n, bool), np.ones(n, bool)]))
    late = state.advance_links(once)  # site 1 after 20 m, in one go
    for now, then in ((state.shadowing_db[:, 0], first[:, 0]), (late, first[:, 1])):
        assert np.corrcoef(then, now)[0, 1] == pytest.approx(np.exp(-20.0 / d_cor), abs=0.02)
        assert now.std() == pytest.approx(7.82, rel=0.03)
    # Asked again without moving: unchanged.
    assert np.array_equal(state.advance_links(once), late)


def test_advancing_rows_is_advancing_their_links():
    """advance_rows and advance_links of the same links (np.nonzero order) draw the same."""
    sigma = np.where(np.random.default_rng(0).random((30, 19)) < 0.5, 4.0, 7.82)
    los = np.random.default_rng(1).random((30, 19)) < 0.3
    common = np.random.default_rng(2).standard_normal((30, 2))
    made = [
        CorrelatedShadowing(
            sigma, 10.0, np.random.default_rng(3), site_correlation=0.5, los=los, common_z=common
        )
        for _ in range(2)
    ]
    rng = np.random.default_rng(4)
    for _ in range(10):
        moved = rng.choice([0.0, 0.7, 1.3, np.inf], 30)
        due = np.flatnonzero(moved > 0)
        mask = np.zeros((30, 19), dtype=bool)
        mask[due] = True
        for state in made:
            state.move(slice(None), moved)
        by_rows = made[0].advance_rows(due)
        by_links = made[1].advance_links(Links.of(mask))
        assert np.array_equal(by_rows.ravel(), by_links)
        assert np.array_equal(made[0].shadowing_db, made[1].shadowing_db)


# --- correlation between sites --------------------------------------------------------------

N_DEVICES = 20_000
"""Devices in the correlation checks: the standard error of a correlation near 0.5 is
(1 - 0.5^2) / sqrt(n) = 0.005, so 0.03 is six of them."""


def _drop_shadowing(site_correlation):
    """The shadowing (dB) a drop gives each (device, cell) link of 20,000 devices on 7
    3-sector sites, NLOS everywhere (one sigma): coupling gains with shadowing minus those
    without, from the same streams."""
    layout = hex_layout(7, 3, 500.0)
    xy = layout.drop_uniform(N_DEVICES, 35.0, np.random.default_rng(0))
    heights = drop_heights(N_DEVICES, 0.0, np.random.default_rng(1))
    out = []
    for shadowing in (True, False):
        env = Environment(
            tr38901.UMA_NLOS,
            2.0e9,
            25.0,
            SectorAntenna(),
            shadowing=shadowing,
            site_correlation=site_correlation,
        )
        rngs = [np.random.default_rng(seed) for seed in (2, 3, 4)]
        out.append(link_gains(layout, xy, heights, env, *rngs).coupling_gain_db)
    return out[1] - out[0]


@pytest.mark.parametrize("site_correlation", [0.5, 0.0])
def test_a_drop_correlates_shadowing_between_sites_and_shares_it_between_sectors(
    site_correlation,
):
    """TR 36.814 Table A.2.1.1-2: shadowing correlation 0.5 between sites, 1 between the
    sectors of a site (within 0.03 on 20,000 devices)."""
    shadow = _drop_shadowing(site_correlation)
    assert shadow.std() == pytest.approx(6.0, rel=0.02)  # TR 38.901 UMa NLOS sigma
    np.testing.assert_allclose(shadow[:, 0], shadow[:, 1], atol=1e-9)  # sectors of site 0
    np.testing.assert_allclose(shadow[:, 3], shadow[:, 5], atol=1e-9)  # sectors of site 1
    for a, b in ((0, 3), (0, 18), (6, 12)):  # sites 0-1, 0-6, 2-4
        corr = np.corrcoef(shadow[:, a], shadow[:, b])[0, 1]
        assert corr == pytest.approx(site_correlation, abs=0.03)


def test_correlated_shadowing_keeps_its_site_correlation_and_autocorrelation_along_paths():
    """Moving, each link keeps exp(-d / d_cor) with itself, two sites keep their 0.5 at the
    same place, and 0.5 exp(-d / d_cor) across sites and positions."""
    n, d_cor, sigma = N_DEVICES, 13.0, 7.82
    state = CorrelatedShadowing(
        np.full((n, 3), sigma),
        d_cor,
        np.random.default_rng(7),
        site_correlation=0.5,
        los=np.zeros((n, 3), dtype=bool),
        common_d_cor_m=np.full((n, 2), d_cor),
        dtype=np.float32,
    )
    first = state.shadowing_db.copy()
    assert np.corrcoef(first[:, 0], first[:, 1])[0, 1] == pytest.approx(0.5, abs=0.03)
    for _ in range(10):
        now = state.advance(np.full(n, 1.0))
    rho = np.exp(-10.0 / d_cor)
    assert np.corrcoef(first[:, 0], now[:, 0])[0, 1] == pytest.approx(rho, abs=0.03)
    assert np.corrcoef(now[:, 1], now[:, 2])[0, 1] == pytest.approx(0.5, abs=0.03)
    assert np.corrcoef(first[:, 0], now[:, 1])[0, 1] == pytest.approx(0.5 * rho, abs=0.03)
    assert now.std() == pytest.approx(sigma, rel=0.03)


# --- float32 --------------------------------------------------------------------------------


class _SameDraws:
    """A stream that gives the float32 and float64 processes the same innovations."""

    def __init__(self, seed):
        self._rng = np.random.default_rng(seed)

    def standard_normal(self, size, dtype=np.float64):
        return self._rng.standard_normal(size).astype(dtype)


def test_float32_channel_state_stays_within_0_01_db_of_float64():
    """Moving devices keep their shadowing processes, gains in mW and filtered RSRP in
    float32. Fed the same draws, 3,600 updates of 50 devices' links (1 m each) differ from
    float64 by far less than 0.01 dB (measured: 2.1e-5 dB over 36,000 updates), the mW
    conversion by 1.6e-5 dB, the layer-3 filter by 1e-5 dB (docs/mobility.md)."""
    n, sigma = 50, 7.82
    los = np.zeros((n, 19), dtype=bool)
    kwargs = {"site_correlation": 0.5, "los": los, "common_z": np.zeros((n, 2))}
    made = {
        dtype: CorrelatedShadowing(
            np.full((n, 19), sigma), 13.0, _SameDraws(9), dtype=dtype, **kwargs
        )
        for dtype in (np.float32, np.float64)
    }
    worst = 0.0
    for _ in range(3_600):
        values = [made[d].advance(np.full(n, 1.0)) for d in (np.float32, np.float64)]
        worst = max(worst, float(np.abs(values[0] - values[1]).max()))
    assert worst < 1e-3
    gain_db = np.linspace(-180.0, -40.0, 100_001)
    assert np.abs(10 * np.log10(mw_of_db(gain_db).astype(float)) - gain_db).max() < 1e-4
    rsrp = np.random.default_rng(10).normal(-100.0, 8.0, (3_600, 8))
    cells = MeasuredCells(1, 8, 8, 0.2, 4)
    cells.search(np.array([0]), rsrp[:1], np.array([0]))
    exact = rsrp[0].copy()
    for t, row in enumerate(rsrp):
        f32 = cells.measure(0.2 * t, row[None])[0]
        exact += cells.weight * (row - exact) if t else 0.0
        assert np.abs(f32 - exact).max() < 1e-4
