"""The server's aggregation rule with its state: what the learner calls to aggregate.

The rule (:mod:`netfl.learning.aggregation.base`) moves the model's parameters, which it
sees as one flat vector (its arithmetic is element-wise, so this changes nothing but the
number of tensor operations); the buffers (batch-norm statistics and counters) are averaged
with FedAvg, as FedAvg averages everything. Under ``fedavg`` the whole state is FedAvg's
average, computed exactly as before the rules existed, so default runs are unchanged to the
bit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from netfl.learning.aggregation.base import ClientUpdates, State, Step, validate_params
from netfl.learning.aggregation.fedavg import fedavg, federated_averaging

ModelState = dict[str, torch.Tensor]
#: The one name the rules see: every parameter of the model, flattened and concatenated.
FLAT = "parameters"


class Aggregator:
    """A rule, its validated parameters and its state across rounds.

    Parameters
    ----------
    rule
        The rule function (``federated_averaging``, ``fednova``, ``fedadam``, ...).
    params
        Its ``fl.aggregation.params`` (validated here again).
    param_names
        The model's parameters (the rule moves these; the rest of a state is buffers).
    """

    def __init__(
        self,
        rule: Callable[..., Step] = federated_averaging,
        params: Mapping[str, Any] | None = None,
        param_names: Sequence[str] = (),
    ) -> None:
        self.rule = rule
        self.params = validate_params(rule, params or {})
        self.param_names = list(param_names)
        self._names = frozenset(self.param_names)
        self.state: State = {}

    @property
    def plain(self) -> bool:
        """FedAvg: the average of whole states."""
        return self.rule is federated_averaging

    @property
    def uses_norms(self) -> bool:
        """Whether the rule needs each client's ||a_k||_1 (FedNova)."""
        return bool(getattr(self.rule, "needs_norms", False))

    def aggregate(
        self,
        current: Mapping[str, torch.Tensor],
        stacked: Mapping[str, torch.Tensor],
        weights: torch.Tensor,
        norms: torch.Tensor | None = None,
    ) -> ModelState | None:
        """The next global state from the clients' stacked states (None: every weight is 0)."""
        if self.plain:
            return fedavg(stacked, weights)
        if float(weights.sum()) <= 0:
            return None
        buffers = {n: t for n, t in stacked.items() if n not in self._names}
        averaged = fedavg(buffers, weights) or {}
        updates = ClientUpdates(
            {FLAT: self._flat(current)},
            {FLAT: torch.cat([stacked[n].flatten(1) for n in self.param_names], dim=1)},
            weights,
            norms,
        )
        return self._step(current, averaged, updates)

    def apply(self, current: Mapping[str, torch.Tensor], proposed: ModelState) -> ModelState:
        """The asynchronous protocols' new model ``proposed`` (FedBuff's buffer applied,
        FedAsync's mix) taken as one update Delta_t = proposed - current: the rule's step
        from ``current`` (FedAvg: ``proposed`` itself)."""
        if self.plain:
            return proposed
        buffers = {n: t for n, t in proposed.items() if n not in self._names}
        updates = ClientUpdates(
            {FLAT: self._flat(current)},
            {FLAT: self._flat(proposed).unsqueeze(0)},
            torch.ones(1, dtype=torch.float64),
        )
        return self._step(current, buffers, updates)

    def _flat(self, state: Mapping[str, torch.Tensor]) -> torch.Tensor:
        return torch.cat([state[n].flatten() for n in self.param_names])

    def _step(
        self,
        current: Mapping[str, torch.Tensor],
        buffers: Mapping[str, torch.Tensor],
        updates: ClientUpdates,
    ) -> ModelState:
        """The rule's step on the parameters as one flat vector (a handful of tensor
        operations a round, whatever the number of layers), put back in the state's shapes
        and order beside the averaged buffers."""
        flat, self.state = self.rule(updates, self.state, **self.params)
        pieces = flat[FLAT].split([current[n].numel() for n in self.param_names])
        params = {
            n: piece.view_as(current[n]) for n, piece in zip(self.param_names, pieces, strict=True)
        }
        return {n: params[n] if n in params else buffers[n] for n in current}

    def snapshot(self) -> State:
        """The state on the host, for a checkpoint."""
        return {
            group: {n: t.detach().cpu().clone() for n, t in tensors.items()}
            for group, tensors in self.state.items()
        }

    def restore(self, state: State, device: torch.device) -> None:
        self.state = {
            group: {n: t.to(device) for n, t in tensors.items()} for group, tensors in state.items()
        }
