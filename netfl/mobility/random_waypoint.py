"""Random waypoint: walk straight to a uniform destination, pause, repeat; stationary start.

Each device picks a destination uniformly over the layout's sites' hexagons and a speed V
from ``speed_mps``, walks there in a straight line, pauses for a time drawn from
``pause_s``, and repeats (Johnson & Maltz 1996). Started naively the model drifts: its
devices gather in the middle and, with speeds near 0, slow down for ever (Yoon, Liu &
Noble 2003). So the run starts in its stationary regime instead (Navidi & Camp 2004,
Le Boudec & Vojnovic 2006):

- a device is pausing with probability p = E[P] / (E[P] + E[D] E[1/V]) (E[D] the mean
  distance between two uniform points of the area, the mean leg length); a pausing device
  stands at a uniform point with the residual of a pause;
- a moving device is on a leg whose endpoints (P0, P1) are drawn with density proportional
  to |P1 - P0| (a long leg is more likely caught), at a uniform point of it, heading for P1,
  at a speed from f(v) / (v E[1/V]) (:func:`netfl.mobility.draws.speed_biased`).

The spatial density, the mean speed (1 - p) / E[1/V] and the pausing share then stay as
they are from t = 0 on (tests/test_mobility_models.py checks both). The start ignores the
drop: positions come from the stationary distribution over the whole layout.

The union of hexagons is not convex, so a leg may cut a corner of the cluster's jagged
edge (by less than R/2); on a wrap-around layout reported positions are folded into the
cluster (:func:`netfl.mobility.area.fold_into_cluster`).
"""

from __future__ import annotations

import functools

import numpy as np

from netfl.config.dist import Distribution
from netfl.map.layout import Layout, hex_layout
from netfl.mobility.area import keep_in_area
from netfl.mobility.base import LegsAndPauses, Step
from netfl.mobility.draws import mean_inverse_speed, residual, speed_biased

#: Pairs for the Monte Carlo estimate of the mean leg length (0.1% standard error).
_MEAN_LEG_PAIRS = 200_000


@functools.lru_cache(maxsize=8)
def _mean_leg_per_radius(n_sites: int) -> float:
    """E[|P1 - P0|] / R for two uniform points of a layout of ``n_sites`` sites: a geometric
    constant, estimated once with a fixed seed (not a simulation draw)."""
    layout = hex_layout(n_sites, 1, np.sqrt(3.0))  # R = 1
    rng = np.random.default_rng(20040101)
    p0 = layout.drop_uniform(_MEAN_LEG_PAIRS, 0.0, rng)
    p1 = layout.drop_uniform(_MEAN_LEG_PAIRS, 0.0, rng)
    return float(np.hypot(*(p1 - p0).T).mean())


def mean_leg_length_m(layout: Layout) -> float:
    """Mean distance between two points drawn uniformly over the layout's hexagons."""
    return _mean_leg_per_radius(layout.n_sites) * layout.site_radius_m


def _diameter_m(layout: Layout) -> float:
    angles = np.radians(30.0 + 60.0 * np.arange(6))
    corners = (
        layout.site_xy_m[:, None, :]
        + layout.site_radius_m * np.stack([np.cos(angles), np.sin(angles)], axis=1)[None]
    ).reshape(-1, 2)
    return float(np.sqrt(((corners[:, None, :] - corners[None, :, :]) ** 2).sum(-1).max()))


def uniform_points(layout: Layout, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` points uniform over the layout's hexagons (none drawn for ``n = 0``)."""
    return layout.drop_uniform(n, 0.0, rng) if n else np.empty((0, 2))


def length_biased_legs(
    layout: Layout, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` pairs of uniform points of the layout, drawn with density proportional to
    their distance (rejection: accept a uniform pair with probability d / diameter)."""
    diameter = _diameter_m(layout)
    p0s, p1s = [np.empty((0, 2))], [np.empty((0, 2))]
    have = 0
    while have < n:
        m = 3 * (n - have) + 16
        p0 = layout.drop_uniform(m, 0.0, rng)
        p1 = layout.drop_uniform(m, 0.0, rng)
        keep = rng.random(m) * diameter < np.hypot(*(p1 - p0).T)
        p0s.append(p0[keep])
        p1s.append(p1[keep])
        have += int(keep.sum())
    return np.concatenate(p0s)[:n], np.concatenate(p1s)[:n]


class RandomWaypointModel(LegsAndPauses):
    """Random waypoint over the layout, started in its stationary regime (module doc)."""

    def __init__(
        self,
        layout: Layout,
        n: int,
        speed_mps: Distribution,
        pause_s: Distribution,
        rng: np.random.Generator,
    ) -> None:
        self.layout, self.rng = layout, rng
        self.speed_dist, self.pause_dist = speed_mps, pause_s
        mean_pause_s = pause_s.expected()
        mean_leg_s = mean_leg_length_m(layout) * mean_inverse_speed(speed_mps)
        self.pausing_share = mean_pause_s / (mean_pause_s + mean_leg_s)
        paused = rng.random(n) < self.pausing_share
        k, m = int(paused.sum()), int(n - paused.sum())
        self._xy = np.empty((n, 2))
        self.dest = np.empty((n, 2))
        self.speed = np.zeros(n)
        self.pause_left = np.zeros(n)
        self.moving = ~paused
        self._xy[paused] = uniform_points(layout, k, rng)
        self.dest[paused] = self._xy[paused]
        self.pause_left[paused] = residual(pause_s, rng, k)
        p0, p1 = length_biased_legs(layout, m, rng)
        self._xy[~paused] = p0 + rng.random(m)[:, None] * (p1 - p0)
        self.dest[~paused] = p1
        self.speed[~paused] = speed_biased(speed_mps, rng, m)
        self.xy_m = keep_in_area(layout, self._xy)

    def advance(self, dt_s: float) -> Step:
        before = self._xy.copy()
        self._spend(dt_s)
        self.xy_m = keep_in_area(self.layout, self._xy)
        return Step(self.xy_m, np.hypot(*(self._xy - before).T))

    def _start_legs(self, idx: np.ndarray) -> None:
        if not len(idx):
            return
        self.dest[idx] = self.layout.drop_uniform(len(idx), 0.0, self.rng)
        self.speed[idx] = self.speed_dist.sample(self.rng, len(idx))
        self.moving[idx] = True

    def _walk(self, idx: np.ndarray, remaining: np.ndarray) -> None:
        if not len(idx):
            return
        gap = self.dest[idx] - self._xy[idx]
        need_s = np.hypot(*gap.T) / self.speed[idx]
        use = np.minimum(need_s, remaining[idx])
        arrived = use >= need_s
        fraction = np.where(arrived, 1.0, use / np.where(arrived, 1.0, need_s))
        self._xy[idx] += gap * fraction[:, None]
        remaining[idx] -= use
        done = idx[arrived]
        self._xy[done] = self.dest[done]
        self.moving[done] = False
        self.pause_left[done] = self.pause_dist.sample(self.rng, len(done))
