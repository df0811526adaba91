"""FedAvg (McMahan et al., AISTATS 2017): the weighted average of the client models.

:func:`fedavg` averages stacked states (parameters and buffers) and is what every rule and
protocol builds on; :func:`federated_averaging` is the registered rule ``fedavg``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from netfl.learning.aggregation.base import ClientUpdates, State, Step, aggregation_rule

if TYPE_CHECKING:
    import torch


def fedavg(
    stacked: Mapping[str, torch.Tensor], weights: torch.Tensor
) -> dict[str, torch.Tensor] | None:
    """Weighted average over the leading (client) dimension of every tensor.

    Parameters
    ----------
    stacked
        Name -> tensor of shape (K, ...) with the K clients' parameters and buffers.
    weights
        Shape (K,), non-negative; usually the clients' data sizes n_k, so the result is
        sum_k n_k w_k / sum_k n_k. A zero weight leaves the aggregate unaffected.

    Returns
    -------
    The averaged state, or None when every weight is zero (keep the old global model).
    Integer tensors (e.g. batch-norm step counters) take the weighted mean rounded down.
    """
    import torch

    weights = weights.to(torch.float64)
    if torch.any(weights < 0):
        raise ValueError("FedAvg weights must be non-negative")
    total = weights.sum()
    if total <= 0:
        return None
    share = weights / total
    averaged: dict[str, torch.Tensor] = {}
    for name, tensor in stacked.items():
        shape = (-1,) + (1,) * (tensor.dim() - 1)
        mean = (tensor.to(torch.float64) * share.to(tensor.device).view(shape)).sum(dim=0)
        averaged[name] = (
            mean.to(tensor.dtype) if tensor.is_floating_point() else mean.floor().to(tensor.dtype)
        )
    return averaged


@aggregation_rule(protocols={"fedavg", "fedcs", "fedasync", "fedbuff", "hierarchical"})
def federated_averaging(updates: ClientUpdates, state: State) -> Step:
    """w_(t+1) = sum_k p_k w_k, p_k = n_k / sum_j n_j (McMahan et al. 2017, Alg. 1).

    The default rule. Under fedasync and fedbuff it means the protocol's own rule (mixing,
    the staleness-weighted buffer), under hierarchical the edges' and the cloud's averages.
    It keeps no state.
    """
    averaged = fedavg(updates.stacked, updates.weights)
    if averaged is None:
        raise ValueError("aggregation weights must have a positive sum")
    return averaged, state
