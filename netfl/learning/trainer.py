"""Local training of a round's clients: the shared plan and the sequential reference.

Local SGD as in FedAvg (McMahan et al. 2017) and UCB-CS (Cho et al. 2020 eq. (2)):
each client starts from the global model and takes minibatch SGD steps on its own data,
either ``epochs`` passes (shuffled, the last batch of a pass may be short) or ``steps``
iterations of one minibatch each (drawn pass by pass without replacement). With FedProx's
proximal term (Li et al., MLSys 2020, eq. (2)) the client minimises
F_k(w) + (mu / 2) ||w - w_t||^2, so each step's gradient gains mu (w - w_t). Under partial
work (``fl.partial_work``) a client takes only the first ``steps[k]`` steps of its plan:
the same minibatches in the same order, cut short.

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

from netfl.learning.dropout import client_key, dropout_layers, set_draws, with_client_dropout

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
    prox_mu: float = 0.0

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

    def samples_in_steps(self, n_samples: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Samples the first ``steps`` steps of a local update go through.

        Epochs: a pass is ceil(n / b) steps of b samples, the last one n - (ceil(n / b) - 1) b,
        so e whole passes and r < ceil(n / b) more steps are e n + r b. Steps: s min(b, n).
        """
        n = np.asarray(n_samples, dtype=np.int64)
        s = np.asarray(steps, dtype=np.int64)
        if self.steps is not None:
            return s * np.minimum(self.batch_size, n)
        per_pass = np.maximum(-(-n // self.batch_size), 1)
        return (s // per_pass) * n + (s % per_pass) * self.batch_size

    def steps_within(self, n_samples: np.ndarray, samples: np.ndarray) -> np.ndarray:
        """Whole steps of a local update done once ``samples`` samples are processed (the
        inverse of :meth:`samples_in_steps`, capped at :meth:`steps_taken`)."""
        n = np.asarray(n_samples, dtype=np.int64)
        done = np.maximum(np.asarray(samples, dtype=float), 0.0)
        full = self.steps_taken(n)
        if self.steps is not None:
            steps = np.floor(done / np.maximum(np.minimum(self.batch_size, n), 1))
        else:
            per_pass = np.maximum(-(-n // self.batch_size), 1)
            passes = np.floor(done / np.maximum(n, 1))
            rest = done - passes * n
            steps = passes * per_pass + np.minimum(np.floor(rest / self.batch_size), per_pass - 1)
        return np.minimum(steps.astype(np.int64), full)


def local_path_norms(sgd: LocalSGD, steps: np.ndarray) -> np.ndarray:
    """||a_k||_1 of each client's local path (FedNova, Wang et al. 2020 Sec. 4 and App.).

    A client's update after tau steps is Delta = -lr sum_i a_i g_i: a_i is how far the
    gradient of step i has moved the model by the end. Plain SGD: a_i = 1, ||a||_1 = tau.
    Momentum rho (torch.optim.SGD, no dampening): ||a||_1 = [tau - rho (1 - rho^tau) /
    (1 - rho)] / (1 - rho). Proximal term mu: ||a||_1 = [1 - (1 - lr mu)^tau] / (lr mu).
    Both: the impulse response of the scalar recursion (v <- rho v + g + mu x,
    x <- x - lr v), summed in absolute value (so with lr mu > 1, where the proximal
    form's terms alternate in sign, ||a||_1 = [1 - |1 - lr mu|^tau] / [1 - |1 - lr mu|]).
    Weight decay is left out, as in the authors' code (github.com/JYWa/FedNova).
    """
    tau = np.asarray(steps, dtype=np.int64)
    rho, eta_mu = sgd.momentum, sgd.lr * sgd.prox_mu
    if eta_mu == 0:
        if rho == 0:
            return tau.astype(float)
        return (tau - rho * (1 - rho**tau) / (1 - rho)) / (1 - rho)
    if rho == 0:
        # |a_m| = |1 - lr mu|^m: the closed form above while lr mu <= 1; beyond, the terms
        # alternate in sign (lr mu < 2) or grow (lr mu >= 2: the local step is unstable,
        # and the norm overflows to inf, as the model does).
        q = abs(1.0 - eta_mu)
        if q == 1.0:
            return tau.astype(float)
        with np.errstate(over="ignore"):
            return (1 - q**tau) / (1 - q)
    longest = int(tau.max(initial=0))
    reach = np.zeros(longest + 1)  # reach[m]: |a| of a gradient m steps before the end
    x, velocity, impulse = 0.0, 0.0, 1.0
    for m in range(1, longest + 1):
        velocity = rho * velocity + impulse + sgd.prox_mu * x
        x -= sgd.lr * velocity
        impulse = 0.0
        reach[m] = abs(x) / sgd.lr
    return np.cumsum(reach)[tau]


class Trainer(Protocol):
    """A backend that trains a round's clients from the global state."""

    #: Which loop trains, in words (summary.json's ``training_path``).
    @property
    def path(self) -> str: ...

    def train(
        self,
        global_state: Mapping[str, torch.Tensor],
        x: torch.Tensor,
        y: torch.Tensor,
        client_indices: Sequence[torch.Tensor],
        seeds: Sequence[int],
        sgd: LocalSGD,
        steps: Sequence[int] | None = None,
    ) -> TrainOutput:
        """Train each client (row ids ``client_indices``, int64 on the host) from the
        global state, the first ``steps[k]`` steps of its plan (None: all); return stacked
        states and per-client minibatch-loss mean and std."""


def minibatches(n: int, sgd: LocalSGD, generator: torch.Generator) -> list[torch.Tensor]:
    """Positions 0..n-1 in the minibatches of one local update, in order.

    Epochs: one shuffled pass after another, split into batches (the last may be short).
    Steps: shuffled passes concatenated and cut into ``steps`` batches of min(b, n).
    """
    order, step, _ = minibatch_order(n, sgd, generator)
    if n == 0:
        return []
    return list(torch.from_numpy(order).split(np.bincount(step).tolist()))


def minibatch_order(
    n: int, sgd: LocalSGD, generator: torch.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every sample visit of one local update, in order (what :func:`minibatches` splits):
    the sample's position 0..n-1, the step it is part of, and its slot in that step's
    minibatch (int64 arrays); drawn from ``generator`` one shuffled pass after another."""
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    if sgd.steps is None:
        passes = [torch.randperm(n, generator=generator) for _ in range(sgd.epochs)]
        order = torch.cat(passes).numpy()
        visit = np.arange(len(order))
        within = visit % n  # position in its pass; a pass is ceil(n / b) batches
        step = (visit // n) * -(-n // sgd.batch_size) + within // sgd.batch_size
        return order, step, within % sgd.batch_size
    size = min(sgd.batch_size, n)
    passes = [torch.randperm(n, generator=generator) for _ in range(-(-sgd.steps * size // n))]
    visit = np.arange(sgd.steps * size)
    return torch.cat(passes).numpy()[: len(visit)], visit // size, visit % size


def padded_visits(
    client_indices: Sequence[torch.Tensor],
    seeds: Sequence[int],
    sgd: LocalSGD,
    steps: Sequence[int] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The minibatches of :func:`client_plans`, from the same generators, padded into
    arrays (no tensor per minibatch): the sample rows (steps, clients, width) int64, which
    of them are taken (bool, same shape), and each client's number of steps."""
    visits = []
    for k, (indices, seed) in enumerate(zip(client_indices, seeds, strict=True)):
        generator = torch.Generator().manual_seed(int(seed))
        position, step, slot = minibatch_order(len(indices), sgd, generator)
        if steps is not None:
            kept = step < max(int(steps[k]), 0)
            position, step, slot = position[kept], step[kept], slot[kept]
        visits.append((indices.cpu().numpy()[position], step, slot))
    lengths = np.array([v[1][-1] + 1 if len(v[1]) else 0 for v in visits], dtype=np.int64)
    n_steps, n_clients = int(lengths.max(initial=0)), len(visits)
    width = max((int(v[2].max()) + 1 for v in visits if len(v[2])), default=1)
    column = np.repeat(np.arange(n_clients), [len(v[1]) for v in visits])
    rows_of, step, slot = (np.concatenate([v[i] for v in visits] or [[]]) for i in range(3))
    step, slot = step.astype(np.int64), slot.astype(np.int64)
    rows = np.zeros((n_steps, n_clients, width), dtype=np.int64)
    taken = np.zeros((n_steps, n_clients, width), dtype=bool)
    rows[step, column, slot] = rows_of
    taken[step, column, slot] = True
    return rows, taken, lengths


def client_plans(
    client_indices: Sequence[torch.Tensor],
    seeds: Sequence[int],
    sgd: LocalSGD,
    steps: Sequence[int] | None,
) -> list[list[torch.Tensor]]:
    """Each client's minibatches, the first ``steps[k]`` of its plan (None: all)."""
    plans = []
    for k, (indices, seed) in enumerate(zip(client_indices, seeds, strict=True)):
        generator = torch.Generator().manual_seed(int(seed))
        batches = minibatches(len(indices), sgd, generator)
        plans.append(batches if steps is None else batches[: max(int(steps[k]), 0)])
    return plans


def loss_summary(losses: torch.Tensor) -> tuple[float, float]:
    """Mean and (population) standard deviation of a client's minibatch losses."""
    if losses.numel() == 0:
        return float("nan"), float("nan")
    values = losses.double().cpu()
    return float(values.mean()), float(values.std(unbiased=False))


def loss_summaries(losses: torch.Tensor, taken: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`loss_summary` of every client at once: ``losses`` (steps, clients), ``taken``
    the steps each client ran (a boolean array of the same shape); NaN for none."""
    values = losses.double().cpu().numpy()
    count = taken.sum(0).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(taken, values, 0.0).sum(0) / count
        spread = np.where(taken, (values - mean) ** 2, 0.0).sum(0) / count
    return np.where(count > 0, mean, np.nan), np.where(count > 0, np.sqrt(spread), np.nan)


class SequentialTrainer:
    """Reference backend: train each client in turn with a plain module and optimizer."""

    path = "sequential"

    def __init__(self, model: nn.Module, device: torch.device) -> None:
        # One working copy, reloaded from the global state for each client (a deepcopy per
        # client cost a fifth of a round for small models); the caller's model is untouched.
        self.model = copy.deepcopy(with_client_dropout(model)).to(device)
        self.device = device
        self.dropout = dropout_layers(self.model)  # drawn from each client's seed

    def train(
        self,
        global_state: Mapping[str, torch.Tensor],
        x: torch.Tensor,
        y: torch.Tensor,
        client_indices: Sequence[torch.Tensor],
        seeds: Sequence[int],
        sgd: LocalSGD,
        steps: Sequence[int] | None = None,
    ) -> TrainOutput:
        """Return stacked states, per-client mean and std of minibatch losses."""
        states: list[dict[str, torch.Tensor]] = []
        means, stds = [], []
        model = self.model
        model.train()
        plans = client_plans(client_indices, seeds, sgd, steps)
        # (w, w_t) for every parameter, once rather than a module walk per step
        anchored = [(p, global_state[name].to(self.device)) for name, p in model.named_parameters()]
        for indices, batches, seed in zip(client_indices, plans, seeds, strict=True):
            model.load_state_dict(global_state)
            optimizer = torch.optim.SGD(
                model.parameters(),
                lr=sgd.lr,
                momentum=sgd.momentum,
                weight_decay=sgd.weight_decay,
            )
            # The client's rows in minibatch order, moved to the data's device once.
            order = indices[torch.cat(batches)].to(x.device) if batches else indices
            losses = []
            for step, rows in enumerate(order.split([len(b) for b in batches])):
                if self.dropout:
                    set_draws(self.dropout, client_key(seed), step)
                optimizer.zero_grad(set_to_none=True)
                loss = F.cross_entropy(model(x[rows]), y[rows])
                loss.backward()
                if sgd.prox_mu:
                    proximal_gradient(anchored, sgd.prox_mu)
                optimizer.step()
                losses.append(loss.detach())
            states.append({k: v.detach().clone() for k, v in model.state_dict().items()})
            mean, std = loss_summary(torch.stack(losses) if losses else torch.empty(0))
            means.append(mean)
            stds.append(std)
        stacked = {k: torch.stack([s[k] for s in states]) for k in global_state}
        return stacked, np.array(means), np.array(stds)


@torch.no_grad()
def proximal_gradient(anchored: Sequence[tuple[torch.Tensor, torch.Tensor]], mu: float) -> None:
    """Add FedProx's mu (w - w_t) to each parameter's gradient, for (w, w_t) pairs (Li et
    al. 2020, eq. (2); the official code's PerturbedGradientDescent steps by
    lr (g + mu (w - w_t)))."""
    for param, anchor in anchored:
        if param.grad is not None:
            param.grad.add_(param - anchor, alpha=mu)
