"""FedAsync (Xie, Koyejo, Gupta, "Asynchronous Federated Optimization", arXiv:1903.03934,
2019, Alg. 1): the server mixes every arriving model in at once,

    x_t = (1 - alpha_t) x_{t-1} + alpha_t x_new,   alpha_t = alpha s(t - tau),

with tau the version the client downloaded and s the staleness function
(:mod:`netfl.fl.staleness`). As a change of the current model: x_t = x_{t-1} +
alpha_t (x_new - x_{t-1}).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netfl.fl.staleness import StalenessWeight


@dataclass(frozen=True)
class FedAsync:
    alpha: float
    weight: StalenessWeight
    buffer_size: int = 1
    relative_to: str = "current"

    def coefficients(self, n_samples: np.ndarray, staleness: np.ndarray) -> np.ndarray:
        return self.alpha * self.weight(staleness)
