"""Gauss-Markov mobility (Liang & Haas 1999): speed and direction with tunable memory.

Speed s and direction d of each device are discrete Gauss-Markov (AR(1)) processes around
their means (Liang & Haas 1999; in the speed/direction form of Camp, Boleng & Davies 2002):

    s_n = a s_(n-1) + (1 - a) s_mean + sqrt(1 - a^2) sigma_s x_n
    d_n = a d_(n-1) + (1 - a) d_mean + sqrt(1 - a^2) sigma_d y_n,    x_n, y_n ~ N(0, 1)

and the device moves by s_(n-1) dt along d_(n-1). The stationary law of s is
N(s_mean, sigma_s^2) and its autocorrelation after k steps a^k. The radio update's step dt
varies, so a = alpha ** (dt / alpha_interval_s): the process is then the exact sampling of
a continuous Gauss-Markov (Ornstein-Uhlenbeck) process with correlation
alpha ** (tau / alpha_interval_s) after a lag tau, whatever the steps. Devices start in
the stationary law (s ~ N(s_mean, sigma_s^2), d ~ N(d_mean, sigma_d^2)) at their drop
positions. A negative speed drives backwards; ``speed_mps`` reports |s|.

Edges: on a wrap-around layout positions fold into the cluster; otherwise a step that would
leave the sites' hexagons is refused and the device turns back (d and d_mean + pi).
"""

from __future__ import annotations

import numpy as np

from netfl.map.layout import Layout
from netfl.mobility.area import fold_into_cluster, inside_layout
from netfl.mobility.base import Mobility, Step, check_dt, unit_vectors


class GaussMarkovModel(Mobility):
    """Gauss-Markov speed and direction for every device of a group (module doc).

    Parameters
    ----------
    mean_speed_mps, mean_direction_rad
        Per-device means s_mean and d_mean.
    speed_std_mps, direction_std_rad
        sigma_s and sigma_d.
    alpha, alpha_interval_s
        The memory: correlation ``alpha`` over ``alpha_interval_s`` seconds.
    """

    def __init__(
        self,
        layout: Layout,
        xy_m: np.ndarray,
        mean_speed_mps: np.ndarray,
        speed_std_mps: float,
        mean_direction_rad: np.ndarray,
        direction_std_rad: float,
        alpha: float,
        alpha_interval_s: float,
        rng: np.random.Generator,
    ) -> None:
        self.layout, self.rng = layout, rng
        self.xy_m = np.array(xy_m, dtype=float).reshape(-1, 2)
        n = len(self.xy_m)
        self.mean_speed = np.asarray(mean_speed_mps, dtype=float)
        self.mean_direction = np.asarray(mean_direction_rad, dtype=float).copy()
        self.speed_std, self.direction_std = float(speed_std_mps), float(direction_std_rad)
        self.alpha, self.alpha_interval_s = float(alpha), float(alpha_interval_s)
        self.speed = self.mean_speed + self.speed_std * rng.standard_normal(n)
        self.direction = self.mean_direction + self.direction_std * rng.standard_normal(n)

    @property
    def speed_mps(self) -> np.ndarray:
        return np.abs(self.speed)

    def memory(self, dt_s: float) -> float:
        """The AR(1) coefficient a over a step of ``dt_s``."""
        return float(self.alpha ** (dt_s / self.alpha_interval_s))

    def advance(self, dt_s: float) -> Step:
        dt_s = check_dt(dt_s)
        n = self.n_devices
        step = unit_vectors(self.direction) * (self.speed * dt_s)[:, None]
        target = self.xy_m + step
        moved = np.abs(self.speed) * dt_s
        if self.layout.wrap_around:
            self.xy_m = fold_into_cluster(self.layout, target)
        else:
            ok = inside_layout(self.layout, target)
            self.xy_m = np.where(ok[:, None], target, self.xy_m)
            moved = np.where(ok, moved, 0.0)
            turn = np.where(ok, 0.0, np.pi)
            self.direction += turn
            self.mean_direction += turn
        a = self.memory(dt_s)
        noise = np.sqrt(1.0 - a * a)
        self.speed = (
            a * self.speed
            + (1 - a) * self.mean_speed
            + noise * self.speed_std * self.rng.standard_normal(n)
        )
        self.direction = (
            a * self.direction
            + (1 - a) * self.mean_direction
            + noise * self.direction_std * self.rng.standard_normal(n)
        )
        return Step(self.xy_m, moved)
