"""Local training of a round's clients.

``SequentialTrainer`` is the reference: one plain ``nn.Module`` and ``torch.optim.SGD`` per
client, one after another. Each client's minibatch order comes from its own seed (a
function of the run seed, the round and the client), so a client's update does not depend
on which other clients trained in the same round.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


@dataclass(frozen=True)
class LocalSGD:
    """Hyper-parameters of one round of local SGD."""

    lr: float
    epochs: int
    batch_size: int


@dataclass
class LocalResult:
    """The trained clients of a round, aligned with ``clients``.

    ``states`` holds each client's parameters and buffers stacked on a leading client axis;
    ``loss_mean``/``loss_std`` are over the client's local iterations (minibatch losses).
    """

    clients: np.ndarray
    states: dict[str, torch.Tensor]
    n_samples: np.ndarray
    loss_mean: np.ndarray
    loss_std: np.ndarray


def minibatches(n: int, sgd: LocalSGD, generator: torch.Generator) -> list[torch.Tensor]:
    """Positions 0..n-1 in shuffled minibatches, epoch after epoch (last batch may be short)."""
    batches: list[torch.Tensor] = []
    for _ in range(sgd.epochs):
        order = torch.randperm(n, generator=generator)
        batches.extend(order.split(sgd.batch_size))
    return batches


class SequentialTrainer:
    """Reference backend: train each client in turn with a plain module and optimizer."""

    def __init__(self, model: nn.Module, device: torch.device) -> None:
        self.template = model.to(device)
        self.device = device

    def train(
        self,
        global_state: Mapping[str, torch.Tensor],
        x: torch.Tensor,
        y: torch.Tensor,
        client_indices: Sequence[torch.Tensor],
        seeds: Sequence[int],
        sgd: LocalSGD,
    ) -> tuple[dict[str, torch.Tensor], np.ndarray, np.ndarray]:
        """Return stacked states, per-client mean and std of minibatch losses."""
        states: list[dict[str, torch.Tensor]] = []
        means, stds = [], []
        for indices, seed in zip(client_indices, seeds, strict=True):
            model = copy.deepcopy(self.template)
            model.load_state_dict(global_state)
            model.train()
            optimizer = torch.optim.SGD(model.parameters(), lr=sgd.lr)
            generator = torch.Generator().manual_seed(int(seed))
            losses = []
            for batch in minibatches(len(indices), sgd, generator):
                rows = indices[batch.to(indices.device)]
                optimizer.zero_grad(set_to_none=True)
                loss = F.cross_entropy(model(x[rows]), y[rows])
                loss.backward()
                optimizer.step()
                losses.append(loss.detach())
            states.append({k: v.detach().clone() for k, v in model.state_dict().items()})
            if losses:
                stacked = torch.stack(losses).double().cpu()
                means.append(float(stacked.mean()))
                stds.append(float(stacked.std(unbiased=False)))
            else:
                means.append(float("nan"))
                stds.append(float("nan"))
        keys = global_state.keys()
        stacked_states = {k: torch.stack([s[k] for s in states]) for k in keys}
        return stacked_states, np.array(means), np.array(stds)
