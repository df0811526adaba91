"""Probability distributions as scenario values.

A scenario key that takes a distribution accepts either a plain number (a constant) or a
mapping with ``dist`` and that distribution's parameters, for example::

    compute_sps: {dist: uniform, low: 10, high: 100}
    n_samples: {dist: lognormal, median: 300, sigma: 0.5}
    size_bits: 4.0e6

Each spec knows how to draw from a ``numpy.random.Generator``.
"""

from __future__ import annotations

import contextlib
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BeforeValidator, Field, model_validator

from netfl.config.base import NonNegativeFloat, PositiveFloat, StrictModel


class _Dist(StrictModel):
    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def expected(self) -> float:  # pragma: no cover
        raise NotImplementedError


class Constant(_Dist):
    """Always ``value``."""

    dist: Literal["constant"] = "constant"
    value: float = Field(description="The value.")

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.full(size, self.value, dtype=float)

    def expected(self) -> float:
        return self.value


class Uniform(_Dist):
    """Uniform on ``[low, high]``."""

    dist: Literal["uniform"]
    low: float = Field(description="Lower bound.")
    high: float = Field(description="Upper bound (>= low).")

    @model_validator(mode="after")
    def _ordered(self) -> Uniform:
        if self.high < self.low:
            raise ValueError(f"high ({self.high}) must be >= low ({self.low})")
        return self

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.uniform(self.low, self.high, size)

    def expected(self) -> float:
        return 0.5 * (self.low + self.high)


class Normal(_Dist):
    """Normal with ``mean`` and standard deviation ``std``."""

    dist: Literal["normal"]
    mean: float = Field(description="Mean.")
    std: NonNegativeFloat = Field(description="Standard deviation.")

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.normal(self.mean, self.std, size)

    def expected(self) -> float:
        return self.mean


class TruncNormal(_Dist):
    """Normal with ``mean`` and ``std`` truncated to ``[low, high]`` (eq. (8), MAB-CS)."""

    dist: Literal["truncnormal"]
    mean: float = Field(description="Mean of the untruncated normal.")
    std: PositiveFloat = Field(description="Standard deviation of the untruncated normal.")
    low: float = Field(allow_inf_nan=True, description="Lower truncation point (may be -.inf).")
    high: float = Field(
        allow_inf_nan=True, description="Upper truncation point (> low; may be .inf)."
    )

    @model_validator(mode="after")
    def _ordered(self) -> TruncNormal:
        if self.high <= self.low:
            raise ValueError(f"high ({self.high}) must be > low ({self.low})")
        return self

    def _frozen(self) -> Any:
        a = (self.low - self.mean) / self.std
        b = (self.high - self.mean) / self.std
        from scipy import stats  # 1 s to import: only when a truncated normal is drawn

        return stats.truncnorm(a, b, loc=self.mean, scale=self.std)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.asarray(self._frozen().rvs(size=size, random_state=rng), dtype=float)

    def expected(self) -> float:
        return float(self._frozen().mean())


class LogNormal(_Dist):
    """Log-normal with the given ``median`` and log-space standard deviation ``sigma``."""

    dist: Literal["lognormal"]
    median: PositiveFloat = Field(description="Median (exp of the log-space mean).")
    sigma: NonNegativeFloat = Field(description="Standard deviation of the logarithm.")

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.lognormal(np.log(self.median), self.sigma, size)

    def expected(self) -> float:
        return float(self.median * np.exp(self.sigma**2 / 2))


class Exponential(_Dist):
    """Exponential with the given ``mean``."""

    dist: Literal["exponential"]
    mean: PositiveFloat = Field(description="Mean (1 / rate).")

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.exponential(self.mean, size)

    def expected(self) -> float:
        return self.mean


class Choice(_Dist):
    """One of ``values``, with optional probabilities ``p`` (uniform by default)."""

    dist: Literal["choice"]
    values: list[float] = Field(min_length=1, description="The possible values.")
    p: list[NonNegativeFloat] | None = Field(
        default=None, description="Probabilities of the values (sum to 1); uniform if omitted."
    )

    @model_validator(mode="after")
    def _probabilities(self) -> Choice:
        if self.p is not None:
            if len(self.p) != len(self.values):
                raise ValueError("p must have one probability per value")
            if not np.isclose(sum(self.p), 1.0):
                raise ValueError(f"p must sum to 1 (sums to {sum(self.p):g})")
        return self

    def probabilities(self) -> np.ndarray:
        """``p``, or uniform when not given."""
        n = len(self.values)
        return np.full(n, 1 / n) if self.p is None else np.asarray(self.p, dtype=float)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.choice(np.asarray(self.values, dtype=float), size=size, p=self.p)

    def expected(self) -> float:
        return float(np.dot(self.values, self.probabilities()))


def _number_is_constant(value: Any) -> Any:
    if isinstance(value, str):
        # YAML 1.1 reads 1e6 (no dot) as a string.
        with contextlib.suppress(ValueError):
            value = float(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {"dist": "constant", "value": value}
    if isinstance(value, dict) and "dist" not in value:
        # Let the union report a helpful message instead of a bare discriminator error.
        raise ValueError(
            "a distribution needs 'dist' (one of: constant, uniform, normal, truncnormal,"
            " lognormal, exponential, choice), or give a plain number"
        )
    return value


_AnyDist = Annotated[
    Constant | Uniform | Normal | TruncNormal | LogNormal | Exponential | Choice,
    Field(discriminator="dist"),
]
Distribution = Annotated[_AnyDist, BeforeValidator(_number_is_constant)]
"""A number (constant) or ``{dist: <name>, ...}``; see the classes above."""


#: Distributions of durations and amounts that are positive (job work, leg durations).
JobWork = Constant | Uniform | Exponential | LogNormal | Choice


def positive_support(dist: Any, *, zero_ok: bool = False) -> bool:
    """Whether ``dist`` only draws positive values (or non-negative with ``zero_ok``)."""
    if isinstance(dist, Constant):
        return dist.value > 0 or (zero_ok and dist.value == 0)
    if isinstance(dist, Uniform | TruncNormal):
        return (dist.low >= 0 if zero_ok else dist.low > 0) and dist.high > 0
    if isinstance(dist, Choice):
        return min(dist.values) > 0 or (zero_ok and min(dist.values) == 0)
    return isinstance(dist, Exponential | LogNormal)


#: The probability a draw exceeds a distribution's :func:`upper_reach`.
REACH_TAIL = 1e-9
_NORMAL_REACH_SIGMAS = 6.0  # P(Z > 6) = 9.9e-10


def upper_reach(dist: Any) -> float:
    """The largest value ``dist`` draws: its upper bound, or for an unbounded tail the
    value exceeded with probability about :data:`REACH_TAIL` (normal: mean + 6 sigma;
    log-normal: median e^(6 sigma); exponential: mean ln(1e9))."""
    if isinstance(dist, Constant):
        return dist.value
    if isinstance(dist, Uniform):
        return dist.high
    if isinstance(dist, Choice):
        return max(dist.values)
    if isinstance(dist, Normal):
        return dist.mean + _NORMAL_REACH_SIGMAS * dist.std
    if isinstance(dist, TruncNormal):
        return min(dist.high, dist.mean + _NORMAL_REACH_SIGMAS * dist.std)
    if isinstance(dist, LogNormal):
        return float(dist.median * np.exp(_NORMAL_REACH_SIGMAS * dist.sigma))
    if isinstance(dist, Exponential):
        return float(dist.mean * -np.log(REACH_TAIL))
    raise TypeError(f"no upper reach for {type(dist).__name__}")
