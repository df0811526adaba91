"""Hexagon geometry and device drops around one site.

The hexagon is "pointy-top": corners at angles 30 deg + k 60 deg, circumradius R, so its
inradius (centre to edge) is R sqrt(3)/2 and the inter-site distance of a hexagonal grid
is sqrt(3) R. Positions here are relative to the site at the origin;
:mod:`netfl.map.layout` places sites on the grid of :func:`hex_grid_sites`.
"""

from __future__ import annotations

import numpy as np

SQRT3 = float(np.sqrt(3.0))
SITE_RINGS = {1: 0, 7: 1, 19: 2}  # sites of a hexagonal layout -> rings around the centre


def hexagon_boundary_distance(angle_rad: np.ndarray, radius_m: float) -> np.ndarray:
    """Distance from the centre to the hexagon's edge along each direction."""
    inradius = radius_m * SQRT3 / 2
    # Edge normals of a pointy-top hexagon lie at 0, 60, ..., 300 degrees: the offset is
    # the angle from the nearest normal, in [-30, 30) degrees.
    offset = np.mod(angle_rad + np.pi / 6, np.pi / 3) - np.pi / 6
    return inradius / np.cos(offset)


def fluid_flow_crossings_per_m(radius_m: float, sectors: int) -> float:
    """Cell boundaries crossed per metre travelled, on average, by a device moving in a
    uniformly random direction through devices spread uniformly over hexagonal cells of
    circumradius ``radius_m`` (Thomas, Gilbert & Mazziotto 1988: v L / (pi A) per second,
    L / (pi A) per metre). An omni cell is the hexagon, L = 6 R and A = 3 sqrt(3) R^2 / 2:
    4 / (sqrt(3) pi R). Three sectors pointing between the neighbours split it into three
    rhombi of perimeter 4 R and area A / 3: twice that (tests/test_handover.py, (a)).

    >>> round(fluid_flow_crossings_per_m(100.0, 1) * 1000, 3)  # per km
    7.351
    """
    omni = 4.0 / (SQRT3 * np.pi * radius_m)
    return float(omni if sectors == 1 else 2.0 * omni)


def inside_hexagon(x_m: np.ndarray, y_m: np.ndarray, radius_m: float) -> np.ndarray:
    distance = np.hypot(x_m, y_m)
    return distance <= hexagon_boundary_distance(np.arctan2(y_m, x_m), radius_m) + 1e-9


def drop_uniform_area(
    n: int, radius_m: float, min_distance_m: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points uniform over the hexagon's area, at least ``min_distance_m`` from the BS.

    Rejection sampling from the bounding box, vectorised in batches.
    """
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    have = 0
    while have < n:
        m = max(2 * (n - have), 16)
        x = rng.uniform(-radius_m * SQRT3 / 2, radius_m * SQRT3 / 2, m)
        y = rng.uniform(-radius_m, radius_m, m)
        keep = inside_hexagon(x, y, radius_m) & (np.hypot(x, y) >= min_distance_m)
        xs.append(x[keep])
        ys.append(y[keep])
        have += int(keep.sum())
    return np.concatenate(xs)[:n], np.concatenate(ys)[:n]


def drop_uniform_radius(
    n: int, radius_m: float, min_distance_m: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Uniform angle; distance uniform between ``min_distance_m`` and the hexagon's edge."""
    angle = rng.uniform(0, 2 * np.pi, n)
    edge = hexagon_boundary_distance(angle, radius_m)
    distance = min_distance_m + rng.uniform(0, 1, n) * (edge - min_distance_m)
    return distance * np.cos(angle), distance * np.sin(angle)


def hex_grid_sites(rings: int, radius_m: float) -> list[tuple[int, int, float, float]]:
    """Sites within ``rings`` of the centre one: ``(q, r, x_m, y_m)``, the centre first.

    Axial coordinates of pointy-top hexagons: neighbours sit at the inter-site distance
    ISD = sqrt(3) R, along the edge normals (0, 60, ..., 300 degrees). 1 ring = 7 cells,
    2 rings = 19.
    """
    isd = SQRT3 * radius_m
    sites = []
    for q in range(-rings, rings + 1):
        for r in range(max(-rings, -q - rings), min(rings, -q + rings) + 1):
            sites.append((q, r, isd * (q + r / 2), isd * r * SQRT3 / 2))
    sites.sort(key=lambda s: (abs(s[0]) + abs(s[1]) + abs(s[0] + s[1]), s[0], s[1]))
    return sites
