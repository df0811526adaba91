"""The device population: static per-client facts drawn once at elaboration."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netfl.config.devices import DevicesConfig
from netfl.errors import ScenarioError


@dataclass(frozen=True)
class Population:
    """Per-client arrays, index = client id (struct of arrays)."""

    group: np.ndarray
    compute_sps: np.ndarray
    requested_samples: np.ndarray | None

    @property
    def n_clients(self) -> int:
        return len(self.group)


def build_population(config: DevicesConfig, rng: np.random.Generator) -> Population:
    """Draw each group's per-device parameters from its distributions, group by group."""
    groups, compute, sizes = [], [], []
    for index, group in enumerate(config.groups):
        key = f"devices.groups.{index}"
        groups.append(np.full(group.count, group.name, dtype=object))
        sps = group.compute_sps.sample(rng, group.count)
        if np.any(sps <= 0):
            raise ScenarioError.single(
                f"{key}.compute_sps",
                "drew a non-positive compute capability; use a"
                " distribution with positive support (e.g. uniform or lognormal)",
            )
        compute.append(sps)
        if group.n_samples is not None:
            n = np.rint(group.n_samples.sample(rng, group.count)).astype(np.int64)
            if np.any(n <= 0):
                raise ScenarioError.single(
                    f"{key}.n_samples",
                    "drew a device with no samples; use a distribution with support >= 1",
                )
            sizes.append(n)
    requested = np.concatenate(sizes) if sizes else None
    return Population(np.concatenate(groups), np.concatenate(compute), requested)
