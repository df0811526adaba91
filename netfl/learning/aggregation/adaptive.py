"""The part of Reddi et al.'s Algorithm 2 ("Adaptive Federated Optimization", ICLR 2021)
that FedAdagrad, FedAdam and FedYogi share; each rule's module gives its v_t.

With Delta_t = sum_k p_k (w_k - w_t) the server's pseudo-gradient (FedAvg's update),

    m_t = beta1 m_(t-1) + (1 - beta1) Delta_t,
    v_t = (the rule's second moment),
    w_(t+1) = w_t + eta m_t / (sqrt(v_t) + tau),

element-wise, with m_(-1) = 0 and v_(-1) = tau^2 (Alg. 2 asks for v_(-1) >= tau^2; netfl
takes the smallest). The paper applies no bias correction, nor does netfl.

Checked against Flower's ``FedOpt`` family (``flwr/server/strategy/fedopt.py``,
``fedadagrad.py``, ``fedadam.py``, ``fedyogi.py``). Where netfl differs, and why:

- Flower starts from m_(-1) = v_(-1) = 0; netfl from v_(-1) = tau^2, as Alg. 2 states
  (the two differ in the first rounds only, by at most tau^2 under the square root).
- Flower's FedAdam multiplies eta by sqrt(1 - beta2^t) / (1 - beta1^t) (Adam's bias
  correction); Alg. 2 has none, nor has netfl.
- Flower's FedAdagrad fixes beta1 = 0 (no momentum); Alg. 2 keeps the momentum line for
  all three rules, so netfl's FedAdagrad takes beta1 (set it to 0 for Flower's rule).
- Flower averages every array it is sent, batch-norm statistics included; netfl's rules
  move the parameters only and average the buffers with FedAvg.

Defaults: beta1 = 0.9, beta2 = 0.99, eta = 0.01 and tau = 1e-3, Flower's FedYogi defaults
(the paper tunes eta and tau per task).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from netfl.learning.aggregation.base import ClientUpdates, State, Step, moved

if TYPE_CHECKING:
    import torch

#: v_(t-1), Delta_t^2 -> v_t
SecondMoment = Callable[["torch.Tensor", "torch.Tensor"], "torch.Tensor"]


def adaptive_step(
    updates: ClientUpdates,
    state: State,
    second_moment: SecondMoment,
    *,
    eta: float,
    beta1: float,
    tau: float,
) -> Step:
    """One server step of Alg. 2 with the rule's ``second_moment``."""
    import torch

    delta = updates.mean_update()
    m_prev, v_prev = state.get("m", {}), state.get("v", {})
    m, v, step = {}, {}, {}
    for name, d in delta.items():
        m_old = m_prev.get(name, torch.zeros_like(d))
        v_old = v_prev.get(name, torch.full_like(d, tau * tau))
        m[name] = beta1 * m_old + (1 - beta1) * d
        v[name] = second_moment(v_old, d * d)
        step[name] = eta * m[name] / (torch.sqrt(v[name]) + tau)
    return moved(updates.current, step), {"m": m, "v": v}
