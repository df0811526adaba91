"""FedAdam (Reddi et al., "Adaptive Federated Optimization", ICLR 2021, Alg. 2):
v_t = beta2 v_(t-1) + (1 - beta2) Delta_t^2, without Adam's bias correction (see
:mod:`netfl.learning.aggregation.adaptive` for m_t, the step, the initial state and where
netfl differs from Flower's ``FedAdam``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from netfl.learning.aggregation.adaptive import adaptive_step
from netfl.learning.aggregation.base import (
    SYNCHRONOUS,
    Adaptivity,
    ClientUpdates,
    Decay,
    ServerLR,
    State,
    Step,
    aggregation_rule,
)

if TYPE_CHECKING:
    import torch


@aggregation_rule(protocols=SYNCHRONOUS | {"fedasync", "fedbuff"})
def fedadam(
    updates: ClientUpdates,
    state: State,
    *,
    eta: ServerLR = 0.01,
    beta1: Decay = 0.9,
    beta2: Decay = 0.99,
    tau: Adaptivity = 1e-3,
) -> Step:
    """Adam on the server: m_t = beta1 m_(t-1) + (1 - beta1) Delta_t,
    v_t = beta2 v_(t-1) + (1 - beta2) Delta_t^2, w_(t+1) = w_t + eta m_t / (sqrt(v_t) + tau).

    Parameters
    ----------
    eta
        Server learning rate eta (> 0).
    beta1
        First-moment decay beta_1 in [0, 1).
    beta2
        Second-moment decay beta_2 in [0, 1).
    tau
        Adaptivity tau (> 0): the smaller, the more adaptive; v starts at tau^2.
    """

    def moment(v: torch.Tensor, squared: torch.Tensor) -> torch.Tensor:
        return beta2 * v + (1 - beta2) * squared

    return adaptive_step(updates, state, moment, eta=eta, beta1=beta1, tau=tau)
