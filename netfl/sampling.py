"""Drawing per-device values from a scenario distribution, refused when off its support.

Shared by the device population (:mod:`netfl.fl.population`) and the radio's placement of
device groups (:mod:`netfl.radio.placement`), so neither layer imports the other.
"""

from __future__ import annotations

import numpy as np

from netfl.config.dist import Distribution
from netfl.errors import ScenarioError


def draw_checked(
    dist: Distribution, rng: np.random.Generator, count: int, key: str, *, positive: bool
) -> np.ndarray:
    """``count`` draws; a non-positive (or negative) or non-finite one is refused under
    ``key``, since the support of a scenario's distribution is the user's to fix."""
    values = dist.sample(rng, count)
    bad = values <= 0 if positive else values < 0
    if np.any(bad) or not np.all(np.isfinite(values)):
        need = "positive" if positive else "non-negative"
        raise ScenarioError.single(
            key, f"drew a value that is not {need}; use a distribution with {need} support"
        )
    return values
