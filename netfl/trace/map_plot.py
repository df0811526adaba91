"""The report's map of a run (:func:`layout`): the layout's sites, sector boundaries and cell
ids, the devices and the moving devices' trajectories coloured by serving cell, and their
handovers, so that handovers can be read against the geometry.

The sites and cells are those of :mod:`netfl.map.layout`: pointy-top hexagons of
circumradius R around each site (:mod:`netfl.map.geometry`); a 3-sector site's sectors point
at 30, 150 and 270 degrees, towards corners of its hexagon, so their boundaries run from the
site to the corners at 90, 210 and 330 degrees and each sector's nominal area is a rhombus
(its label sits at R/2 along its boresight). Each cell has its own colour
(:func:`cell_colours`), and the cells that served a device are tinted with it.

A trajectory is the device's position at t = 0 (``clients.parquet``) and its ``position``
rows; each stretch takes the colour of the cell serving the device at its start, from
``clients.parquet``'s ``cell`` (at t = 0) and the timeline's ``handover`` (to ``cell``),
``radio_link_failure`` (no cell: grey) and ``reattach`` rows. With wrap-around a device
folded across the cluster jumps: no line over the jump. The artists carry ids
(``gid``: ``site``, ``sector_boundary``, ``cell_id``, ``device``, ``trajectory``,
``handover``) for tests and for restyling.
"""

from __future__ import annotations

import colorsys
import math

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.patches import Polygon

from netfl.config.cell import CellConfig
from netfl.errors import MissingDataError
from netfl.map.layout import Layout, layout_from_config
from netfl.trace.drawing import message
from netfl.trace.run import Run

#: Colour of a device without a serving cell (after a radio link failure).
NO_CELL_COLOUR = (0.55, 0.55, 0.55)
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
_CHANGES = ("handover", "radio_link_failure", "reattach")


def cell_colours(n_cells: int) -> np.ndarray:
    """``(n_cells, 3)`` RGB colours, one per cell id: hues a golden-ratio step apart, and
    three brightness levels by the id's remainder mod 3, so that the sectors of one site
    (ids ``3s``, ``3s + 1``, ``3s + 2``) and neighbouring ids differ in both."""
    ids = np.arange(n_cells)
    hues = np.mod(ids * _GOLDEN, 1.0)
    values = np.array([0.85, 0.62, 0.42])[ids % 3]
    return np.array([colorsys.hsv_to_rgb(h, 0.8, v) for h, v in zip(hues, values, strict=True)])


def cell_polygons(layout: Layout) -> list[np.ndarray]:
    """Each cell's nominal area as a polygon (``(corners, 2)``, m), by cell id: the site's
    hexagon for an omni cell, the sector's rhombus for a 3-sector site."""
    corner_deg = 30.0 + 60.0 * np.arange(6)
    polygons = []
    for site_xy in layout.site_xy_m:
        if layout.sectors == 1:
            angles = np.radians(corner_deg)
            polygons.append(site_xy + layout.site_radius_m * _unit(angles))
            continue
        for boresight in layout.sector_boresight_deg:
            angles = np.radians(boresight + np.array([-60.0, 0.0, 60.0]))
            rim = site_xy + layout.site_radius_m * _unit(angles)
            polygons.append(np.vstack([site_xy, rim]))
    return polygons


def cell_label_positions(layout: Layout) -> np.ndarray:
    """``(cells, 2)``: where each cell's id is written (its rhombus's centre, R/2 along the
    boresight; an omni cell's label below its site)."""
    if layout.sectors == 1:
        return layout.site_xy_m + np.array([0.0, -0.3 * layout.site_radius_m])
    boresight = np.radians(layout.cell_boresight_deg)
    return layout.site_xy_m[layout.cell_site] + 0.5 * layout.site_radius_m * _unit(boresight)


def serving_cells(run: Run) -> pd.DataFrame:
    """The serving-cell changes of the run's devices: ``t_s``, ``client``, ``kind`` and
    ``cell`` (the new serving cell; -1 after a radio link failure), in time order."""
    timeline = run.timeline
    rows = timeline[timeline["kind"].isin(_CHANGES)]
    if rows.empty or "cell" not in rows:
        return pd.DataFrame({"t_s": [], "client": [], "kind": [], "cell": []})
    cell = rows["cell"].to_numpy(float)
    cell = np.where((rows["kind"] == "radio_link_failure").to_numpy() | np.isnan(cell), -1, cell)
    out = pd.DataFrame(
        {
            "t_s": rows["t_s"].to_numpy(float),
            "client": rows["client"].to_numpy(int),
            "kind": rows["kind"].astype(str).to_numpy(),
            "cell": cell.astype(int),
        }
    )
    return out.sort_values("t_s", kind="stable").reset_index(drop=True)


def layout(run: Run) -> Figure:
    """The run's map (module doc): sites, sector boundaries, cell ids, devices and
    trajectories coloured by serving cell, handovers marked."""
    clients = run.clients
    if "cell" not in clients or not np.isfinite(clients["x_m"].to_numpy(float)).any():
        return message("Layout", "this run's clients have no positions or serving cells")
    grid = _layout_of(run)
    colours = cell_colours(grid.n_cells)
    first_cell = clients["cell"].fillna(-1).to_numpy(int)
    changes = serving_cells(run)
    used = np.unique(np.concatenate([first_cell, changes["cell"].to_numpy(int)]))
    fig = Figure(figsize=(7.5, 7.5), layout="constrained")
    ax = fig.add_subplot()
    _draw_cells(ax, grid, colours, set(used[used >= 0].tolist()))
    moving = _draw_trajectories(ax, run, grid, colours, changes)
    ax.scatter(
        clients["x_m"],
        clients["y_m"],
        c=_colours_of(first_cell, colours),
        s=10,
        edgecolors="k",
        linewidths=0.3,
        zorder=3,
        gid="device",
    )
    handovers = _draw_handovers(ax, run, grid, changes, moving)
    ax.set_aspect("equal")
    ax.set(xlabel="x (m)", ylabel="y (m)")
    n_used = int((used >= 0).sum())
    ax.set_title(
        f"Devices by serving cell ({n_used} of {grid.n_cells} cells served;"
        f" x: {handovers} handovers)",
        fontsize="medium",
    )
    return fig


def _layout_of(run: Run) -> Layout:
    """The run's layout, from its resolved ``cell`` section alone: the rest of the scenario
    (a trajectory file moved since, a plug-in not installed here) need not load."""
    from pydantic import ValidationError

    try:
        cell = CellConfig.model_validate(run.scenario_dict.get("cell") or {})
    except ValidationError as exc:
        raise MissingDataError(f"{run.path}: its cell section does not load ({exc})") from None
    return layout_from_config(cell)


def _draw_cells(ax: Axes, grid: Layout, colours: np.ndarray, used: set[int]) -> None:
    for cell, corners in enumerate(cell_polygons(grid)):
        tint = colours[cell] if cell in used else "none"
        ax.add_patch(
            Polygon(corners, closed=True, facecolor=tint, alpha=0.15, lw=0, gid="cell_area")
        )
        ax.add_patch(
            Polygon(corners, closed=True, fill=False, ec="0.55", lw=0.5, gid="sector_boundary")
        )
    ax.plot(*grid.site_xy_m.T, "k^", markersize=5, zorder=4, gid="site")
    for cell, (x, y) in enumerate(cell_label_positions(grid)):
        ax.text(x, y, str(cell), ha="center", va="center", fontsize=6, color="0.25", gid="cell_id")


def _draw_trajectories(
    ax: Axes, run: Run, grid: Layout, colours: np.ndarray, changes: pd.DataFrame
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Each moving device's path as stretches coloured by serving cell; returns the paths
    (times, positions) by client."""
    timeline = run.timeline
    if "x_m" not in timeline:
        return {}
    positions = timeline[timeline["kind"] == "position"]
    clients = run.clients.set_index("client")
    start_xy = clients[["x_m", "y_m"]].to_numpy(float)
    first_cell = clients["cell"].fillna(-1).to_numpy(int)
    row_of = {int(c): i for i, c in enumerate(clients.index)}
    jump_m = _jump_m(grid)
    paths: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    segments, segment_colours = [], []
    by_client = {int(str(c)): part for c, part in changes.groupby("client")}
    for key, path in positions.groupby("client"):
        client = int(str(key))
        row = row_of[client]
        t_s = np.concatenate([[0.0], path["t_s"].to_numpy(float)])
        xy = np.vstack([start_xy[row], path[["x_m", "y_m"]].to_numpy(float)])
        paths[client] = (t_s, xy)
        cells = _cell_at(by_client.get(client), int(first_cell[row]), t_s[:-1])
        keep = np.hypot(*np.diff(xy, axis=0).T) <= jump_m
        segments.append(np.stack([xy[:-1], xy[1:]], axis=1)[keep])
        segment_colours.append(_colours_of(cells, colours)[keep])
    if segments:
        lines = LineCollection(
            list(np.concatenate(segments)),
            colors=np.concatenate(segment_colours),
            lw=0.9,
            zorder=2,
        )
        lines.set_gid("trajectory")
        ax.add_collection(lines)
    return paths


def _jump_m(grid: Layout) -> float:
    """A step longer than this is a wrap-around fold (half the images' spacing)."""
    return 0.5 * math.sqrt(19.0) * grid.inter_site_distance_m if grid.wrap_around else math.inf


def _draw_handovers(
    ax: Axes,
    run: Run,
    grid: Layout,
    changes: pd.DataFrame,
    paths: dict[int, tuple[np.ndarray, np.ndarray]],
) -> int:
    """A cross where each handover happened (on the device's path); returns their count."""
    handovers = changes[changes["kind"] == "handover"]
    if handovers.empty:
        return 0
    clients = run.clients.set_index("client")
    jump = _jump_m(grid)
    xy = np.array(
        [
            _position_at(paths.get(int(c)), clients.loc[c, ["x_m", "y_m"]].to_numpy(float), t, jump)
            for c, t in zip(handovers["client"], handovers["t_s"], strict=True)
        ]
    )
    ax.plot(
        xy[:, 0], xy[:, 1], "x", color="k", markersize=3, mew=0.5, alpha=0.5, zorder=5,
        gid="handover",
    )  # fmt: skip
    return len(handovers)


def _cell_at(changes: pd.DataFrame | None, first: int, t_s: np.ndarray) -> np.ndarray:
    """The serving cell at each time: ``first`` until the first change, then the latest."""
    if changes is None or changes.empty:
        return np.full(len(t_s), first)
    index = np.searchsorted(changes["t_s"].to_numpy(float), t_s, side="right") - 1
    cells = changes["cell"].to_numpy(int)
    return np.where(index >= 0, cells[np.maximum(index, 0)], first)


def _position_at(
    path: tuple[np.ndarray, np.ndarray] | None, fallback: np.ndarray, t: float, jump_m: float
) -> np.ndarray:
    """The position at ``t`` along a path, linear between its samples (the sample before
    ``t`` where the device was folded across the cluster in between: a stretch longer than
    ``jump_m``); ``fallback`` for a device without a path."""
    if path is None:
        return fallback
    t_s, xy = path
    i = min(max(int(np.searchsorted(t_s, t, side="right")) - 1, 0), len(t_s) - 1)
    if i + 1 == len(t_s) or np.hypot(*(xy[i + 1] - xy[i])) > jump_m:
        return xy[i]
    share = (t - t_s[i]) / (t_s[i + 1] - t_s[i]) if t_s[i + 1] > t_s[i] else 0.0
    return xy[i] + share * (xy[i + 1] - xy[i])


def _colours_of(cells: np.ndarray, colours: np.ndarray) -> np.ndarray:
    out = np.tile(np.array(NO_CELL_COLOUR), (len(cells), 1))
    valid = (cells >= 0) & (cells < len(colours))
    out[valid] = colours[cells[valid]]
    return out


def _unit(angles_rad: np.ndarray) -> np.ndarray:
    return np.column_stack([np.cos(angles_rad), np.sin(angles_rad)])
