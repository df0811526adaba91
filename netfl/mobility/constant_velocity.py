"""Constant velocity along a road: vehicles on a straight line across the layout.

The road is the line through ``start_m`` along ``heading_deg``; its stretch over the
layout runs from where the line first enters the sites' hexagons to where it last leaves
them (:func:`netfl.mobility.area.road_span_m`; a line that misses them is refused; a road
that grazes the jagged edge of a cluster may run outside it for a stretch). Each
vehicle keeps the speed it drew; ``two_way`` sends every second vehicle the other way.
Positions are ``start + s u`` with ``s`` the distance along the road. At the end of the
road (``at_edge``):

- ``reenter``: the vehicle leaves and a new one enters at the near end (the road's traffic
  circulates, so the density along the road stays uniform); its step reports
  ``moved_m = inf``, so its shadowing is drawn afresh;
- ``reverse``: the vehicle turns back (reflection at both ends);
- ``wrap``: on a wrap-around layout the vehicle drives on through the torus: positions are
  folded into the cluster, and the straight line continues in a translate of the cluster.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from netfl.map.layout import Layout
from netfl.mobility.area import RoadFold
from netfl.mobility.base import Mobility, Step, check_dt

EdgeRule = Literal["reenter", "reverse", "wrap"]


class ConstantVelocityModel(Mobility):
    """Vehicles at constant speeds on one road (module doc).

    Parameters
    ----------
    span_m
        ``(s_in, s_out)``: the road's stretch over the layout, distances from ``start_m``.
    s_m
        Initial distance of each vehicle along the road from ``start_m``.
    sign
        +1 for vehicles driving along the heading, -1 for the opposite way.
    """

    def __init__(
        self,
        layout: Layout,
        start_m: tuple[float, float],
        heading_deg: float,
        span_m: tuple[float, float],
        s_m: np.ndarray,
        speed_mps: np.ndarray,
        sign: np.ndarray,
        at_edge: EdgeRule,
    ) -> None:
        if at_edge == "wrap" and not layout.wrap_around:
            raise ValueError("at_edge 'wrap' needs a wrap-around layout")
        self.layout, self.at_edge = layout, at_edge
        self.start = np.asarray(start_m, dtype=float)
        heading = np.radians(heading_deg)
        self.u = np.array([np.cos(heading), np.sin(heading)])
        self.s_in, self.s_out = span_m
        self.s = np.asarray(s_m, dtype=float).copy()
        self.speed = np.asarray(speed_mps, dtype=float)
        self.sign = np.asarray(sign, dtype=float).copy()
        self._fold = RoadFold(layout, self.start, self.u) if at_edge == "wrap" else None
        self.xy_m = self._positions()

    @property
    def speed_mps(self) -> np.ndarray:
        return self.speed

    def _positions(self) -> np.ndarray:
        if self._fold is not None:
            return self._fold.fold(self.s)
        return self.start[None, :] + self.s[:, None] * self.u[None, :]

    def advance(self, dt_s: float) -> Step:
        dt_s = check_dt(dt_s)
        travelled = self.speed * dt_s
        s = self.s + self.sign * travelled
        length = self.s_out - self.s_in
        moved = travelled.copy()
        if self.at_edge == "reenter":
            out = (s > self.s_out) | (s < self.s_in)
            ahead = self.sign > 0
            over = np.where(ahead, s - self.s_out, self.s_in - s)
            wrapped = np.where(
                ahead, self.s_in + np.mod(over, length), self.s_out - np.mod(over, length)
            )
            s = np.where(out, wrapped, s)
            moved[out] = np.inf
        elif self.at_edge == "reverse":
            phase = np.mod(s - self.s_in, 2 * length)
            turns = np.floor((s - self.s_in) / length)
            s = self.s_in + np.where(phase <= length, phase, 2 * length - phase)
            self.sign *= np.where(np.mod(turns, 2) == 1, -1.0, 1.0)
            moved = np.abs(s - self.s)
        self.s = s
        self.xy_m = self._positions()
        return Step(self.xy_m, moved)
