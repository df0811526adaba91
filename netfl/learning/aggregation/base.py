"""What an aggregation rule is given and returns, and how its parameters are checked.

A rule is a pure function::

    rule(updates: ClientUpdates, state: State, **params) -> tuple[Parameters, State]

``updates`` holds the global parameters w_t and the aggregated clients' parameters w_k
with their data sizes n_k (and, for FedNova, the length ||a_k||_1 of each client's local
path); ``state`` is what the rule returned last time (empty in the first round). The rule
returns the new global parameters w_(t+1) and its new state, and changes neither input.
Its keyword-only parameters, with defaults and ``Annotated`` bounds, are exactly the YAML
``fl.aggregation.params`` (checked by :func:`params_problems`). Rules see the model's
parameters only; the learner averages the buffers (batch-norm statistics) with FedAvg.

Notation (docs/aggregation.md): p_k = n_k / sum_j n_j over the aggregated clients,
Delta_k = w_k - w_t, and Delta_t = sum_k p_k Delta_k, the FedAvg update (the
"pseudo-gradient" of the server optimizers, Reddi et al. 2021).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import ConfigDict, Field, ValidationError, create_model

if TYPE_CHECKING:  # torch is imported where a rule runs, not where its parameters are checked
    import torch

Parameters = dict[str, "torch.Tensor"]
#: A rule's state: named groups (``"m"``, ``"v"``, ...) of per-parameter tensors.
State = dict[str, dict[str, "torch.Tensor"]]
Step = tuple[Parameters, State]

#: The rules' parameters, with their bounds and meanings (what `netfl show` prints).
ServerLR = Annotated[
    float,
    Field(
        gt=0,
        le=1000,
        allow_inf_nan=False,
        description="Server learning rate eta (> 0, at most 1,000: beyond any stable step).",
    ),
]
Momentum = Annotated[float, Field(ge=0, lt=1, description="Server momentum beta in [0, 1).")]
Beta1 = Annotated[
    float, Field(ge=0, lt=1, description="First-moment decay (momentum) beta_1 in [0, 1).")
]
Beta2 = Annotated[float, Field(ge=0, lt=1, description="Second-moment decay beta_2 in [0, 1).")]
Adaptivity = Annotated[
    float,
    Field(
        gt=0,
        allow_inf_nan=False,
        description="Adaptivity tau (> 0): the smaller, the more adaptive; v starts at tau^2.",
    ),
]

SYNCHRONOUS = frozenset({"fedavg", "fedcs"})
#: Where a server optimizer runs: wherever one server makes every global version.
SERVER_OPTIMIZERS = SYNCHRONOUS | {"fedasync", "fedbuff"}


@dataclass(frozen=True)
class ClientUpdates:
    """One aggregation's inputs.

    Parameters
    ----------
    current
        The global parameters w_t, name -> tensor.
    stacked
        The clients' parameters w_k, name -> tensor of shape (K, ...).
    weights
        n_k, shape (K,), non-negative (a zero weight leaves the client out).
    norms
        ||a_k||_1 of each client's local path (Wang et al. 2020; tau_k for plain SGD),
        shape (K,); None where the rule does not need it.
    """

    current: Mapping[str, torch.Tensor]
    stacked: Mapping[str, torch.Tensor]
    weights: torch.Tensor
    norms: torch.Tensor | None = None

    def shares(self) -> torch.Tensor:
        """p_k = n_k / sum_j n_j (float64)."""
        import torch

        weights = self.weights.to(torch.float64)
        if torch.any(weights < 0) or weights.sum() <= 0:
            raise ValueError("aggregation weights must be non-negative with a positive sum")
        return weights / weights.sum()

    def deltas(self, name: str) -> torch.Tensor:
        """Delta_k = w_k - w_t of one tensor, shape (K, ...), float64."""
        import torch

        return self.stacked[name].to(torch.float64) - self.current[name].to(torch.float64)

    def mean_update(self, coefficients: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """sum_k c_k Delta_k per tensor (float64); c = p by default (FedAvg's Delta_t)."""
        import torch

        c = self.shares() if coefficients is None else coefficients.to(torch.float64)
        out = {}
        for name in self.current:
            deltas = self.deltas(name)
            out[name] = (deltas * c.to(deltas.device).view((-1,) + (1,) * (deltas.dim() - 1))).sum(
                0
            )
        return out


def moved(current: Mapping[str, torch.Tensor], step: Mapping[str, torch.Tensor]) -> Parameters:
    """w_t + step, each tensor back in w_t's dtype."""
    import torch

    return {
        name: (tensor.to(torch.float64) + step[name]).to(tensor.dtype)
        for name, tensor in current.items()
    }


def aggregation_rule(
    protocols: Iterable[str], needs_norms: bool = False
) -> Callable[[Callable[..., Step]], Callable[..., Step]]:
    """Mark a rule function with the ``fl.protocol`` values it runs under and whether it
    reads ``ClientUpdates.norms`` (it is returned unchanged otherwise: a plain function)."""

    def mark(rule: Callable[..., Step]) -> Callable[..., Step]:
        rule.protocols = frozenset(protocols)  # type: ignore[attr-defined]
        rule.needs_norms = needs_norms  # type: ignore[attr-defined]
        return rule

    return mark


def rule_parameters(rule: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    """The rule's keyword-only parameters: its YAML params."""
    signature = inspect.signature(rule, eval_str=True)
    return {name: p for name, p in signature.parameters.items() if p.kind is p.KEYWORD_ONLY}


def validate_params(rule: Callable[..., Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` checked against the rule's keyword-only parameters; ValidationError."""
    fields: dict[str, Any] = {}
    for name, p in rule_parameters(rule).items():
        annotation = Any if p.annotation is p.empty else p.annotation
        fields[name] = (annotation, ... if p.default is p.empty else p.default)
    model = create_model(f"{rule.__name__}_params", __config__=ConfigDict(extra="forbid"), **fields)
    return dict(model.model_validate(dict(params)))


def params_problems(rule: Callable[..., Any], params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(key under fl.aggregation.params, message)`` for each bad parameter."""
    try:
        validate_params(rule, params)
    except ValidationError as exc:
        accepted = ", ".join(rule_parameters(rule)) or "no parameters"
        problems = []
        for err in exc.errors(include_url=False):
            key = ".".join(str(p) for p in err["loc"])
            message = err["msg"]
            if err["type"] == "extra_forbidden":
                message = f"not a parameter of this rule; it takes: {accepted}"
            problems.append((key, message))
        return problems
    return []
