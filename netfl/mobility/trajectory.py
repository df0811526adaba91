"""Trajectories given as samples: positions linearly interpolated between them.

Each device has its own samples (times, positions), sorted by time. At trace time t a
device is at the linear interpolation between the samples just before and just after t
(exact at every sample); before its first sample it stands at its first position, after
its last at its last (a vehicle that has not entered yet, or has left, waits at its
entry or exit point). The files are read by :mod:`netfl.mobility.trace_files`.

All devices' samples live in one flat array, sorted by (device, time); the sample before
t of every device is found with one ``searchsorted`` on keys shifted per device, so a
step costs O(devices log samples), whatever the sampling rate and the step.
"""

from __future__ import annotations

import numpy as np

from netfl.mobility.base import Mobility, Step, check_dt


class TrajectoryModel(Mobility):
    """Devices following sampled trajectories (module doc).

    Parameters
    ----------
    times_s
        One array of sample times per device (strictly increasing), trace seconds.
    xy_m
        One ``(samples, 2)`` array of positions per device.
    start_s
        Trace time at simulated time 0.
    """

    def __init__(
        self, times_s: list[np.ndarray], xy_m: list[np.ndarray], start_s: float = 0.0
    ) -> None:
        if not times_s or any(len(t) == 0 for t in times_s):
            raise ValueError("every device needs at least one sample")
        counts = np.array([len(t) for t in times_s])
        self._first = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self._last = self._first + counts - 1
        self._t = np.concatenate([np.asarray(t, dtype=float) for t in times_s])
        self._xy = np.concatenate([np.asarray(p, dtype=float).reshape(-1, 2) for p in xy_m])
        device = np.repeat(np.arange(len(counts)), counts)
        if np.any(np.diff(self._t)[np.diff(device) == 0] <= 0):
            raise ValueError("sample times must increase strictly within each device")
        self._t_min = float(self._t.min())
        # Keys shifted by device: one sorted array, every device's block apart.
        self._span = float(self._t.max() - self._t_min) + 1.0
        self._key = (self._t - self._t_min) + device * self._span
        self._device = np.arange(len(counts))
        self.now_s = float(start_s)
        self.xy_m, self._speed = self._state(self.now_s)

    @property
    def speed_mps(self) -> np.ndarray:
        return self._speed

    def _state(self, t_s: float) -> tuple[np.ndarray, np.ndarray]:
        query = np.clip(t_s - self._t_min, -0.5, self._span - 0.5) + self._device * self._span
        k = np.searchsorted(self._key, query, side="right") - 1
        k = np.clip(k, self._first, self._last)
        j = np.minimum(k + 1, self._last)
        t0, t1 = self._t[k], self._t[j]
        inside = (j > k) & (t_s >= t0)
        width = np.where(inside, t1 - t0, 1.0)
        w = np.where(inside, np.clip((t_s - t0) / width, 0.0, 1.0), 0.0)
        segment = self._xy[j] - self._xy[k]
        xy = self._xy[k] + w[:, None] * segment
        speed = np.where(inside, np.hypot(*segment.T) / width, 0.0)
        return xy, speed

    def advance(self, dt_s: float) -> Step:
        self.now_s += check_dt(dt_s)
        before = self.xy_m
        self.xy_m, self._speed = self._state(self.now_s)
        return Step(self.xy_m, np.hypot(*(self.xy_m - before).T))
