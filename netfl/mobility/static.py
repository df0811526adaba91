"""Devices that do not move (the default): every step leaves them where they are."""

from __future__ import annotations

import numpy as np

from netfl.mobility.base import Mobility, Step, check_dt


class StaticModel(Mobility):
    """Positions fixed at ``xy_m``; :meth:`advance` costs nothing and moves nothing."""

    def __init__(self, xy_m: np.ndarray) -> None:
        self.xy_m = np.array(xy_m, dtype=float).reshape(-1, 2)
        self._still = np.zeros(len(self.xy_m))

    @property
    def speed_mps(self) -> np.ndarray:
        return self._still

    def advance(self, dt_s: float) -> Step:
        check_dt(dt_s)
        return Step(self.xy_m, self._still)
