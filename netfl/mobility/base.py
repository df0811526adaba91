"""What every mobility model offers the radio update: positions, speeds, one vectorised step.

A model holds the state of ALL devices of one group as arrays and advances them together:
``step = model.advance(dt_s)`` moves every device by ``dt_s`` seconds and returns the new
positions and how far each device moved (:class:`Step`). No SimPy and no Python loop over
devices; a model that has legs (waypoints, travel times) loops only over the legs that end
inside one step, each pass vectorised over the devices concerned. Each model draws from its
own ``numpy.random.Generator`` (a stream the caller spawns), so adding a moving group does
not change the draws of any other component.

``moved_m`` is the straight-line displacement over the step (before any wrap-around fold),
which the spatially correlated shadowing (:mod:`netfl.radio.shadowing`) decorrelates by;
it is ``inf`` for a device that was replaced by a new one (a vehicle re-entering its road),
so that its shadowing is drawn afresh.
"""

from __future__ import annotations

import abc
from typing import NamedTuple

import numpy as np

#: Time left in a step that counts as none.
_EPS_S = 1e-12


class Step(NamedTuple):
    """The result of advancing a group: positions after the step and displacement."""

    xy_m: np.ndarray  # (devices, 2)
    moved_m: np.ndarray  # (devices,)


class Mobility(abc.ABC):
    """A group's movement. Subclasses set ``xy_m`` and implement :meth:`advance`."""

    xy_m: np.ndarray
    """Current positions, ``(devices, 2)`` m."""

    @property
    def n_devices(self) -> int:
        return len(self.xy_m)

    @property
    @abc.abstractmethod
    def speed_mps(self) -> np.ndarray:
        """Current speed of each device, m/s (0 while pausing)."""

    @abc.abstractmethod
    def advance(self, dt_s: float) -> Step:
        """Move every device by ``dt_s`` seconds (>= 0) and return the new state."""


class LegsAndPauses(Mobility):
    """A model whose devices alternate legs and pauses (random waypoint, random direction).

    Subclasses keep ``moving``, ``pause_left`` and ``speed`` arrays and implement
    :meth:`_start_legs` (devices whose pause ended) and :meth:`_walk` (devices on a leg,
    which spend what they can of their ``remaining`` time and may end their leg).
    """

    moving: np.ndarray
    pause_left: np.ndarray
    speed: np.ndarray

    @property
    def speed_mps(self) -> np.ndarray:
        return np.where(self.moving, self.speed, 0.0)

    @abc.abstractmethod
    def _start_legs(self, idx: np.ndarray) -> None:
        """Start a new leg for the devices ``idx``."""

    @abc.abstractmethod
    def _walk(self, idx: np.ndarray, remaining: np.ndarray) -> None:
        """Move the devices ``idx`` along their legs for up to ``remaining[idx]`` s."""

    def _spend(self, dt_s: float) -> None:
        """Spend ``dt_s`` on every device: pauses, legs, and the legs that start and end
        within it (one vectorised pass per leg or pause ending inside the step)."""
        remaining = np.full(self.n_devices, check_dt(dt_s))
        while True:
            live = remaining > _EPS_S
            if not live.any():
                return
            self._start_legs(np.flatnonzero(live & ~self.moving & (self.pause_left <= 0)))
            pausing = np.flatnonzero(live & ~self.moving)
            use = np.minimum(self.pause_left[pausing], remaining[pausing])
            self.pause_left[pausing] -= use
            remaining[pausing] -= use
            self._walk(np.flatnonzero(live & self.moving), remaining)


def check_dt(dt_s: float) -> float:
    """A step must not go back in time."""
    if not dt_s >= 0:
        raise ValueError(f"dt_s must be >= 0, got {dt_s}")
    return float(dt_s)


def unit_vectors(angle_rad: np.ndarray) -> np.ndarray:
    """``(n, 2)`` unit vectors along each angle (counter-clockwise from +x)."""
    return np.column_stack([np.cos(angle_rad), np.sin(angle_rad)])
