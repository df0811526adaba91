"""Placing device groups in the cell: the radio layout's part of the devices section.

A group with ``distance_m`` sits at that distance from the serving base station at a
uniform angle (RBCS-F's client classes, MAB-CS's rings); the other devices keep the
cell's drop.
"""

from __future__ import annotations

import numpy as np

from netfl.config.devices import DevicesConfig
from netfl.sampling import draw_checked


def place_groups(
    config: DevicesConfig, x_m: np.ndarray, y_m: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Move the devices of groups with ``distance_m`` to such a distance, at a uniform angle.

    Apply it to the cell's drop before anything uses the positions (the radio's path loss);
    ``rng`` is the run's ``devices.placement`` stream.
    """
    x_m, y_m = np.array(x_m, dtype=float), np.array(y_m, dtype=float)
    start = 0
    for i, group in enumerate(config.groups):
        s = slice(start, start + group.count)
        start += group.count
        if group.distance_m is None:
            continue
        key = f"devices.groups.{i}.distance_m"
        distance = draw_checked(group.distance_m, rng, group.count, key, positive=True)
        angle = rng.uniform(0, 2 * np.pi, group.count)
        x_m[s], y_m[s] = distance * np.cos(angle), distance * np.sin(angle)
    return x_m, y_m
