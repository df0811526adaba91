"""The area devices move in: the union of the layout's site hexagons, and its wrap-around.

A layout (:class:`netfl.map.layout.Layout`) of 1, 7 or 19 sites covers the union of its
sites' hexagons (pointy-top, circumradius R, on the grid of
:func:`netfl.map.geometry.hex_grid_sites`). The hexagons are the Voronoi cells of the
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

from netfl.map.geometry import SITE_RINGS, SQRT3, hexagon_boundary_distance, inside_hexagon

if TYPE_CHECKING:
    from netfl.map.layout import Layout

#: Axial (q, r) of the two vectors spanning the wrap-around lattice (19-site cluster).
_LATTICE_AXIAL = ((5, -2), (2, 3))
_CLUSTER_RINGS = 2
_AROUND = np.array([(da, db) for da in (0, -1, 1) for db in (0, -1, 1)])  # search order
_INSIDE_ISD = 2.0  # a circle inside the 19-site cluster (fold_into_cluster), in ISDs
#: Layout extents beyond which a point is brought in along its direction before its
#: nearest site is sought: site distances still differ by metres there (float64).
_FAR = 1e9
#: Edge normals of a pointy-top hexagon (0, 60, 120 degrees; the others are their opposites).
_NORMALS = np.array([[np.cos(a), np.sin(a)] for a in np.radians([0.0, 60.0, 120.0])])


def nearest_site(layout: Layout, xy_m: np.ndarray) -> np.ndarray:
    """Index of the nearest site of each point (no wrap-around; ``hypot``, so that points
    as far as 1e300 m do not overflow to a tie)."""
    xy = np.asarray(xy_m, dtype=float).reshape(-1, 2)
    offsets = xy[:, None, :] - layout.site_xy_m[None, :, :]
    return np.argmin(np.hypot(offsets[..., 0], offsets[..., 1]), axis=1)


def inside_layout(layout: Layout, xy_m: np.ndarray) -> np.ndarray:
    """Whether each point lies in the union of the sites' hexagons (boundary included).

    The hexagon holding a point is found by rounding its axial coordinates; the layout's
    sites are the hexagons within ``rings`` of the centre one. Points that rounding puts
    outside (few) are checked against their nearest site's hexagon, with its tolerance
    for points on an edge. Points beyond the layout's bounding circle, or not finite, are
    outside without that (their axial coordinates would overflow the integer cast from
    about 1e21 m on, and wrap to a hexagon inside)."""
    xy = np.asarray(xy_m, dtype=float).reshape(-1, 2)
    reach = (SITE_RINGS[layout.n_sites] + 1) * layout.inter_site_distance_m
    near = np.all(np.abs(xy) <= reach, axis=1)  # False for NaN
    if near.all():  # the usual case: no copies
        q, r = _axial(layout, xy)
        inside = _hex_distance(q, r) <= SITE_RINGS[layout.n_sites]
    else:
        inside = np.zeros(len(xy), dtype=bool)
        q, r = _axial(layout, xy[near])
        inside[near] = _hex_distance(q, r) <= SITE_RINGS[layout.n_sites]
    doubt = np.flatnonzero(near & ~inside)
    if len(doubt):
        local = xy[doubt] - layout.site_xy_m[nearest_site(layout, xy[doubt])]
        inside[doubt] = inside_hexagon(local[:, 0], local[:, 1], layout.site_radius_m)
    return inside


def clip_to_layout(layout: Layout, xy_m: np.ndarray) -> np.ndarray:
    """Points outside the area moved radially onto the boundary of their nearest site's
    hexagon (points inside it are unchanged; finite points at any distance)."""
    xy = np.array(xy_m, dtype=float).reshape(-1, 2)
    # A point so far that every site is as near to float64's precision (1e22 m) first
    # comes in along its direction: its nearest site is then the one that way.
    reach = _FAR * (SITE_RINGS[layout.n_sites] + 1) * layout.inter_site_distance_m
    norm = np.hypot(xy[:, 0], xy[:, 1])
    far = norm > reach
    xy[far] *= (reach / norm[far])[:, None]
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
    >>> from netfl.map.layout import hex_layout
    >>> layout = hex_layout(19, 1, 200.0, wrap_around=True)
    >>> fold_into_cluster(layout, [[0.0, 0.0], [800.0, -200.0 * 3**0.5]]).round(6) + 0.0
    array([[0., 0.],
           [0., 0.]])
    """
    return fold_with_shift(layout, xy_m)[0]


def fold_with_shift(
    layout: Layout, xy_m: np.ndarray, guess: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(fold_into_cluster(xy), ab)``: the folded points and the lattice vector each moved
    by, as ``(n, 2)`` integers ``(a, b)`` of ``a (5, -2) + b (2, 3)`` (0 for points already
    in the cluster).

    ``guess`` (an earlier ``ab`` of the same points, which moved a little since) only saves
    work, and the result is the same bit for bit: where the guessed vector takes a point
    within 2 ISD of the centre, well inside the cluster, it is the search's answer (the
    cluster holds one member of each coset), and the point is moved by the same expression.
    """
    if not layout.wrap_around:
        raise ValueError("folding into the cluster needs a wrap-around layout")
    xy = np.array(xy_m, dtype=float).reshape(-1, 2)
    # Within 2 ISD of the centre a point is in the cluster (its outline's nearest points
    # are sqrt(13/3) ISD = 2.08 ISD away): only the others need their hexagon.
    reach2 = (_INSIDE_ISD * layout.inter_site_distance_m) ** 2
    lattice = _lattice_vectors_m(layout)
    if guess is not None:
        a, b = guess[:, 0], guess[:, 1]
        moved = xy - (a[:, None] * lattice[0] + b[:, None] * lattice[1])
        sure = moved[:, 0] ** 2 + moved[:, 1] ** 2 < reach2
        if sure.all():
            return moved, guess
        # The rest: is the guess still their coset's member (their hexagon shifted by it
        # in the cluster)? Search where not.
        rest = np.flatnonzero(~sure)
        q, r = _axial(layout, xy[rest])
        a, b = a[rest].copy(), b[rest].copy()
        if len(redo := np.flatnonzero(~_in_cluster(q, r, a, b))):
            a[redo], b[redo] = _cluster_coset(q[redo], r[redo])
        moved[rest] = xy[rest] - (a[:, None] * lattice[0] + b[:, None] * lattice[1])
        shift = guess.copy()
        shift[rest, 0], shift[rest, 1] = a, b
        return moved, shift
    ab = np.zeros((len(xy), 2), dtype=np.int64)
    check = np.flatnonzero(xy[:, 0] ** 2 + xy[:, 1] ** 2 >= reach2)
    if not len(check):
        return xy, ab
    q, r = _axial(layout, xy[check])
    away = _hex_distance(q, r) > _CLUSTER_RINGS
    out = check[away]
    if not len(out):
        return xy, ab
    a, b = _cluster_coset(q[away], r[away])
    xy[out] -= a[:, None] * lattice[0] + b[:, None] * lattice[1]
    ab[out, 0], ab[out, 1] = a, b
    return xy, ab


def hexagon_exit_m(
    layout: Layout,
    xy_m: np.ndarray,
    direction: np.ndarray,
    hexagon: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """How far each point can go along its unit ``direction`` before leaving its grid
    hexagon (axial ``hexagon``, default the one holding it; the three slabs
    ``|(p - c) . n| <= ISD / 2`` of the edge normals n at 0, 60 and 120 degrees), and
    which edge it leaves by: ``2 k`` across +n_k, ``2 k + 1`` across -n_k.

    >>> from netfl.map.layout import hex_layout
    >>> layout = hex_layout(19, 1, 200.0, wrap_around=True)
    >>> hexagon_exit_m(layout, np.array([[0.0, 0.0]]), np.array([[1.0, 0.0]]))[0].round(6)
    array([100.])
    """
    isd = layout.inter_site_distance_m
    q, r = _axial(layout, xy_m) if hexagon is None else hexagon
    centre = np.column_stack([isd * (q + r / 2), isd * r * SQRT3 / 2])
    along = (np.asarray(xy_m, dtype=float) - centre) @ _NORMALS.T  # (n, 3)
    speed = np.asarray(direction, dtype=float) @ _NORMALS.T
    ahead = speed > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        exit_m = np.where(ahead, isd / 2 - along, -isd / 2 - along) / speed
    exit_m = np.where(np.abs(speed) > 1e-12, exit_m, np.inf)
    slab = np.argmin(exit_m, axis=1)
    rows = np.arange(len(slab))
    return exit_m[rows, slab], 2 * slab + np.where(ahead[rows, slab], 0, 1)


class RoadFold:
    """:func:`fold_into_cluster` of points on one straight line (a road's vehicles), as a
    table: the line crosses the grid hexagons at known distances along it, and the lattice
    shift of each hexagon stretch is its coset's. Folding a point is then a binary search
    of its distance along the line and one subtraction, however many vehicles change
    hexagon at an update (tested bit for bit against :func:`fold_into_cluster`).

    Parameters
    ----------
    layout
        A wrap-around layout.
    start_m, heading
        The line: ``start_m + s * heading`` (``heading`` a unit vector), s in metres.
    """

    #: Axial steps to the neighbour across each edge: +n0, -n0, +n1, -n1, +n2, -n2 for the
    #: edge normals n0, n1, n2 at 0, 60 and 120 degrees.
    _STEP = np.array([(1, 0), (-1, 0), (0, 1), (0, -1), (-1, 1), (1, -1)])

    def __init__(self, layout: Layout, start_m: np.ndarray, heading: np.ndarray) -> None:
        self.layout = layout
        self.start, self.heading = np.asarray(start_m, float), np.asarray(heading, float)
        self._lattice = _lattice_vectors_m(layout)
        self._lo = self._hi = 0.0
        self._breaks = np.empty(0)  # distances where the line enters the next hexagon
        self._shift_m = np.zeros((1, 2))  # the shift of each stretch between two breaks

    def fold(self, s_m: np.ndarray) -> np.ndarray:
        """The points at distances ``s_m`` along the line, folded into the cluster."""
        s = np.asarray(s_m, dtype=float)
        if s.size and (s.min() < self._lo or s.max() > self._hi):
            span = max(self._hi - self._lo, 2000.0)
            self._tabulate(min(s.min(), self._lo) - span, max(s.max(), self._hi) + span)
        xy = self.start[None, :] + s[:, None] * self.heading[None, :]
        return xy - self._shift_m[np.searchsorted(self._breaks, s, side="right")]

    def _tabulate(self, lo: float, hi: float) -> None:
        """The hexagons the line crosses from ``lo`` to ``hi``, walked edge by edge."""
        q, r = (int(v[0]) for v in _axial(self.layout, self.start + lo * self.heading))
        breaks, hexagons, s = [], [(q, r)], lo
        heading = self.heading[None, :]
        while s < hi:
            at = (np.array([q]), np.array([r]))
            exit_m, edge = hexagon_exit_m(self.layout, self.start + s * heading, heading, at)
            s += max(float(exit_m[0]), 0.0)
            dq, dr = self._STEP[int(edge[0])]
            q, r = q + int(dq), r + int(dr)
            breaks.append(s)
            hexagons.append((q, r))
        axial = np.array(hexagons)
        a, b = np.zeros(len(axial), dtype=np.int64), np.zeros(len(axial), dtype=np.int64)
        out = np.flatnonzero(_hex_distance(axial[:, 0], axial[:, 1]) > _CLUSTER_RINGS)
        if len(out):
            a[out], b[out] = _cluster_coset(axial[out, 0], axial[out, 1])
        self._breaks = np.array(breaks)
        self._shift_m = a[:, None] * self._lattice[0] + b[:, None] * self._lattice[1]
        self._lo, self._hi = lo, hi


def _in_cluster(q: np.ndarray, r: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Whether hexagon (q, r) moved by the lattice vector (a, b) is a cluster hexagon."""
    return _hex_distance(q - 5 * a - 2 * b, r + 2 * a - 3 * b) <= _CLUSTER_RINGS


def _cluster_coset(q: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lattice coordinates (a, b) taking hexagons (q, r) into the cluster: the first of
    the 9 lattice points around the rounded solution that does (one always does)."""
    # Lattice coordinates: (q, r) = a (5, -2) + b (2, 3), determinant 19.
    a0 = np.round((3 * q - 2 * r) / 19).astype(np.int64)
    b0 = np.round((2 * q + 5 * r) / 19).astype(np.int64)
    a = a0[:, None] + _AROUND[:, 0]
    b = b0[:, None] + _AROUND[:, 1]
    ok = _in_cluster(q[:, None], r[:, None], a, b)
    if not ok.any(axis=1).all():  # pragma: no cover - the 9 always hold the coset's member
        raise AssertionError("a point has no image in the wrap-around cluster")
    first = np.argmax(ok, axis=1)[:, None]
    return np.take_along_axis(a, first, 1)[:, 0], np.take_along_axis(b, first, 1)[:, 0]


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
