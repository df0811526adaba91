"""FedNova (Wang, Liu, Liang, Joshi, Poor, "Tackling the Objective Inconsistency Problem in
Heterogeneous Federated Optimization", NeurIPS 2020, Sec. 4).

Client k's local update is Delta_k = -eta_l G_k a_k, its stochastic gradients G_k weighted
by the vector a_k of its local solver; FedAvg's sum_k p_k Delta_k lets a client that took
more steps pull harder (the objective inconsistency). FedNova averages the normalised
updates d_k = Delta_k / ||a_k||_1 and rescales by tau_eff = sum_k p_k ||a_k||_1:

    w_(t+1) = w_t + tau_eff sum_k p_k Delta_k / ||a_k||_1.

||a_k||_1 is tau_k for plain local SGD, [tau_k - rho (1 - rho^tau_k) / (1 - rho)] / (1 - rho)
with momentum rho, and [1 - (1 - eta_l mu)^tau_k] / (eta_l mu) with FedProx's proximal term
(the learner computes it: :func:`netfl.learning.trainer.local_path_norms`).

Checked against the authors' code (github.com/JYWa/FedNova, ``distoptim/FedNova.py``): the
same normaliser for plain SGD and momentum. Where netfl differs: with a proximal term
(mu > 0) that code sets tau_eff = sum_k p_k tau_k, while netfl keeps
tau_eff = sum_k p_k ||a_k||_1 in every case (the two agree for plain SGD and momentum,
the cases without mu); its server momentum ("gmf") is not part of this rule. Flower ships no
FedNova strategy.
"""

from __future__ import annotations

from netfl.learning.aggregation import base
from netfl.learning.aggregation.base import ClientUpdates, State, Step


@base.aggregation_rule(protocols=base.SYNCHRONOUS | {"hierarchical"}, needs_norms=True)
def fednova(updates: ClientUpdates, state: State) -> Step:
    """w_(t+1) = w_t + tau_eff sum_k p_k Delta_k / ||a_k||_1, tau_eff = sum_k p_k ||a_k||_1
    (Wang et al. 2020, Sec. 4). Stateless. Under hierarchical, each edge aggregates its
    cell's clients this way (the cloud averages the edge models as HierFAVG does)."""
    import torch

    if updates.norms is None:
        raise ValueError("FedNova needs each client's ||a_k||_1 (norms)")
    p = updates.shares()
    norms = updates.norms.to(torch.float64)
    used = p > 0
    if torch.any(norms[used] <= 0):
        raise ValueError("FedNova: an aggregated client took no local step (||a_k||_1 = 0)")
    tau_eff = (p * norms).sum()
    scale = torch.where(used, tau_eff * p / torch.where(used, norms, 1.0), 0.0)
    return base.moved(updates.current, updates.mean_update(scale)), state
