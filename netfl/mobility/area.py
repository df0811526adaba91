"""The area devices move in: the union of the layout's site hexagons, and its wrap-around.

A layout (:class:`netfl.radio.layout.Layout`) of 1, 7 or 19 sites covers the union of its
sites' hexagons (pointy-top, circumradius R, on the grid of
:func:`netfl.radio.geometry.hex_grid_sites`). The hexagons are the Voronoi cells of the
sites, so a point lies in the area exactly when it lies in the hexagon of its nearest site
(:func:`inside_layout`).

With wrap-around (19 sites) the cluster tiles the plane: in axial hex coordinates its
translates are the lattice spanned by (5, -2) and (2, 3) (the shifts of
:meth:`Layout.site_offsets_m`), whose 19 cosets are represented once each by the cluster's
hexagons. :func:`fold_into_cluster` maps any point to its image in the cluster, so a
device that walks off one side comes back on the opposite one (the torus of the
wrap-around). It may become a ``Layout`` method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from netfl.radio.geometry import SITE_RINGS, SQRT3, hexagon_boundary_distance, inside_hexagon

if TYPE_CHECKING:
    from netfl.radio.layout import Layout

#: Axial (q, r) of the two vectors spanning the wrap-around lattice (19-site cluster).
_LATTICE_AXIAL = ((5, -2), (2, 3))
_CLUSTER_RINGS = 2
#: Edge normals of a pointy-top hexagon (0, 60, 120 degrees; the others are their opposites).
_NORMALS = np.array([[np.cos(a), np.sin(a)] for a in np.radians([0.0, 60.0, 120.0])])


def nearest_site(layout: Layout, xy_m: np.ndarray) -> np.ndarray:
    """Index of the nearest site of each point (no wrap-around)."""
    xy = np.asarray(xy_m, dtype=float).reshape(-1, 2)
    d2 = ((xy[:, None, :] - layout.site_xy_m[None, :, :]) ** 2).sum(axis=2)
    return np.argmin(d2, axis=1)


def inside_layout(layout: Layout, xy_m: np.ndarray) -> np.ndarray:
    """Whether each point lies in the union of the sites' hexagons (boundary included).

    The hexagon holding a point is found by rounding its axial coordinates; the layout's
    sites are the hexagons within ``rings`` of the centre one. Points that rounding puts
    outside (few) are checked against their nearest site's hexagon, with its tolerance
    for points on an edge."""
    xy = np.asarray(xy_m, dtype=float).reshape(-1, 2)
    q, r = _axial(layout, xy)
    inside = _hex_distance(q, r) <= SITE_RINGS[layout.n_sites]
    doubt = np.flatnonzero(~inside)
    if len(doubt):
        local = xy[doubt] - layout.site_xy_m[nearest_site(layout, xy[doubt])]
        inside[doubt] = inside_hexagon(local[:, 0], local[:, 1], layout.site_radius_m)
    return inside


def clip_to_layout(layout: Layout, xy_m: np.ndarray) -> np.ndarray:
    """Points outside the area moved radially onto the boundary of their nearest site's
    hexagon (points inside it are unchanged)."""
    xy = np.array(xy_m, dtype=float).reshape(-1, 2)
    site = layout.site_xy_m[nearest_site(layout, xy)]
    local = xy - site
    distance = np.hypot(local[:, 0], local[:, 1])
    edge = hexagon_boundary_distance(np.arctan2(local[:, 1], local[:, 0]), layout.site_radius_m)
    # Just inside the edge, so that inside_layout agrees whatever the rounding.
    scale = np.minimum(1.0, edge * (1 - 1e-9) / np.maximum(distance, 1e-300))
    return site + local * scale[:, None]


def _lattice_vectors_m(layout: Layout) -> np.ndarray:
    isd = layout.inter_site_distance_m
    return np.array([(isd * (q + r / 2), isd * r * SQRT3 / 2) for q, r in _LATTICE_AXIAL])


def _axial(layout: Layout, xy_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Axial coordinates (q, r) of the grid hexagon holding each point (cube rounding)."""
    xy = np.asarray(xy_m, dtype=float).reshape(-1, 2)
    isd = layout.inter_site_distance_m
    r = xy[:, 1] / (isd * SQRT3 / 2)
    q = xy[:, 0] / isd - r / 2
    s = -q - r
    rq, rr, rs = np.round(q), np.round(r), np.round(s)
    dq, dr, ds = np.abs(rq - q), np.abs(rr - r), np.abs(rs - s)
    fix_q = (dq > dr) & (dq > ds)
    fix_r = ~fix_q & (dr > ds)
    rq = np.where(fix_q, -rr - rs, rq)
    rr = np.where(fix_r, -rq - rs, rr)
    return rq.astype(np.int64), rr.astype(np.int64)


def _hex_distance(q: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Hex steps from the centre hexagon to axial (q, r)."""
    return (np.abs(q) + np.abs(r) + np.abs(q + r)) // 2


def fold_into_cluster(layout: Layout, xy_m: np.ndarray) -> np.ndarray:
    """The image of each point in the 19-site wrap-around cluster.

    The point's hexagon (axial ``(q, r)``) is reduced modulo the lattice spanned by
    ``(5, -2)`` and ``(2, 3)`` to the cluster hexagon of its coset, and the point moves by
    the same lattice vector, so ``xy - fold(xy)`` is always a lattice vector and the result
    lies in the cluster. Exact for points at any distance.

    Examples
    --------
    >>> from netfl.radio.layout import hex_layout
    >>> layout = hex_layout(19, 1, 200.0, wrap_around=True)
    >>> fold_into_cluster(layout, [[0.0, 0.0], [800.0, -200.0 * 3**0.5]]).round(6) + 0.0
    array([[0., 0.],
           [0., 0.]])
    """
    if not layout.wrap_around:
        raise ValueError("folding into the cluster needs a wrap-around layout")
    xy = np.array(xy_m, dtype=float).reshape(-1, 2)
    q, r = _axial(layout, xy)
    out = np.flatnonzero(_hex_distance(q, r) > _CLUSTER_RINGS)
    if not len(out):
        return xy
    q, r = q[out], r[out]
    # Lattice coordinates: (q, r) = a (5, -2) + b (2, 3), determinant 19.
    a0 = np.round((3 * q - 2 * r) / 19).astype(np.int64)
    b0 = np.round((2 * q + 5 * r) / 19).astype(np.int64)
    a, b = a0.copy(), b0.copy()
    found = np.zeros(len(out), dtype=bool)
    for da in (0, -1, 1):
        for db in (0, -1, 1):
            ca, cb = a0 + da, b0 + db
            ok = ~found & (
                _hex_distance(q - 5 * ca - 2 * cb, r + 2 * ca - 3 * cb) <= _CLUSTER_RINGS
            )
            a, b = np.where(ok, ca, a), np.where(ok, cb, b)
            found |= ok
    if not found.all():  # pragma: no cover - the 9 candidates always hold the coset's member
        raise AssertionError("a point has no image in the wrap-around cluster")
    lattice = _lattice_vectors_m(layout)
    xy[out] -= a[:, None] * lattice[0] + b[:, None] * lattice[1]
    return xy


def keep_in_area(layout: Layout, xy_m: np.ndarray) -> np.ndarray:
    """Points folded into the cluster on a wrap-around layout, unchanged otherwise."""
    return fold_into_cluster(layout, xy_m) if layout.wrap_around else np.asarray(xy_m, float)


def road_span_m(
    layout: Layout, start_m: tuple[float, float], heading_deg: float
) -> tuple[float, float] | None:
    """Where the line through ``start_m`` along ``heading_deg`` first enters and last
    leaves the sites' hexagons, as distances from ``start_m`` along the heading (negative
    behind it); None when the line misses them.

    Each hexagon is the intersection of three slabs ``|(p - site) . n| <= R sqrt(3) / 2``
    (its edge normals n), so the line's stretch in it is an interval.
    """
    start = np.asarray(start_m, dtype=float)
    heading = np.radians(heading_deg)
    u = np.array([np.cos(heading), np.sin(heading)])
    inradius = layout.site_radius_m * SQRT3 / 2
    w = (start[None, :] - layout.site_xy_m) @ _NORMALS.T  # (sites, 3)
    un = _NORMALS @ u  # (3,)
    moving = np.abs(un) > 1e-12
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (-inradius - w) / un
        t2 = (inradius - w) / un
    lo = np.where(moving, np.minimum(t1, t2), np.where(np.abs(w) <= inradius, -np.inf, np.inf))
    hi = np.where(moving, np.maximum(t1, t2), np.where(np.abs(w) <= inradius, np.inf, -np.inf))
    enter, leave = lo.max(axis=1), hi.min(axis=1)
    crossed = enter < leave
    if not crossed.any():
        return None
    return float(enter[crossed].min()), float(leave[crossed].max())
