"""FedAvgM (Hsu, Qi, Brown, "Measuring the Effects of Non-Identical Data Distribution for
Federated Visual Classification", arXiv:1909.06335, 2019): momentum on the server.

    v_t = beta v_(t-1) + Delta_t,   w_(t+1) = w_t + eta v_t,   v_(-1) = 0,

with Delta_t = sum_k p_k (w_k - w_t) the FedAvg update; beta = 0, eta = 1 is FedAvg.

Checked against Flower's ``FedAvgM`` (``flwr/server/strategy/fedavgm.py``): the same
update, written there on the pseudo-gradient -Delta_t as torch.optim.SGD's momentum (the
first round's momentum is the first pseudo-gradient, i.e. v_(-1) = 0). Flower's default
momentum is 0 (plain FedAvg); netfl's is 0.9, so that naming the rule turns momentum on.
"""

from __future__ import annotations

from netfl.learning.aggregation import base
from netfl.learning.aggregation.base import ClientUpdates, State, Step


@base.aggregation_rule(protocols=base.SERVER_OPTIMIZERS)
def fedavgm(
    updates: ClientUpdates, state: State, *, eta: base.ServerLR = 1.0, beta: base.Momentum = 0.9
) -> Step:
    """Server momentum (Hsu et al. 2019): v_t = beta v_(t-1) + Delta_t; w_(t+1) = w_t + eta v_t
    (eta = 1 with beta = 0 is FedAvg)."""
    delta = updates.mean_update()
    previous = state.get("v", {})
    velocity = {
        name: beta * previous[name] + d if name in previous else d.clone()
        for name, d in delta.items()
    }
    step = {name: eta * v for name, v in velocity.items()}
    return base.moved(updates.current, step), {"v": velocity}
