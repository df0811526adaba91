"""Draws the mobility models share: per-leg speeds and durations, and their stationary forms.

A model observed at a random time (the start of a run in its stationary regime) sees
length-biased legs: a leg of duration T is caught with probability proportional to T
(renewal theory). Two consequences used here:

- the remaining time of a leg or pause caught in progress is U x L, U ~ U(0, 1) and L
  length-biased (:func:`residual`, the same equilibrium draw as the background queue's,
  :func:`netfl.sampling.equilibrium_work`);
- a random-waypoint leg of length D at speed V lasts D / V, so at a random time the speed
  of a moving device has density f(v) / (v E[1/V]) (Navidi & Camp 2004; Le Boudec
  & Vojnovic 2006): :func:`speed_biased`, with :func:`mean_inverse_speed` the E[1/V].
"""

from __future__ import annotations

import math

import numpy as np

from netfl.config.dist import Choice, Constant, Distribution, LogNormal, TruncNormal, Uniform
from netfl.sampling import draw_checked, equilibrium_work


def draw_speeds(dist: Distribution, rng: np.random.Generator, n: int, key: str) -> np.ndarray:
    """``n`` speeds (m/s); a negative draw is refused under ``key``."""
    return draw_checked(dist, rng, n, key, positive=False)


def residual(dist: Distribution, rng: np.random.Generator, n: int) -> np.ndarray:
    """Remaining durations of ``n`` legs (or pauses) caught at a random time."""
    return np.asarray(equilibrium_work(dist, rng, n), dtype=float)


def mean_inverse_speed(dist: Distribution) -> float:
    """E[1/V] of a speed distribution bounded away from 0 (or log-normal), s/m."""
    if isinstance(dist, Constant):
        return 1.0 / dist.value
    if isinstance(dist, Uniform):
        if dist.high == dist.low:
            return 1.0 / dist.low
        return math.log(dist.high / dist.low) / (dist.high - dist.low)
    if isinstance(dist, Choice):
        return float(np.dot(dist.probabilities(), 1.0 / np.asarray(dist.values, dtype=float)))
    if isinstance(dist, LogNormal):
        return math.exp(dist.sigma**2 / 2) / dist.median
    if isinstance(dist, TruncNormal):
        from scipy import integrate

        frozen = dist._frozen()
        value, _ = integrate.quad(lambda v: frozen.pdf(v) / v, dist.low, dist.high)
        return float(value)
    raise TypeError(f"no E[1/V] for {type(dist).__name__}")


def speed_biased(dist: Distribution, rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` draws from f(v) / (v E[1/V]): the speed of a moving random-waypoint device at
    a random time."""
    if isinstance(dist, Constant):
        return np.full(n, dist.value)
    if isinstance(dist, Uniform):
        return dist.low * (dist.high / dist.low) ** rng.random(n)
    if isinstance(dist, Choice):
        values = np.asarray(dist.values, dtype=float)
        weights = dist.probabilities() / values
        return rng.choice(values, size=n, p=weights / weights.sum())
    if isinstance(dist, LogNormal):
        return rng.lognormal(math.log(dist.median) - dist.sigma**2, dist.sigma, n)
    if isinstance(dist, TruncNormal):
        # Rejection: accept a draw v with probability low / v (<= 1 since v >= low > 0).
        out = np.empty(0)
        while len(out) < n:
            v = dist.sample(rng, 2 * (n - len(out)) + 16)
            out = np.concatenate([out, v[rng.random(len(v)) < dist.low / v]])
        return out[:n]
    raise TypeError(f"no speed-biased draw for {type(dist).__name__}")
