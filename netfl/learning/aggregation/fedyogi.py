"""FedYogi (Reddi et al., "Adaptive Federated Optimization", ICLR 2021, Alg. 2):
v_t = v_(t-1) - (1 - beta2) Delta_t^2 sign(v_(t-1) - Delta_t^2), which grows v no faster
than Adam would but lets it shrink only slowly (see :mod:`netfl.learning.aggregation.adaptive`
for m_t, the step, the initial state and where netfl differs from Flower's ``FedYogi``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from netfl.learning.aggregation import base
from netfl.learning.aggregation.adaptive import adaptive_step
from netfl.learning.aggregation.base import ClientUpdates, State, Step

if TYPE_CHECKING:
    import torch


@base.aggregation_rule(protocols=base.SERVER_OPTIMIZERS)
def fedyogi(
    updates: ClientUpdates,
    state: State,
    *,
    eta: base.ServerLR = 0.01,
    beta1: base.Beta1 = 0.9,
    beta2: base.Beta2 = 0.99,
    tau: base.Adaptivity = 1e-3,
) -> Step:
    """Yogi on the server: m_t = beta1 m_(t-1) + (1 - beta1) Delta_t,
    v_t = v_(t-1) - (1 - beta2) Delta_t^2 sign(v_(t-1) - Delta_t^2),
    w_(t+1) = w_t + eta m_t / (sqrt(v_t) + tau)."""
    import torch

    def yogi_moment(v: torch.Tensor, squared: torch.Tensor) -> torch.Tensor:
        return v - (1 - beta2) * squared * torch.sign(v - squared)

    return adaptive_step(updates, state, yogi_moment, eta=eta, beta1=beta1, tau=tau)
