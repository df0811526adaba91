"""Devices: how long a local update takes in simulated time.

``FixedComputeDevices``: each device processes ``compute_sps`` training samples per second,
so a local update of E epochs over D samples takes E D / compute_sps seconds
(002_27b575cdfe8e08e6.txt eq. (10) with E = 1 there).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import simpy


class FixedComputeDevices:
    """Constant per-device compute capability; devices never share or queue work."""

    def __init__(self, compute_sps: np.ndarray) -> None:
        if np.any(np.asarray(compute_sps) <= 0):
            raise ValueError("compute capabilities must be positive")
        self.compute_sps = np.asarray(compute_sps, dtype=float)

    def start_round(self, round: int) -> None:
        """Redraw per-round quantities (none for this model)."""
        return None

    def update_time_s(self, client: int, n_samples: int, epochs: int) -> float:
        return epochs * n_samples / float(self.compute_sps[client])

    def compute(
        self, env: simpy.Environment, client: int, n_samples: int, epochs: int
    ) -> simpy.Process:
        """A process that ends when the local update is done; its value is the duration.

        Interrupting it cancels the update (it then returns None).
        """

        def run() -> Generator[simpy.Event, Any, float | None]:
            duration = self.update_time_s(client, n_samples, epochs)
            try:
                yield env.timeout(duration)
            except simpy.Interrupt:
                return None  # cancelled (deadline, drop)
            return duration

        return env.process(run())
