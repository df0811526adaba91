"""Hexagonal geometry, device drops and the network topology graph."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from netfl.map.geometry import (
    drop_uniform_area,
    drop_uniform_radius,
    hex_grid_sites,
    inside_hexagon,
)
from netfl.map.layout import hex_layout
from netfl.radio.topology import CENTRE_SITE, backhaul_path, build_topology, site_node

BACKHAUL = {
    "bs_edge_latency_s": 0.001,
    "bs_edge_capacity_bps": None,
    "edge_cloud_latency_s": 0.02,
    "edge_cloud_capacity_bps": 1e9,
}


def _topology(rings: int, radius_m: float) -> object:
    sites = {0: 1, 1: 7, 2: 19}[rings]
    return build_topology(radius_m, BACKHAUL, hex_layout(sites, 1, math.sqrt(3) * radius_m))


@pytest.mark.parametrize(
    ("rings", "cells", "neighbour_edges"), [(0, 1, 0), (1, 7, 12), (2, 19, 42)]
)
def test_hex_grid_has_the_right_cells_and_neighbours(rings, cells, neighbour_edges):
    graph = _topology(rings, 100.0)
    cell_nodes = [n for n, d in graph.nodes(data=True) if d["kind"] == "cell"]
    neighbours = [e for e in graph.edges(data=True) if e[2]["kind"] == "neighbour"]
    assert len(cell_nodes) == cells and len(neighbours) == neighbour_edges
    isd = math.sqrt(3) * 100.0
    for a, b, _ in neighbours:
        pa, pb = graph.nodes[a], graph.nodes[b]
        assert math.hypot(pa["x_m"] - pb["x_m"], pa["y_m"] - pb["y_m"]) == pytest.approx(isd)
    assert hex_grid_sites(rings, 100.0)[0][:2] == (0, 0)
    assert site_node(graph, 0) == CENTRE_SITE


def test_backhaul_path_to_edge_or_cloud():
    graph = _topology(1, 100.0)
    edge = [graph.edges[a, b] for a, b in backhaul_path(graph, "edge")]
    cloud = [graph.edges[a, b] for a, b in backhaul_path(graph, "cloud")]
    assert [link["latency_s"] for link in edge] == [0.001]
    assert [link["latency_s"] for link in cloud] == [0.001, 0.02]
    assert math.isinf(cloud[0]["capacity_bps"]) and cloud[1]["capacity_bps"] == 1e9
    assert graph.has_edge(CENTRE_SITE, "edge")
    # From another site of the layout: its own BS -> edge link, then the shared one.
    far = ("cell", 1, 0)
    assert backhaul_path(graph, "cloud", far) == [(far, "edge"), ("edge", "cloud")]


def test_area_drop_is_uniform_over_the_hexagon():
    rng = np.random.default_rng(0)
    x, y = drop_uniform_area(20_000, 100.0, 10.0, rng)
    d = np.hypot(x, y)
    assert inside_hexagon(x, y, 100.0).all() and d.min() >= 10.0
    # Share inside the inscribed circle: pi r_in^2 / hexagon area (minus the 10 m hole).
    r_in = 100.0 * math.sqrt(3) / 2
    hexagon = 1.5 * math.sqrt(3) * 100.0**2 - math.pi * 10.0**2
    expected = (math.pi * r_in**2 - math.pi * 10.0**2) / hexagon
    assert np.mean(d <= r_in) == pytest.approx(expected, abs=0.01)


def test_radius_drop_has_uniform_relative_distance():
    rng = np.random.default_rng(1)
    x, y = drop_uniform_radius(20_000, 100.0, 10.0, rng)
    assert inside_hexagon(x, y, 100.0).all()
    # Along each direction the distance is uniform in [10 m, edge]: the median is the
    # midpoint of the range, far nearer the BS than for an area-uniform drop.
    d = np.hypot(x, y)
    assert np.median(d) < 0.6 * 100.0
    angle = np.arctan2(y, x)
    flat = np.abs(np.mod(angle + np.pi / 6, np.pi / 3) - np.pi / 6) < 0.01  # edge normals
    relative = (d[flat] - 10.0) / (100.0 * math.sqrt(3) / 2 - 10.0)
    assert stats.kstest(relative, "uniform").pvalue > 0.01
