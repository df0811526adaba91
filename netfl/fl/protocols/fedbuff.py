"""FedBuff (Nguyen et al., "Federated Learning with Buffered Asynchronous Aggregation",
AISTATS 2022, Alg. 1): the server buffers K client deltas, each scaled by the staleness
function s (:mod:`netfl.fl.staleness`), and then applies their average with the server
learning rate eta_g:

    w <- w + eta_g sum_i p_i s(tau_i) (w_i - w_{v_i}),

with w_{v_i} the model client i downloaded. Alg. 1 averages uniformly (p_i = 1/K); netfl
weights by data size, p_i = n_i / sum_j n_j, as FedAvg does, so that with s = 1, eta_g = 1
and every update fresh, one buffer gives exactly FedAvg's model. With equal data sizes the
two are the same (docs/protocol.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netfl.fl.staleness import StalenessWeight


@dataclass(frozen=True)
class FedBuff:
    buffer_size: int
    server_lr: float
    weight: StalenessWeight
    relative_to: str = "download"

    def coefficients(self, n_samples: np.ndarray, staleness: np.ndarray) -> np.ndarray:
        n = np.asarray(n_samples, dtype=float)
        share = n / n.sum() if n.sum() > 0 else np.full(len(n), 1.0 / max(len(n), 1))
        return self.server_lr * share * self.weight(staleness)
