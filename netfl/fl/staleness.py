"""How much an update counts given its staleness (Xie, Koyejo, Gupta 2019, Sec. 5).

An update is ``t`` global versions stale when the server applied ``t`` aggregations
between the client's download and the update's arrival. FedAsync mixes it in with
``alpha * s(t)`` and FedBuff weights it by ``s(t)``; the three functions of Xie et al.
("Asynchronous Federated Optimization", arXiv:1903.03934, Sec. 5, "staleness
function"):

- constant: s(t) = 1;
- polynomial: s_a(t) = (t + 1)^-a (FedBuff, Nguyen et al. AISTATS 2022 Sec. 5, uses
  1 / sqrt(1 + t), a = 0.5);
- hinge: s_{a,b}(t) = 1 if t <= b, else 1 / (a (t - b) + 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netfl.config.fl import FLConfig


@dataclass(frozen=True)
class StalenessWeight:
    """s(t) of one of the three families; call it on an array of stalenesses."""

    kind: str = "constant"
    exponent: float = 0.5
    hinge_a: float = 10.0
    hinge_b: int = 4

    @classmethod
    def from_config(cls, fl: FLConfig) -> StalenessWeight:
        return cls(
            fl.staleness_weight, fl.staleness_exponent, fl.staleness_hinge_a, fl.staleness_hinge_b
        )

    def __call__(self, staleness: np.ndarray) -> np.ndarray:
        t = np.asarray(staleness, dtype=float)
        if (t < 0).any():
            raise ValueError("staleness is a count of versions, never negative")
        if self.kind == "constant":
            return np.ones_like(t)
        if self.kind == "polynomial":
            return (t + 1.0) ** -self.exponent
        if self.kind == "hinge":
            return np.where(t <= self.hinge_b, 1.0, 1.0 / (self.hinge_a * (t - self.hinge_b) + 1.0))
        raise ValueError(f"unknown staleness function {self.kind!r}")
