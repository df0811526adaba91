"""Drawing per-device values from a scenario distribution.

Shared by the device population (:mod:`netfl.fl.population`), the radio's placement of
device groups (:mod:`netfl.map.layout`), the devices' background queues
(:mod:`netfl.fl.background`) and the mobility models' stationary draws
(:mod:`netfl.mobility.draws`), so none of those layers imports another.
"""

from __future__ import annotations

import math

import numpy as np

from netfl.config.dist import Choice, Constant, Distribution, Exponential, LogNormal, Uniform
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


def _length_biased(work: object, rng: np.random.Generator, size: int) -> np.ndarray:
    """Draw from x f(x) / E[S] for the job-size distribution ``work``."""
    if isinstance(work, Constant):
        return np.full(size, work.value)
    if isinstance(work, Uniform):
        a2, b2 = work.low**2, work.high**2
        return np.sqrt(a2 + rng.random(size) * (b2 - a2))
    if isinstance(work, Exponential):
        return rng.gamma(2.0, work.mean, size)
    if isinstance(work, LogNormal):
        return rng.lognormal(math.log(work.median) + work.sigma**2, work.sigma, size)
    if isinstance(work, Choice):
        values = np.asarray(work.values, dtype=float)
        weights = work.probabilities() * values
        return rng.choice(values, size=size, p=weights / weights.sum())
    raise TypeError(f"no length-biased sampler for {type(work).__name__}")


def equilibrium_work(work: object, rng: np.random.Generator, size: int) -> np.ndarray:
    """Remaining works of jobs found in a stationary M/G/1-PS queue (i.i.d., U x L)."""
    return rng.random(size) * _length_biased(work, rng, size)
