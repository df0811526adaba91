"""Local training of a round's clients: the shared plan and the sequential reference.

Local SGD as in FedAvg (McMahan et al. 2017) and UCB-CS (Cho et al. 2020 eq. (2)):
each client starts from the global model and takes minibatch SGD steps on its own data,
either ``epochs`` passes (shuffled, the last batch of a pass may be short) or ``steps``
iterations of one minibatch each (drawn pass by pass without replacement).

Each client's minibatch order comes from its own seed (a function of the run seed, the
round and the client), so a client's update does not depend on which other clients
trained in the same round, nor on the backend: ``SequentialTrainer`` (one plain
``nn.Module`` and ``torch.optim.SGD`` per client, the reference) and
:class:`netfl.learning.batched.BatchedTrainer` take the same steps.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

#: (stacked states, per-client mean and std of the minibatch losses)
TrainOutput = tuple[dict[str, torch.Tensor], np.ndarray, np.ndarray]


@dataclass(frozen=True)
class LocalSGD:
    """Hyper-parameters of one round of local SGD (torch.optim.SGD semantics)."""

    lr: float
    epochs: int
    batch_size: int
    steps: int | None = None
    momentum: float = 0.0
    weight_decay: float = 0.0

    def steps_taken(self, n_samples: np.ndarray) -> np.ndarray:
        """SGD steps of one local update: E ceil(n_k / b), or tau (none without data)."""
        n = np.asarray(n_samples, dtype=np.int64)
        if self.steps is None:
            steps = self.epochs * -(-n // self.batch_size)
        else:
            steps = np.full(n.shape, self.steps, dtype=np.int64)
        return np.where(n > 0, steps, 0)

    def samples_processed(self, n_samples: np.ndarray) -> np.ndarray:
        """Training samples one local update goes through: E n_k, or tau min(b, n_k)."""
        n = np.asarray(n_samples, dtype=np.int64)
        if self.steps is None:
            return self.epochs * n
        return self.steps * np.minimum(self.batch_size, n)


class Trainer(Protocol):
    """A backend that trains a round's clients from the global state."""

    def train(
        self,
        global_state: Mapping[str, torch.Tensor],
        x: torch.Tensor,
        y: torch.Tensor,
        client_indices: Sequence[torch.Tensor],
        seeds: Sequence[int],
        sgd: LocalSGD,
    ) -> TrainOutput:
        """Train each client (row ids ``client_indices``, int64 on the host) from the
        global state; return stacked states and per-client minibatch-loss mean and std."""


def minibatches(n: int, sgd: LocalSGD, generator: torch.Generator) -> list[torch.Tensor]:
    """Positions 0..n-1 in the minibatches of one local update, in order.

    Epochs: one shuffled pass after another, split into batches (the last may be short).
    Steps: shuffled passes concatenated and cut into ``steps`` batches of min(b, n).
    """
    if n == 0:
        return []
    if sgd.steps is None:
        batches: list[torch.Tensor] = []
        for _ in range(sgd.epochs):
            batches.extend(torch.randperm(n, generator=generator).split(sgd.batch_size))
        return batches
    size = min(sgd.batch_size, n)
    passes = -(-sgd.steps * size // n)
    order = torch.cat([torch.randperm(n, generator=generator) for _ in range(passes)])
    return list(order[: sgd.steps * size].split(size))


def loss_summary(losses: torch.Tensor) -> tuple[float, float]:
    """Mean and (population) standard deviation of a client's minibatch losses."""
    if losses.numel() == 0:
        return float("nan"), float("nan")
    values = losses.double().cpu()
    return float(values.mean()), float(values.std(unbiased=False))


class SequentialTrainer:
    """Reference backend: train each client in turn with a plain module and optimizer."""

    def __init__(self, model: nn.Module, device: torch.device) -> None:
        # One working copy, reloaded from the global state for each client (a deepcopy per
        # client cost a fifth of a round for small models); the caller's model is untouched.
        self.model = copy.deepcopy(model).to(device)
        self.device = device

    def train(
        self,
        global_state: Mapping[str, torch.Tensor],
        x: torch.Tensor,
        y: torch.Tensor,
        client_indices: Sequence[torch.Tensor],
        seeds: Sequence[int],
        sgd: LocalSGD,
    ) -> TrainOutput:
        """Return stacked states, per-client mean and std of minibatch losses."""
        states: list[dict[str, torch.Tensor]] = []
        means, stds = [], []
        model = self.model
        model.train()
        for indices, seed in zip(client_indices, seeds, strict=True):
            model.load_state_dict(global_state)
            optimizer = torch.optim.SGD(
                model.parameters(),
                lr=sgd.lr,
                momentum=sgd.momentum,
                weight_decay=sgd.weight_decay,
            )
            generator = torch.Generator().manual_seed(int(seed))
            batches = minibatches(len(indices), sgd, generator)
            # The client's rows in minibatch order, moved to the data's device once.
            order = indices[torch.cat(batches)].to(x.device) if batches else indices
            losses = []
            for rows in order.split([len(b) for b in batches]):
                optimizer.zero_grad(set_to_none=True)
                loss = F.cross_entropy(model(x[rows]), y[rows])
                loss.backward()
                optimizer.step()
                losses.append(loss.detach())
            states.append({k: v.detach().clone() for k, v in model.state_dict().items()})
            mean, std = loss_summary(torch.stack(losses) if losses else torch.empty(0))
            means.append(mean)
            stds.append(std)
        stacked = {k: torch.stack([s[k] for s in states]) for k in global_state}
        return stacked, np.array(means), np.array(stds)
