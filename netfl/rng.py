"""Named random streams derived from the scenario's one seed.

Each component asks for its stream by name (``streams.get("radio.shadowing")``). A stream
is ``SeedSequence(seed, spawn_key=(crc32(name),))`` -- the construction that
``SeedSequence.spawn`` uses internally, keyed by the name instead of the call order. So
streams are independent, and adding a component or changing the strategy never changes
another component's draws (common random numbers across compared runs).
"""

from __future__ import annotations

import zlib

import numpy as np


class Streams:
    """Factory of independent, reproducible ``numpy.random.Generator`` streams."""

    def __init__(self, seed: int) -> None:
        self.seed = int(seed)
        self._issued: set[str] = set()

    def seed_sequence(self, name: str) -> np.random.SeedSequence:
        return np.random.SeedSequence(self.seed, spawn_key=(zlib.crc32(name.encode()),))

    def get(self, name: str) -> np.random.Generator:
        """A fresh generator for ``name``; each name may be issued once per run."""
        if name in self._issued:
            raise RuntimeError(f"random stream {name!r} was already issued in this run")
        self._issued.add(name)
        return np.random.Generator(np.random.PCG64(self.seed_sequence(name)))

    def torch_seed(self, name: str = "torch") -> int:
        """A 63-bit integer seed for torch, from its own stream."""
        return int(self.get(name).integers(0, 2**63 - 1))
