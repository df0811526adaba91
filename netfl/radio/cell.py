"""Hexagonal cell geometry, device drops, and the network topology as a graph.

The hexagon is "pointy-top": corners at angles 30 deg + k 60 deg, circumradius R, so its
inradius (centre to edge) is R sqrt(3)/2 and the inter-site distance of a hexagonal grid
is sqrt(3) R. The serving base station sits at the origin.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import networkx as nx

    from netfl.radio.layout import Layout

SQRT3 = float(np.sqrt(3.0))
SITE_RINGS = {1: 0, 7: 1, 19: 2}  # sites of a hexagonal layout -> rings around the centre
SERVING_CELL = ("cell", 0, 0)


def hexagon_boundary_distance(angle_rad: np.ndarray, radius_m: float) -> np.ndarray:
    """Distance from the centre to the hexagon's edge along each direction."""
    inradius = radius_m * SQRT3 / 2
    # Edge normals of a pointy-top hexagon lie at 0, 60, ..., 300 degrees: the offset is
    # the angle from the nearest normal, in [-30, 30) degrees.
    offset = np.mod(angle_rad + np.pi / 6, np.pi / 3) - np.pi / 6
    return inradius / np.cos(offset)


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


# -- the hexagonal grid and the network topology ------------------------------------------


def hex_grid_sites(rings: int, radius_m: float) -> list[tuple[int, int, float, float]]:
    """Cells within ``rings`` of the serving cell: ``(q, r, x_m, y_m)``, serving cell first.

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


def build_topology(
    rings: int,
    radius_m: float,
    backhaul: Mapping[str, float | None],
    layout: Layout | None = None,
) -> nx.Graph:
    """The network as a graph: cells with their neighbours, and BS -> edge -> cloud links.

    Nodes ``("cell", q, r)`` (``kind="cell"``) are base-station sites; they carry
    ``x_m``/``y_m`` and ``ring`` (0 for the serving cell ``("cell", 0, 0)``), and are joined
    to their neighbours by edges of ``kind="neighbour"`` (inter-cell interference). There is
    one per site within ``rings`` (the single-cell model's interferers,
    :func:`interferer_sites`) and one per site of ``layout``. A layout's site ``s`` (its
    ``site_xy_m[s]``, the same grid) also carries ``site=s``, and each of its sectors is a
    node ``("sector", s, k)`` (``kind="sector"``, with ``site``, ``cell`` = ``s * sectors +
    k`` (the column of :mod:`netfl.radio.propagation`'s matrices) and ``boresight_deg``),
    joined to its site by an edge of ``kind="sector"``. Every site's BS is joined to
    ``"edge"`` and the edge to ``"cloud"`` by ``kind="backhaul"`` edges with ``latency_s``
    and ``capacity_bps`` (inf: unlimited), from ``backhaul`` keys ``bs_edge_latency_s``,
    ``bs_edge_capacity_bps``, ``edge_cloud_latency_s``, ``edge_cloud_capacity_bps``.
    """
    import networkx as nx  # 0.2 s to import: only when a multi-cell layout is built

    graph = nx.Graph(interfering_rings=rings)
    layout_rings = 0 if layout is None else SITE_RINGS[layout.n_sites]
    sites = hex_grid_sites(max(rings, layout_rings), radius_m)
    coords = {(q, r) for q, r, _, _ in sites}
    for q, r, x, y in sites:
        ring = (abs(q) + abs(r) + abs(q + r)) // 2
        graph.add_node(("cell", q, r), kind="cell", x_m=x, y_m=y, ring=ring)
    for q, r, _, _ in sites:
        for dq, dr in ((1, 0), (0, 1), (-1, 1)):
            if (q + dq, r + dr) in coords:
                graph.add_edge(("cell", q, r), ("cell", q + dq, r + dr), kind="neighbour")
    if layout is not None:
        boresights = layout.cell_boresight_deg
        for s, (q, r, _, _) in enumerate(sites[: layout.n_sites]):
            graph.nodes["cell", q, r]["site"] = s
            for k in range(layout.sectors):
                index = s * layout.sectors + k
                graph.add_node(
                    ("sector", s, k),
                    kind="sector",
                    site=s,
                    cell=index,
                    boresight_deg=float(boresights[index]),
                )
                graph.add_edge(("cell", q, r), ("sector", s, k), kind="sector")

    def capacity(key: str) -> float:
        value = backhaul.get(key)
        return math.inf if value is None else float(value)

    graph.add_node("edge", kind="edge")
    graph.add_node("cloud", kind="cloud")
    for q, r, _, _ in sites:
        graph.add_edge(
            ("cell", q, r),
            "edge",
            kind="backhaul",
            latency_s=float(backhaul.get("bs_edge_latency_s") or 0.0),
            capacity_bps=capacity("bs_edge_capacity_bps"),
        )
    graph.add_edge(
        "edge",
        "cloud",
        kind="backhaul",
        latency_s=float(backhaul.get("edge_cloud_latency_s") or 0.0),
        capacity_bps=capacity("edge_cloud_capacity_bps"),
    )
    return graph


def interferer_sites(graph: nx.Graph) -> np.ndarray:
    """``(m, 2)`` positions of the base stations within the graph's ``interfering_rings``
    of the serving one (the single-cell model's downlink interferers)."""
    rings = graph.graph.get("interfering_rings", 0)
    sites = [
        (data["x_m"], data["y_m"])
        for node, data in graph.nodes(data=True)
        if data.get("kind") == "cell" and node != SERVING_CELL and data["ring"] <= rings
    ]
    return np.asarray(sites, dtype=float).reshape(-1, 2)


def backhaul_path(
    graph: nx.Graph, aggregator: str, source: Any = SERVING_CELL
) -> list[tuple[Any, Any]]:
    """The backhaul links (graph edges) from a site's BS (the serving one by default) to
    ``aggregator`` (``edge`` or ``cloud``)."""
    import networkx as nx

    nodes = nx.shortest_path(graph, source, aggregator, weight="latency_s")
    return list(itertools.pairwise(nodes))
