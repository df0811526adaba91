"""Random direction: straight legs in uniform directions, with wrap-around on the layout.

Each device walks in a direction drawn uniformly in [0, 2 pi) at a speed drawn from
``speed_mps`` for a travel time drawn from ``travel_s``, pauses for a time drawn from
``pause_s``, and starts a new leg.

- On a wrap-around layout the device moves on the torus of the 19-site cluster: positions
  are folded back into the cluster (:func:`netfl.mobility.area.fold_into_cluster`). Devices
  that start uniform stay uniform, and their directions uniform, whatever the legs (Nain,
  Towsley, Liu & Liu 2005, "Properties of random direction models"). This is the model of
  the fluid-flow handover check (tests/test_handover.py).
- Without wrap-around a step that would leave the sites' hexagons is refused: the device
  stays where it was for that step and turns to a new uniform direction (it may be refused
  again on the next step). Simpler than reflecting on the jagged edge of a cluster, at the
  price of a slightly lower density within one step's distance of the edge.

The run starts from the drop's positions (stationary when the drop covers every site:
``cell.device_sites: all``; devices dropped in the centre site spread out over time), with
uniform directions, a share E[P] / (E[P] + E[T]) of devices pausing, and every leg or pause
caught with its residual time (:func:`netfl.mobility.draws.residual`).
"""

from __future__ import annotations

import numpy as np

from netfl.config.dist import Distribution
from netfl.map.layout import Layout
from netfl.mobility.area import fold_into_cluster, hexagon_exit_m, inside_layout
from netfl.mobility.base import LegsAndPauses, Step, unit_vectors
from netfl.mobility.draws import residual

#: Distance kept from a hexagon's edge before a device is folded again, m (rounding).
_MARGIN_M = 1e-6


class RandomDirectionModel(LegsAndPauses):
    """Random direction over the layout, wrapping around where the layout does."""

    def __init__(
        self,
        layout: Layout,
        xy_m: np.ndarray,
        speed_mps: Distribution,
        travel_s: Distribution,
        pause_s: Distribution,
        rng: np.random.Generator,
    ) -> None:
        self.layout, self.rng = layout, rng
        self.speed_dist, self.travel_dist, self.pause_dist = speed_mps, travel_s, pause_s
        self.xy_m = np.array(xy_m, dtype=float).reshape(-1, 2)
        n = len(self.xy_m)
        mean_pause_s, mean_travel_s = pause_s.expected(), travel_s.expected()
        paused = rng.random(n) < mean_pause_s / (mean_pause_s + mean_travel_s)
        self.moving = ~paused
        self.direction = rng.uniform(0.0, 2 * np.pi, n)
        self.speed = speed_mps.sample(rng, n)
        self.leg_left = np.where(paused, 0.0, residual(travel_s, rng, n))
        self.pause_left = np.where(paused, residual(pause_s, rng, n), 0.0)
        self._unit = unit_vectors(self.direction)
        #: With wrap-around: how far each device can go on its leg before leaving the grid
        #: hexagon it is in. Inside the cluster the fold changes nothing, so only a device
        #: that has gone that far is folded (the same positions, bit for bit).
        self._inside_m = np.zeros(n)
        if layout.wrap_around:
            self._inside_m = hexagon_exit_m(layout, self.xy_m, self._unit)[0] - _MARGIN_M

    def advance(self, dt_s: float) -> Step:
        self._displacement = np.zeros_like(self.xy_m)
        self._spend(dt_s)
        return Step(self.xy_m, np.hypot(*self._displacement.T))

    def _start_legs(self, idx: np.ndarray) -> None:
        if not len(idx):
            return
        self.direction[idx] = self.rng.uniform(0.0, 2 * np.pi, len(idx))
        self.speed[idx] = self.speed_dist.sample(self.rng, len(idx))
        self.leg_left[idx] = self.travel_dist.sample(self.rng, len(idx))
        self.moving[idx] = True
        self._turned(idx)

    def _turned(self, idx: np.ndarray) -> None:
        """The devices ``idx`` head in a new direction."""
        self._unit[idx] = unit_vectors(self.direction[idx])
        if self.layout.wrap_around:
            exit_m = hexagon_exit_m(self.layout, self.xy_m[idx], self._unit[idx])[0]
            self._inside_m[idx] = exit_m - _MARGIN_M

    def _walk(self, idx: np.ndarray, remaining: np.ndarray) -> None:
        if not len(idx):
            return
        use = np.minimum(self.leg_left[idx], remaining[idx])
        distance = self.speed[idx] * use
        step = self._unit[idx] * distance[:, None]
        target = self.xy_m[idx] + step
        if self.layout.wrap_around:
            inside = self._inside_m[idx] - distance
            out = np.flatnonzero(inside <= 0)  # may have left its hexagon: fold
            if len(out):
                target[out] = fold_into_cluster(self.layout, target[out])
                exit_m = hexagon_exit_m(self.layout, target[out], self._unit[idx[out]])[0]
                inside[out] = exit_m - _MARGIN_M
            self._inside_m[idx] = inside
            self.xy_m[idx] = target
            self._displacement[idx] += step
        else:
            ok = inside_layout(self.layout, target)
            self.xy_m[idx[ok]] = target[ok]
            self._displacement[idx[ok]] += step[ok]
            refused = idx[~ok]
            self.direction[refused] = self.rng.uniform(0.0, 2 * np.pi, len(refused))
            self._unit[refused] = unit_vectors(self.direction[refused])
        remaining[idx] -= use
        self.leg_left[idx] -= use
        done = idx[self.leg_left[idx] <= 1e-12]
        self.moving[done] = False
        self.pause_left[done] = self.pause_dist.sample(self.rng, len(done))
