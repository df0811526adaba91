"""Settings that make training unstable by construction, warned about at validation.

Each check is the stability condition of a linear iteration that the settings alone decide
(no data needed):

- **The local step** (torch.optim.SGD, momentum rho, no dampening). FedProx's proximal term
  (Li et al., MLSys 2020, eq. (2)) and weight decay add mu (w - w_t) + lambda_wd w to every
  gradient: a quadratic of curvature lambda = mu + lambda_wd on its own. SGD with momentum
  on it is Polyak's heavy ball, w_(k+1) = w_k - lr lambda w_k + rho (w_k - w_(k-1)), whose
  characteristic roots lie inside the unit circle exactly when 0 < lr lambda < 2 (1 + rho)
  (Polyak 1964; Goh, "Why Momentum Really Works", Distill 2017, the stability region).
  Beyond it every local step amplifies w - w_t (the data's curvature only adds to lambda
  for a convex loss): the run diverges.
- **FedAvgM** (Hsu et al. 2019): v_t = beta v_(t-1) + Delta_t, w_(t+1) = w_t + eta v_t.
  When local training reaches the clients' minimiser w*, Delta_t = -(w_t - w*), and the
  server's iteration is the same heavy ball with step eta and momentum beta: stable iff
  eta < 2 (1 + beta). Under FedBuff the update the rule sees is scaled by fl.server_lr,
  under FedAsync by the mixing weight alpha (at most fl.mixing_alpha, for a fresh update).
- **FedBuff** with FedAvg (Nguyen et al. 2022, Alg. 1): w <- w + eta_g sum_i p_i s_i Delta_i;
  with fresh updates (s = 1) reaching w*, w - w* is multiplied by 1 - eta_g: stable iff
  eta_g < 2.
- **FedAdagrad, FedAdam, FedYogi** (Reddi et al. 2021, Alg. 2): the step
  eta m_t / (sqrt(v_t) + tau) is normalised, so these rules cannot run away exponentially
  whatever eta; but each round moves every weight by up to about eta c whatever the size of
  the update (Kingma & Ba 2015, Sec. 2.1: Adam's effective step is bounded by about
  alpha (1 - beta1) / sqrt(1 - beta2) where that exceeds alpha, and by alpha otherwise;
  FedAdagrad's exactly by eta, as |m_t| <= max |Delta| <= sqrt(v_t)). With eta c above 1,
  a round moves each weight further than torch initialises it (within +-1/sqrt(fan-in)):
  the model cannot settle.
  With the defaults (beta1 0.9, beta2 0.99) c = 1, so eta = 1 is the largest step that
  passes.

FedNova (Wang et al. 2020) and FedAvg have no server learning rate: only the local step
applies. A plug-in rule is not checked (its parameters mean what its author says).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from netfl.config import Scenario
from netfl.config.learning import LearningConfig

#: Server rules whose parameters this module reads (their own ``eta``, ``beta``, ...).
_ADAPTIVE = ("fedadagrad", "fedadam", "fedyogi")


#: Rules whose parameters :func:`stability_warnings` reads.
CHECKED_RULES = ("fedavgm", *_ADAPTIVE)


def stability_warnings(
    scenario: Scenario, rule_params: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    """``(key, message)`` for each setting that makes training unstable by construction
    (module doc); empty for timing-only runs (``learning: none``). ``rule_params``: the
    aggregation rule's parameters with their defaults, for the rules of
    :data:`CHECKED_RULES` (None: the server rule is not checked)."""
    learning = scenario.learning
    if learning is None:
        return []
    return list(_local_step(learning)) + list(_server_step(scenario, rule_params))


def _local_step(learning: LearningConfig) -> Iterator[tuple[str, str]]:
    limit = 2.0 * (1.0 + learning.momentum)
    product = learning.lr * (learning.prox_mu + learning.weight_decay)
    if product < limit:
        return
    name = "prox_mu" if learning.prox_mu >= learning.weight_decay else "weight_decay"
    terms = "prox_mu + weight_decay" if learning.prox_mu and learning.weight_decay else name
    yield (
        f"learning.{name}",
        f"learning.lr x {terms} = {product:g} makes every local SGD step amplify the"
        f" distance to the global model (stable only below 2 (1 + momentum) = {limit:g}:"
        " the heavy-ball condition), so the run diverges (netfl stops it there); lower"
        f" learning.lr or {name}",
    )


def _server_step(scenario: Scenario, params: dict[str, Any] | None) -> Iterator[tuple[str, str]]:
    fl = scenario.fl
    name = fl.aggregation.name
    scale, scale_key = _protocol_scale(scenario)
    if name == "fedavg" and fl.protocol == "fedbuff" and fl.server_lr >= 2.0:
        yield (
            "fl.server_lr",
            f"{fl.server_lr:g}: FedBuff multiplies the distance to the optimum by"
            f" 1 - server_lr = {1 - fl.server_lr:g} each version when the clients' updates"
            " reach it (stable only below 2): training oscillates or diverges",
        )
    if params is None:
        return
    if name == "fedavgm":
        eta, beta = params["eta"] * scale, params["beta"]
        if eta >= 2.0 * (1.0 + beta):
            by = f" x {scale_key} {scale:g}" if scale_key else ""
            yield (
                "fl.aggregation.params.eta",
                f"FedAvgM's step eta{by} = {eta:g} is at or above 2 (1 + beta) ="
                f" {2 * (1 + beta):g}, where server momentum stops converging even when"
                " the clients' updates reach the optimum (the heavy-ball condition):"
                " training oscillates or diverges",
            )
    elif name in _ADAPTIVE:
        c = _adaptive_reach(name, params)
        step = params["eta"] * c
        if step > 1.0:
            yield (
                "fl.aggregation.params.eta",
                f"{name} moves every weight by up to eta x {c:g} = {step:g} a round,"
                " whatever the update (Kingma & Ba 2015, Sec. 2.1), further than the"
                " weights reach (torch initialises them within +-1/sqrt(fan-in)): the"
                " model cannot settle; an eta x c of 1 or less is the stable range",
            )


def _protocol_scale(scenario: Scenario) -> tuple[float, str]:
    """The largest factor the protocol applies to a fresh update before the rule sees it
    (FedBuff's server_lr, FedAsync's mixing weight), and its key ('' for 1)."""
    fl = scenario.fl
    if fl.protocol == "fedbuff":
        return fl.server_lr, "fl.server_lr"
    if fl.protocol == "fedasync":
        return fl.mixing_alpha, "fl.mixing_alpha"
    return 1.0, ""


def _adaptive_reach(name: str, params: dict[str, Any]) -> float:
    """The bound c on |m_t| / (sqrt(v_t) + tau) of an adaptive rule (module doc)."""
    if name == "fedadagrad":
        return 1.0
    beta1, beta2 = params["beta1"], params["beta2"]
    return max(1.0, (1.0 - beta1) / math.sqrt(1.0 - beta2))
