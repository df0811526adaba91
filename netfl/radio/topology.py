"""The network as a graph, and the backhaul links a model crosses on its way.

:func:`build_topology` draws the layout's sites and sectors and the wired links BS ->
edge -> cloud as a networkx graph; :class:`Backhaul` turns a site's path to the aggregator
into :class:`BackhaulLink` resources (latency plus a capacity shared by the models
crossing it, store and forward), one per graph edge, shared by every path across it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

import simpy

from netfl.map.geometry import SITE_RINGS, hex_grid_sites
from netfl.radio.scheduler import Flow, FluidScheduler

if TYPE_CHECKING:
    import networkx as nx

    from netfl.map.layout import Layout

CENTRE_SITE = ("cell", 0, 0)
"""The graph node of the layout's site 0 (axial coordinates 0, 0)."""


def carry(scheduler: FluidScheduler, flow: Flow) -> Generator[simpy.Event, Any, Flow]:
    """Carry ``flow`` on ``scheduler`` (a cell's RBs or a backhaul link); an interrupt
    cancels it, releasing its share at once, and propagates."""
    done = scheduler.open(flow)
    try:
        yield done
    except simpy.Interrupt:
        scheduler.close(flow)
        raise
    return flow


class BackhaulLink:
    """A wired link: latency plus a capacity shared equally by the models crossing it."""

    def __init__(self, env: simpy.Environment, latency_s: float, capacity_bps: float) -> None:
        if latency_s < 0 or not capacity_bps > 0:
            raise ValueError("a backhaul link needs latency_s >= 0 and capacity_bps > 0")
        self.env = env
        self.latency_s = latency_s
        self.capacity_bps = capacity_bps
        self.scheduler = FluidScheduler(env, 1.0, "equal") if math.isfinite(capacity_bps) else None
        #: Crossing it takes no time (no latency, unlimited capacity): ``carry`` would yield
        #: nothing, and returns when it was called.
        self.free = self.scheduler is None and latency_s == 0

    def carry(self, bits: float) -> Generator[simpy.Event, Any, float]:
        """Send ``bits`` over the link (store-and-forward); returns when bits first flowed."""
        start = self.env.now
        if self.scheduler is not None:
            flow = yield from carry(self.scheduler, Flow(bits, self.capacity_bps, 1.0))
            start = flow.start_s
        if self.latency_s > 0:
            yield self.env.timeout(self.latency_s)
        return start


def build_topology(
    radius_m: float, backhaul: Mapping[str, float | None], layout: Layout
) -> nx.Graph:
    """The network as a graph: sites with their neighbours and sectors, BS -> edge -> cloud.

    Nodes ``("cell", q, r)`` (``kind="cell"``) are the layout's sites in axial coordinates,
    with ``site`` (the layout's index), ``x_m``/``y_m`` and ``ring`` (0 for the centre
    site :data:`CENTRE_SITE`), joined to their neighbours by edges of ``kind="neighbour"``.
    Each sector is a node ``("sector", s, k)`` (``kind="sector"``, with ``site``, ``cell`` =
    ``s * sectors + k``, the column of :mod:`netfl.radio.propagation`'s matrices, and
    ``boresight_deg``) joined to its site by an edge of ``kind="sector"``. Every site's BS
    is joined to ``"edge"`` and the edge to ``"cloud"`` by ``kind="backhaul"`` edges with
    ``latency_s`` and ``capacity_bps`` (inf: unlimited), from ``backhaul`` keys
    ``bs_edge_latency_s``, ``bs_edge_capacity_bps``, ``edge_cloud_latency_s``,
    ``edge_cloud_capacity_bps``.
    """
    import networkx as nx  # 0.2 s to import: only when a radio is built

    graph = nx.Graph()
    sites = hex_grid_sites(SITE_RINGS[layout.n_sites], radius_m)
    coords = {(q, r) for q, r, _, _ in sites}
    boresights = layout.cell_boresight_deg
    for s, (q, r, x, y) in enumerate(sites):
        ring = (abs(q) + abs(r) + abs(q + r)) // 2
        graph.add_node(("cell", q, r), kind="cell", site=s, x_m=x, y_m=y, ring=ring)
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
    for q, r, _, _ in sites:
        for dq, dr in ((1, 0), (0, 1), (-1, 1)):
            if (q + dq, r + dr) in coords:
                graph.add_edge(("cell", q, r), ("cell", q + dq, r + dr), kind="neighbour")

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


def site_node(graph: nx.Graph, site: int) -> Any:
    """The graph node of the layout's site ``site``."""
    for node, data in graph.nodes(data=True):
        if data.get("kind") == "cell" and data.get("site") == site:
            return node
    raise KeyError(f"no site {site} in the topology")


def backhaul_path(
    graph: nx.Graph, aggregator: str, source: Any = CENTRE_SITE
) -> list[tuple[Any, Any]]:
    """The backhaul links (graph edges) from a site's BS (the centre one by default) to
    ``aggregator`` (``edge`` or ``cloud``)."""
    import networkx as nx

    nodes = nx.shortest_path(graph, source, aggregator, weight="latency_s")
    return list(itertools.pairwise(nodes))


class Backhaul:
    """One :class:`BackhaulLink` per edge of the topology, shared by every path across it."""

    def __init__(self, env: simpy.Environment, topology: nx.Graph, aggregator: str) -> None:
        self.env, self.topology, self.aggregator = env, topology, aggregator
        self._links: dict[frozenset[Any], BackhaulLink | None] = {}

    def path(self, source: Any = CENTRE_SITE) -> list[BackhaulLink]:
        """The links a model crosses from ``source`` (a site node) to the aggregator."""
        out = []
        for a, b in backhaul_path(self.topology, self.aggregator, source):
            key = frozenset((a, b))
            if key not in self._links:
                data = self.topology.edges[a, b]
                useful = data["latency_s"] > 0 or math.isfinite(data["capacity_bps"])
                self._links[key] = (
                    BackhaulLink(self.env, data["latency_s"], data["capacity_bps"])
                    if useful
                    else None
                )
            link = self._links[key]
            if link is not None:
                out.append(link)
        return out

    def site_paths(self, n_sites: int) -> list[list[BackhaulLink]]:
        """Each site's path to the aggregator, by site index."""
        return [self.path(site_node(self.topology, s)) for s in range(n_sites)]
