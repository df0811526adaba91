"""The area devices move in: inside test, clip, the wrap-around fold and the road's span."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.map.geometry import inside_hexagon
from netfl.map.layout import hex_layout
from netfl.mobility.area import (
    RoadFold,
    clip_to_layout,
    fold_into_cluster,
    fold_with_shift,
    inside_layout,
    nearest_site,
    road_span_m,
)

WRAP = hex_layout(19, 1, 200.0, wrap_around=True)
SEVEN = hex_layout(7, 3, 200.0)


def _inside_by_hexagons(layout, xy):
    local = xy - layout.site_xy_m[nearest_site(layout, xy)]
    return inside_hexagon(local[:, 0], local[:, 1], layout.site_radius_m)


@pytest.mark.parametrize("sites", [1, 7, 19])
def test_inside_agrees_with_the_nearest_sites_hexagon(sites):
    layout = hex_layout(sites, 1, 200.0)
    xy = np.random.default_rng(0).uniform(-700, 700, (20000, 2))
    assert np.array_equal(inside_layout(layout, xy), _inside_by_hexagons(layout, xy))
    assert inside_layout(layout, layout.drop_uniform(5000, 0.0, np.random.default_rng(1))).all()


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(-1e5, 1e5), st.floats(-1e5, 1e5)), min_size=1, max_size=20))
def test_fold_lands_in_the_cluster_by_a_lattice_vector(points):
    xy = np.array(points)
    folded = fold_into_cluster(WRAP, xy)
    assert inside_layout(WRAP, folded).all()
    # xy - folded = a (5, -2) + b (2, 3) in axial units: integer a, b.
    isd = WRAP.inter_site_distance_m
    u = np.array([isd * 4.0, -isd * np.sqrt(3.0)])
    v = np.array([isd * 3.5, isd * 1.5 * np.sqrt(3.0)])
    ab = np.linalg.solve(np.column_stack([u, v]), (xy - folded).T)
    assert np.allclose(ab, np.round(ab), atol=1e-6)


def test_fold_keeps_points_inside_and_is_periodic():
    inside = WRAP.drop_uniform(1000, 0.0, np.random.default_rng(2))
    assert np.array_equal(fold_into_cluster(WRAP, inside), inside)
    isd = WRAP.inter_site_distance_m
    shift = np.array([isd * 4.0, -isd * np.sqrt(3.0)])  # axial (5, -2)
    assert np.allclose(fold_into_cluster(WRAP, inside + 3 * shift), inside)
    with pytest.raises(ValueError, match="wrap-around"):
        fold_into_cluster(SEVEN, inside)


def test_the_cluster_holds_the_disc_fold_skips_and_no_more_than_sqrt_13_3_isd():
    """fold_into_cluster takes every point within 2 ISD of the centre as inside without
    finding its hexagon: the cluster's outline is nowhere nearer than sqrt(13/3) ISD."""
    isd = WRAP.inter_site_distance_m
    angle = np.linspace(0.0, 2 * np.pi, 20001)
    ring = np.column_stack([np.cos(angle), np.sin(angle)])
    assert inside_layout(WRAP, 2.0 * isd * ring).all()
    assert inside_layout(WRAP, (np.sqrt(13 / 3) - 1e-6) * isd * ring).all()
    assert not inside_layout(WRAP, (np.sqrt(13 / 3) + 1e-3) * isd * ring).all()
    points = np.random.default_rng(3).uniform(-3 * isd, 3 * isd, (20000, 2))
    assert inside_layout(WRAP, fold_into_cluster(WRAP, points)).all()


def test_clip_moves_outside_points_onto_the_nearest_hexagon_edge():
    xy = np.random.default_rng(3).uniform(-800, 800, (5000, 2))
    out = ~inside_layout(SEVEN, xy)
    clipped = clip_to_layout(SEVEN, xy)
    assert inside_layout(SEVEN, clipped).all()
    assert np.array_equal(clipped[~out], xy[~out])
    site = SEVEN.site_xy_m[nearest_site(SEVEN, xy[out])]
    # Radially: the clipped point lies on the segment from the site to the point.
    before, after = xy[out] - site, clipped[out] - site
    cross = before[:, 0] * after[:, 1] - before[:, 1] * after[:, 0]
    assert np.allclose(cross / np.hypot(*before.T), 0.0, atol=1e-6)


def test_road_span_through_the_centre_of_a_line_of_sites():
    # Along +x the line crosses 5 hexagons flat side to flat side: 2 ISD + 2 inradii.
    span = road_span_m(WRAP, (0.0, 0.0), 0.0)
    assert span == pytest.approx((-500.0, 500.0))
    assert road_span_m(WRAP, (100.0, 0.0), 180.0) == pytest.approx((-400.0, 600.0))
    assert road_span_m(WRAP, (0.0, 5000.0), 0.0) is None


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.0, 300.0))
def test_a_guessed_fold_is_the_fold_bit_for_bit(seed, step_m):
    """fold_with_shift with the shifts of an earlier position (or wrong ones) as guess gives
    the same points, bit for bit, and the same shifts as without (a road's vehicles fold
    with their last shift as guess at every update)."""
    rng = np.random.default_rng(seed)
    xy = rng.uniform(-3e4, 3e4, (500, 2))
    _, before = fold_with_shift(WRAP, xy)
    later = xy + rng.normal(0.0, step_m, xy.shape)
    expected, shift = fold_with_shift(WRAP, later)
    assert np.array_equal(fold_into_cluster(WRAP, later), expected)
    for guess in (before, rng.integers(-3, 4, before.shape)):
        folded, guessed = fold_with_shift(WRAP, later, guess)
        assert np.array_equal(folded.view(np.int64), expected.view(np.int64))
        assert np.array_equal(guessed, shift)


@pytest.mark.parametrize("heading_deg", [0.0, 17.0, 60.0, 133.0])
def test_folding_points_along_a_road_is_fold_into_cluster_bit_for_bit(heading_deg):
    """RoadFold tabulates the hexagons a line crosses and the shift of each stretch; every
    position it gives is fold_into_cluster's, exactly, for 300 vehicles each way over 2,000
    steps of up to 3.4 m (up to 120 km/h at 0.1 s updates) through several translates of
    the cluster, the table growing as they leave it."""
    layout = hex_layout(19, 3, 200.0, wrap_around=True)
    rng = np.random.default_rng(int(heading_deg))
    start = np.array([30.0, -20.0])
    u = np.array([np.cos(np.radians(heading_deg)), np.sin(np.radians(heading_deg))])
    sign = np.where(np.arange(300) % 2 == 1, -1.0, 1.0)
    s = rng.uniform(-800.0, 800.0, 300)
    step = rng.uniform(0.0, 3.4, 300)
    fold = RoadFold(layout, start, u)
    for _ in range(2000):
        s = s + sign * step
        xy = start + s[:, None] * u
        assert np.array_equal(fold.fold(s), fold_into_cluster(layout, xy))
