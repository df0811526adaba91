"""A server aggregation rule: the coordinate-wise trimmed mean (Yin, Chen, Ramchandran,
Bartlett, "Byzantine-Robust Distributed Learning: Towards Optimal Statistical Rates", ICML
2018, Definition 2).

For every coordinate j of every parameter, the K clients' values w_k[j] are sorted, the
floor(beta K) largest and the floor(beta K) smallest are removed, and the global value is
the mean of the rest (unweighted: a robust rule does not trust the clients' data sizes).
beta = 0 is the unweighted mean of the clients' models.
"""

from __future__ import annotations

import math
from typing import Annotated

import torch
from pydantic import Field

from netfl.learning.aggregation.base import ClientUpdates, State, Step, aggregation_rule

Trim = Annotated[
    float, Field(ge=0, lt=0.5, description="Share of the clients trimmed at each end, [0, 0.5).")
]


@aggregation_rule(protocols={"fedavg", "fedcs"})
def trimmed_mean(updates: ClientUpdates, state: State, *, beta: Trim = 0.1) -> Step:
    """w_(t+1)[j] = mean of the K - 2 floor(beta K) middle values of w_k[j] (Yin et al. 2018)."""
    parameters = {}
    for name, stacked in updates.stacked.items():
        k = stacked.shape[0]
        cut = min(math.floor(beta * k), (k - 1) // 2)  # keep at least one client
        ordered = torch.sort(stacked, dim=0).values
        parameters[name] = ordered[cut : k - cut].mean(dim=0)
    return parameters, state
