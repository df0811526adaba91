"""``check_rule``: the contract a plug-in aggregation rule must meet, checked at validation.

As :func:`netfl.learning.check.check_model` does for models, the check calls the rule the
way the aggregator will (:mod:`netfl.learning.aggregation.aggregator`) on a small example,
twice (the second time with the state the first returned), so a rule with the wrong
signature, or one that raises, exits or returns something else than new parameters of
the same shapes and a state, is refused by ``netfl validate`` naming
``fl.aggregation.name``, not in the middle of a run. The contract is
:mod:`netfl.learning.aggregation.base`'s (docs/extending.md).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import torch

from netfl.learning.aggregation.aggregator import FLAT
from netfl.learning.aggregation.base import ClientUpdates
from netfl.registry_entry import raised

RULE_SIGNATURE = "rule(updates, state, **params) -> (parameters, state)"
_PARAMETERS, _CLIENTS = 6, 2


class RuleCheckError(AssertionError):
    """An aggregation rule broke the contract (the message names the rule broken)."""


def check_rule(rule: Callable[..., Any], params: Mapping[str, Any]) -> None:
    """Check ``rule`` with its validated ``params`` against the contract.

    Rules: ``rule(updates, state, **params)`` is a valid call; it returns a pair whose
    first item maps the parameters' name to a finite tensor of the current parameters'
    shape and dtype, and whose second item is a mapping (the next state); a second call
    with that state does the same.

    Raises
    ------
    RuleCheckError
        Naming the rule broken.
    """
    generator = torch.Generator().manual_seed(0)
    current = {FLAT: torch.randn(_PARAMETERS, generator=generator)}
    stacked = {FLAT: current[FLAT] + 0.1 * torch.randn(_CLIENTS, _PARAMETERS, generator=generator)}
    norms = torch.tensor([2.0, 1.0], dtype=torch.float64)
    updates = ClientUpdates(current, stacked, torch.tensor([3.0, 1.0], dtype=torch.float64), norms)
    try:
        inspect.signature(rule).bind(updates, {}, **params)
    except TypeError:
        raise RuleCheckError(
            f"must be callable as {RULE_SIGNATURE}; its signature is {inspect.signature(rule)}"
        ) from None
    except ValueError:  # a builtin without a signature: let the call decide
        pass
    state: Any = {}
    for _ in range(2):
        try:
            out = rule(updates, state, **params)
        except (Exception, SystemExit) as exc:
            raise RuleCheckError(f"aggregating two clients {raised(exc)}") from exc
        state = _checked(out, current[FLAT])


def _checked(out: Any, current: torch.Tensor) -> Any:
    """The state ``out`` returns, after checking it against the contract."""
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuleCheckError(
            f"returned a {type(out).__name__}; it must return a pair (parameters, state)"
        )
    parameters, state = out
    moved = parameters.get(FLAT) if isinstance(parameters, Mapping) else None
    if not isinstance(moved, torch.Tensor):
        raise RuleCheckError(
            "must return the new parameters as a mapping of the same names to tensors"
            " (updates.current's keys), as its first item"
        )
    if moved.shape != current.shape or moved.dtype != current.dtype:
        raise RuleCheckError(
            f"returned parameters of shape {tuple(moved.shape)} and {moved.dtype}; they"
            f" must keep the current ones' ({tuple(current.shape)}, {current.dtype})"
        )
    if not bool(torch.isfinite(moved).all()):
        raise RuleCheckError("returned non-finite parameters from finite updates")
    if not isinstance(state, Mapping):
        raise RuleCheckError(
            f"returned a {type(state).__name__} as its state; it must be a mapping (empty"
            " for a stateless rule)"
        )
    return state
