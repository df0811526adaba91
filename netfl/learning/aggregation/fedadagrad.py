"""FedAdagrad (Reddi et al., "Adaptive Federated Optimization", ICLR 2021, Alg. 2):
v_t = v_(t-1) + Delta_t^2 (see :mod:`netfl.learning.aggregation.adaptive` for m_t, the
step, the initial state and where netfl differs from Flower's ``FedAdagrad``)."""

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


def adagrad_moment(v: torch.Tensor, squared: torch.Tensor) -> torch.Tensor:
    """v_t = v_(t-1) + Delta_t^2."""
    return v + squared


@aggregation_rule(protocols=SYNCHRONOUS | {"fedasync", "fedbuff"})
def fedadagrad(
    updates: ClientUpdates,
    state: State,
    *,
    eta: ServerLR = 0.01,
    beta1: Decay = 0.9,
    tau: Adaptivity = 1e-3,
) -> Step:
    """Adagrad on the server: m_t = beta1 m_(t-1) + (1 - beta1) Delta_t,
    v_t = v_(t-1) + Delta_t^2, w_(t+1) = w_t + eta m_t / (sqrt(v_t) + tau).

    Parameters
    ----------
    eta
        Server learning rate eta (> 0).
    beta1
        Momentum beta_1 in [0, 1) (Flower's FedAdagrad: 0).
    tau
        Adaptivity tau (> 0): the smaller, the more adaptive; v starts at tau^2.
    """
    return adaptive_step(updates, state, adagrad_moment, eta=eta, beta1=beta1, tau=tau)
