"""Hexagonal layouts: 1, 7 or 19 sites of 1 (omni) or 3 sectors, wrap-around; drops.

A cell is a sector of a site of a layout; a single cell is a layout of one omni site.
Sites sit on the hexagonal grid of :func:`netfl.map.geometry.hex_grid_sites` (neighbours
at the inter-site distance ISD along 0, 60, ..., 300 degrees; the centre site first). A
3-sector site points its sectors at azimuths 30, 150 and 270 degrees, between neighbouring
sites, as in TR 36.814 Fig. A.2.1.1-2 and TR 38.901 Sec. 7.8 (the "clover-leaf" layout).
Cells are numbered site by site: cell ``s * sectors + k`` is sector ``k`` of site ``s``.

Wrap-around (19 sites only): the 19-site cluster tiles the plane; each device sees the
nearest of the 7 images (the cluster and its 6 translates) of every site, so every cell has
two full rings of interferers (TR 36.814 Annex A.2.1.1, the usual 3GPP wrap-around). In
axial hex coordinates the translates of a 2-ring cluster are (5, -2) and its rotations by
60 degrees, so the images lie 19 ** 0.5 ISD away.

Drops (:meth:`Layout.drop`): devices are dropped in the hexagons of the sites that
``cell.device_sites`` names (every site, or the centre one), uniformly over the area or with
the distance uniform to the edge (``cell.drop``); :func:`place_groups` then moves the
devices of groups with ``distance_m`` to that distance from the site they were dropped at.

From a scenario: :func:`layout_from_config` (``cell.sites``, ``cell.sectors``,
``cell.wrap_around``, ``cell.radius_m``) and :func:`antenna_from_config` (the sector
antenna of ``cell.antenna_*``, or an omni antenna of ``radio.bs_antenna_gain_dbi`` for
``sectors: 1``); the sites and sectors are nodes of the network topology
(:func:`netfl.radio.topology.build_topology`). The propagation of every device to every
cell is :func:`netfl.radio.propagation.link_gains`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from channel_models.antenna import OmniAntenna, SectorAntenna
from netfl.config.cell import CellConfig
from netfl.config.devices import DevicesConfig
from netfl.map.geometry import (
    SITE_RINGS,
    SQRT3,
    drop_uniform_area,
    drop_uniform_radius,
    hex_grid_sites,
)
from netfl.sampling import draw_checked

SITE_COUNTS = SITE_RINGS  # sites -> rings
SECTOR_BORESIGHTS_DEG = {1: (0.0,), 3: (30.0, 150.0, 270.0)}
_WRAP_AXIAL = ((0, 0), (5, -2), (2, 3), (-3, 5), (-5, 2), (-2, -3), (3, -5))
_DROPS = {"uniform_area": drop_uniform_area, "uniform_radius": drop_uniform_radius}
#: Devices per block of the wrap-around image search (bounds its (block, sites, 7, 2)
#: temporary to about 15 MB, whatever the population).
_WRAP_BLOCK = 8192


@dataclass(frozen=True)
class Layout:
    """Site positions and the sectors' boresights; ``site_offsets_m`` gives device geometry."""

    site_radius_m: float
    """Circumradius of a site's hexagon (``cell.radius_m``): ISD / sqrt(3)."""
    site_xy_m: np.ndarray  # (sites, 2)
    sectors: int
    wrap_around: bool

    @property
    def inter_site_distance_m(self) -> float:
        return SQRT3 * self.site_radius_m

    @property
    def n_sites(self) -> int:
        return len(self.site_xy_m)

    @property
    def n_cells(self) -> int:
        return self.n_sites * self.sectors

    @property
    def cell_site(self) -> np.ndarray:
        """Site index of each cell."""
        return np.repeat(np.arange(self.n_sites), self.sectors)

    @property
    def sector_boresight_deg(self) -> np.ndarray:
        """Boresight azimuth of each sector of a site (degrees; 0 for omni cells)."""
        return np.array(SECTOR_BORESIGHTS_DEG[self.sectors])

    @property
    def cell_boresight_deg(self) -> np.ndarray:
        """Boresight azimuth of each cell (degrees; 0 for omni cells)."""
        return np.tile(self.sector_boresight_deg, self.n_sites)

    def site_offsets_m(self, device_xy_m: np.ndarray) -> np.ndarray:
        """``(devices, sites, 2)`` vectors from each site (its nearest image with
        wrap-around) to each device."""
        return self.site_images(device_xy_m)[0]

    def site_images(
        self, device_xy_m: np.ndarray, guess: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(offsets (devices, sites, 2), image (devices, sites))``: the vectors of
        :meth:`site_offsets_m` and which of the 7 wrap-around images of each site they are
        from (0: the site itself; all 0 without wrap-around).

        ``guess`` (an earlier ``image`` of the same devices, which moved a little since)
        only saves work: a link whose guessed image lies within 0.49 of the images'
        spacing (sqrt(19) ISD) is nearest to it whatever the others, so only the rest are
        searched; the offsets are the same, bit for bit, as without it.
        """
        xy = np.asarray(device_xy_m, dtype=float)
        dx = xy[:, 0, None] - self.site_xy_m[None, :, 0]
        dy = xy[:, 1, None] - self.site_xy_m[None, :, 1]
        return self._nearest_images(dx, dy, guess)

    def link_images(
        self, device_xy_m: np.ndarray, site: np.ndarray, guess: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`site_images` of single links: ``(offsets (links, 2), image (links,))`` from
        site ``site[i]`` to the device at ``device_xy_m[i]``, bit for bit the same."""
        xy = np.asarray(device_xy_m, dtype=float)
        dx = xy[:, 0] - self.site_xy_m[site, 0]
        dy = xy[:, 1] - self.site_xy_m[site, 1]
        return self._nearest_images(dx, dy, guess)

    def _nearest_images(
        self, dx: np.ndarray, dy: np.ndarray, guess: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The nearest wrap-around image of each site-to-device vector ``(dx, dy)``."""
        if not self.wrap_around:
            return np.stack([dx, dy], axis=-1), np.zeros(dx.shape, dtype=np.int8)
        isd = self.inter_site_distance_m
        shift_x = np.array([isd * (q + r / 2) for q, r in _WRAP_AXIAL])
        shift_y = np.array([isd * r * SQRT3 / 2 for _, r in _WRAP_AXIAL])
        safe2 = (0.49 * np.sqrt(19.0) * isd) ** 2
        image = np.zeros(dx.shape, dtype=np.intp) if guess is None else guess.astype(np.intp)
        x, y = dx - shift_x[image], dy - shift_y[image]
        far = np.flatnonzero(x * x + y * y >= safe2)
        for start in range(0, len(far), _WRAP_BLOCK):
            links = far[start : start + _WRAP_BLOCK]
            cx = dx.flat[links][:, None] - shift_x
            cy = dy.flat[links][:, None] - shift_y
            nearest = np.argmin(cx * cx + cy * cy, axis=1)
            image.flat[links] = nearest
            x.flat[links] = dx.flat[links] - shift_x[nearest]
            y.flat[links] = dy.flat[links] - shift_y[nearest]
        return np.stack([x, y], axis=-1), image.astype(np.int8)

    def drop(
        self,
        n: int,
        min_distance_m: float,
        rng: np.random.Generator,
        how: str = "uniform_area",
        sites: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(n, 2)`` device positions and the site each was dropped at.

        Each device picks a site uniformly among ``sites`` (all by default; no draw when
        there is one), then a position in its hexagon by ``how`` (``uniform_area`` or
        ``uniform_radius``), at least ``min_distance_m`` from the site.
        """
        candidates = np.arange(self.n_sites) if sites is None else np.asarray(sites)
        if len(candidates) == 1:
            site = np.full(n, int(candidates[0]), dtype=np.int64)
        else:
            site = candidates[rng.integers(0, len(candidates), n)]
        x, y = _DROPS[how](n, self.site_radius_m, min_distance_m, rng)
        return self.site_xy_m[site] + np.column_stack([x, y]), site

    def drop_uniform(self, n: int, min_distance_m: float, rng: np.random.Generator) -> np.ndarray:
        """``(n, 2)`` device positions uniform over every site's hexagon alike."""
        return self.drop(n, min_distance_m, rng)[0]


def hex_layout(
    sites: int,
    sectors: int,
    inter_site_distance_m: float,
    wrap_around: bool = False,
    radius_m: float | None = None,
) -> Layout:
    """The layout of ``sites`` (1, 7 or 19) sites with ``sectors`` (1 or 3) cells each
    (``radius_m``, when given, is the hexagons' circumradius exactly: ISD / sqrt(3))."""
    if sites not in SITE_COUNTS:
        raise ValueError(f"sites must be 1, 7 or 19, not {sites}")
    if sectors not in SECTOR_BORESIGHTS_DEG:
        raise ValueError(f"sectors must be 1 (omni) or 3, not {sectors}")
    if wrap_around and sites != 19:
        raise ValueError(f"wrap-around needs 19 sites, not {sites}")
    radius = inter_site_distance_m / SQRT3 if radius_m is None else radius_m
    grid = hex_grid_sites(SITE_COUNTS[sites], radius)
    site_xy = np.array([(x, y) for _, _, x, y in grid], dtype=float)
    return Layout(radius, site_xy, sectors, wrap_around)


def layout_from_config(cell: CellConfig) -> Layout:
    """The layout of a scenario's ``cell`` section (ISD = sqrt(3) ``cell.radius_m``)."""
    return hex_layout(
        cell.sites, cell.sectors, SQRT3 * cell.radius_m, bool(cell.wrap_around), cell.radius_m
    )


def antenna_from_config(cell: CellConfig, omni_gain_dbi: float) -> SectorAntenna | OmniAntenna:
    """The cells' antenna: the 3GPP sector antenna of ``cell.antenna_*`` for 3 sectors, an
    omni antenna of ``omni_gain_dbi`` (``radio.bs_antenna_gain_dbi``) for 1."""
    if cell.sectors == 1:
        return OmniAntenna(omni_gain_dbi)
    return SectorAntenna(
        elements=cell.antenna_elements,
        electrical_tilt_deg=cell.antenna_electrical_downtilt_deg,
        mechanical_tilt_deg=cell.antenna_mechanical_downtilt_deg,
    )


def place_groups(
    config: DevicesConfig,
    layout: Layout,
    xy_m: np.ndarray,
    site: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Move the devices of groups with ``distance_m`` to that distance from the site they
    were dropped at, at a uniform angle (RBCS-F's client classes, MAB-CS's rings).

    Apply it to the drop before anything uses the positions; ``rng`` is the run's
    ``devices.placement`` stream. The other devices keep their drop.
    """
    xy_m = np.array(xy_m, dtype=float)
    start = 0
    for i, group in enumerate(config.groups):
        s = slice(start, start + group.count)
        start += group.count
        if group.distance_m is None:
            continue
        key = f"devices.groups.{i}.distance_m"
        distance = draw_checked(group.distance_m, rng, group.count, key, positive=True)
        angle = rng.uniform(0, 2 * np.pi, group.count)
        centre = layout.site_xy_m[site[s]]
        xy_m[s, 0] = centre[:, 0] + distance * np.cos(angle)
        xy_m[s, 1] = centre[:, 1] + distance * np.sin(angle)
    return xy_m
