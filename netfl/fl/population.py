"""The device population: static per-client facts drawn once at elaboration.

Group by group, in the order of ``devices.groups``. Each kind of draw has its own random
stream, so adding, say, a cold-start time to a group does not change anyone's capability.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from netfl.config.devices import DevicesConfig
from netfl.errors import ScenarioError
from netfl.rng import Streams
from netfl.sampling import draw_checked


@dataclass(frozen=True)
class Population:
    """Per-client arrays, index = client id (struct of arrays)."""

    group: np.ndarray
    group_index: np.ndarray
    compute_sps: np.ndarray
    requested_samples: np.ndarray | None
    base_train_time_s: np.ndarray
    cold_start_s: np.ndarray

    @property
    def n_clients(self) -> int:
        return len(self.group)

    def group_slices(self) -> list[slice]:
        """Client-id range of each group, in order."""
        bounds = np.flatnonzero(np.diff(self.group_index)) + 1
        starts = [0, *bounds.tolist()]
        ends = [*bounds.tolist(), self.n_clients]
        return [slice(s, e) for s, e in zip(starts, ends, strict=True)]


def build_population(config: DevicesConfig, streams: Streams) -> Population:
    """Draw each group's per-device parameters from its distributions, group by group."""
    rng = {
        name: streams.get(f"devices.{name}")
        for name in ("population", "base_train_time", "cold_start")
    }
    groups, index, compute, sizes, base, cold = [], [], [], [], [], []
    for i, group in enumerate(config.groups):
        key, n = f"devices.groups.{i}", group.count
        groups.append(np.full(n, group.name, dtype=object))
        index.append(np.full(n, i, dtype=np.int64))
        compute.append(
            draw_checked(
                group.compute_sps, rng["population"], n, f"{key}.compute_sps", positive=True
            )
        )
        if group.n_samples is not None:
            raw = group.n_samples.sample(rng["population"], n)
            counts = np.rint(raw).astype(np.int64)
            if np.any(counts <= 0):
                raise ScenarioError.single(
                    f"{key}.n_samples",
                    "drew a device with no samples; use a distribution with support >= 1",
                )
            sizes.append(counts)
        base.append(
            np.full(n, math.nan)
            if group.base_train_time_s is None
            else draw_checked(
                group.base_train_time_s,
                rng["base_train_time"],
                n,
                f"{key}.base_train_time_s",
                positive=True,
            )
        )
        cold.append(
            draw_checked(
                group.cold_start_s, rng["cold_start"], n, f"{key}.cold_start_s", positive=False
            )
        )
    return Population(
        group=np.concatenate(groups),
        group_index=np.concatenate(index),
        compute_sps=np.concatenate(compute),
        requested_samples=np.concatenate(sizes) if sizes else None,
        base_train_time_s=np.concatenate(base),
        cold_start_s=np.concatenate(cold),
    )
