"""Batched local SGD: all of a round's clients train together in one vectorised loop.

The K clients' parameters are stacked on a leading axis and the model runs under
``torch.func.vmap(functional_call(...))``: one step of the loop is one minibatch step of
every client. Clients have different data sizes, so their minibatch plans are padded to
a common shape and masked:

- a padded sample has weight 0, and a client's loss is the weighted mean over its real
  samples, so its gradient is the one of its real minibatch;
- batch norm computes its statistics over the real samples only (:class:`MaskedBatchNorm`
  replaces every ``nn.BatchNorm*``; each client keeps its own running statistics);
- a client whose plan is over is inactive: its parameters, momentum buffer and
  batch-norm statistics are kept as they are (``torch.where``), not merely nudged by zero.
  This is also how clients with different step counts (partial work: the first
  ``steps[k]`` steps of each plan) train in one call: a client whose steps are done is
  masked from then on.

FedProx's proximal term adds mu (w_k - w_t) to each client's gradient before weight
decay and momentum, as :class:`~netfl.learning.trainer.SequentialTrainer` does.

The plan (which rows each client uses at each step) is built on the CPU from the same
per-client generators as :class:`~netfl.learning.trainer.SequentialTrainer`'s and moved to
the device once; the loop itself has no host synchronisation. The SGD update reproduces
``torch.optim.SGD`` (weight decay, then momentum with zero dampening).

On CPU, vmap turns K clients' convolutions into one grouped convolution, which oneDNN
runs slower than K separate ones; there a model with convolutions trains through the
sequential loop unless ``vectorize_convolutions=True`` (docs/benchmarks.md, ## Training).

CUDA paths (device placement, bf16 autocast) are written for GPUs but tested on CPU only.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, vmap
from torch.nn import functional as F

from netfl.learning.trainer import (
    LocalSGD,
    SequentialTrainer,
    TrainOutput,
    client_plans,
    loss_summary,
)

MASK = "sample_mask"


class MaskedBatchNorm(nn.Module):
    """Batch norm whose training statistics skip samples with mask 0.

    Takes over a ``nn.BatchNorm1d/2d``'s parameters and buffers under the same names, so
    state dicts are interchangeable. The per-sample mask is the non-persistent buffer
    ``sample_mask`` (shape (B,)), given per client through ``functional_call``. With every
    sample real it computes exactly what ``nn.BatchNorm*`` computes in training mode.
    """

    running_mean: torch.Tensor | None
    running_var: torch.Tensor | None
    num_batches_tracked: torch.Tensor | None

    def __init__(self, bn: nn.modules.batchnorm._BatchNorm) -> None:
        super().__init__()
        self.eps = bn.eps
        self.momentum = bn.momentum
        self.weight = bn.weight
        self.bias = bn.bias
        self.register_buffer("running_mean", bn.running_mean)
        self.register_buffer("running_var", bn.running_var)
        self.register_buffer("num_batches_tracked", bn.num_batches_tracked)
        self.register_buffer(MASK, torch.ones(1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        channel = (1, -1) + (1,) * (x.dim() - 2)
        if not self.training:
            return F.batch_norm(
                x, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0, self.eps
            )
        # Statistics in fp32 also under bf16 autocast, as nn.BatchNorm* computes them there
        # (in bf16 the running variance was off by about 0.3%).
        x = x.float()
        reduce = [0, *range(2, x.dim())]
        mask = getattr(self, MASK)
        if mask.shape[0] != x.shape[0]:  # used on its own, without a mask: every sample
            mask = torch.ones(x.shape[0], device=x.device)
        weight = mask.to(x.dtype).view((-1,) + (1,) * (x.dim() - 1))
        count = weight.sum() * (x[0, 0].numel())
        mean = (x * weight).sum(reduce) / count.clamp_min(1)
        centred = x - mean.view(channel)
        var = (centred * centred * weight).sum(reduce) / count.clamp_min(1)
        out = centred * torch.rsqrt(var + self.eps).view(channel)
        if self.weight is not None and self.bias is not None:
            out = out * self.weight.view(channel) + self.bias.view(channel)
        if self.running_mean is not None and self.running_var is not None:
            self._track(mean.detach(), var.detach(), count)
        return out

    @torch.no_grad()
    def _track(self, mean: torch.Tensor, var: torch.Tensor, count: torch.Tensor) -> None:
        assert self.running_mean is not None and self.running_var is not None
        assert self.num_batches_tracked is not None
        seen = count > 0
        self.num_batches_tracked.add_(seen.to(self.num_batches_tracked.dtype))
        if self.momentum is None:  # cumulative moving average
            factor = 1.0 / self.num_batches_tracked.clamp_min(1).to(mean.dtype)
        else:
            factor = torch.full_like(count, self.momentum)
        unbiased = var * count / (count - 1).clamp_min(1)
        for buffer, value in ((self.running_mean, mean), (self.running_var, unbiased)):
            buffer.copy_(torch.where(seen, (1 - factor) * buffer + factor * value, buffer))


def with_masked_batch_norm(model: nn.Module) -> nn.Module:
    """A copy of ``model`` with every ``nn.BatchNorm*`` replaced by MaskedBatchNorm."""
    model = copy.deepcopy(model)
    for parent in list(model.modules()):
        for name, child in parent.named_children():
            if isinstance(child, nn.modules.batchnorm._BatchNorm):
                setattr(parent, name, MaskedBatchNorm(child))
    return model


@dataclass(frozen=True)
class BatchPlan:
    """Each client's minibatch rows, padded: ``rows``, ``weight`` (S, K, B); ``active`` (S, K)."""

    rows: torch.Tensor
    weight: torch.Tensor
    active: torch.Tensor

    @property
    def n_steps(self) -> int:
        return int(self.rows.shape[0])


def batch_plan(
    client_indices: Sequence[torch.Tensor],
    seeds: Sequence[int],
    sgd: LocalSGD,
    steps: Sequence[int] | None = None,
) -> BatchPlan:
    """The padded minibatch plan of every client (same batches as the sequential trainer;
    the first ``steps[k]`` of client k's, None: all)."""
    plans = client_plans(client_indices, seeds, sgd, steps)
    n_steps = max((len(p) for p in plans), default=0)
    width = max((len(b) for p in plans for b in p), default=1)
    rows = torch.zeros(n_steps, len(plans), width, dtype=torch.int64)
    weight = torch.zeros(n_steps, len(plans), width)
    for k, (batches, indices) in enumerate(zip(plans, client_indices, strict=True)):
        if not batches:
            continue
        # One scatter per client: position i of the concatenated batches goes to
        # (its step, its slot in that step's batch).
        lengths = torch.tensor([len(b) for b in batches])
        step = torch.repeat_interleave(torch.arange(len(batches)), lengths)
        first = torch.repeat_interleave(lengths.cumsum(0) - lengths, lengths)
        slot = torch.arange(len(step)) - first
        host = indices.cpu()  # already on the host when called from the learner
        rows[step, k, slot] = host[torch.cat(batches)]
        weight[step, k, slot] = 1.0
    return BatchPlan(rows, weight, weight.sum(dim=2) > 0)


class BatchedTrainer:
    """Vectorised backend (see the module docstring); same results as SequentialTrainer."""

    def __init__(
        self,
        model: nn.Module,
        device: torch.device,
        max_parallel_clients: int | None = None,
        bf16: bool = False,
        vectorize_convolutions: bool | None = None,
    ) -> None:
        self.device = device
        self.module = with_masked_batch_norm(model).to(device).train()
        self.param_names = [name for name, _ in self.module.named_parameters()]
        self.mask_names = [
            name for name, _ in self.module.named_buffers() if name.rsplit(".", 1)[-1] == MASK
        ]
        self.max_parallel_clients = max_parallel_clients
        self.bf16 = bf16 and device.type == "cuda"
        self._forward = vmap(self._one_client)
        # On CPU, the grouped convolution that vmap makes of K clients' convolutions is
        # slower than K separate ones (1.5-2.5x measured on the early CIFAR layers; see
        # docs/benchmarks.md), so by default a model with convolutions trains there client
        # by client, through the reference loop (same results by construction).
        has_conv = any(isinstance(m, nn.modules.conv._ConvNd) for m in model.modules())
        if vectorize_convolutions is None:
            vectorize_convolutions = device.type != "cpu"
        self.fallback = (
            SequentialTrainer(model, device) if has_conv and not vectorize_convolutions else None
        )

    def _one_client(
        self,
        params: dict[str, torch.Tensor],
        buffers: dict[str, torch.Tensor],
        masks: dict[str, torch.Tensor],
        x: torch.Tensor,
    ) -> torch.Tensor:
        return functional_call(self.module, (params, buffers, masks), (x,))

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
        if self.fallback is not None:
            return self.fallback.train(global_state, x, y, client_indices, seeds, sgd, steps)
        chunk = self.max_parallel_clients or max(len(client_indices), 1)
        states: list[dict[str, torch.Tensor]] = []
        losses: list[torch.Tensor] = []
        actives: list[torch.Tensor] = []
        for start in range(0, len(client_indices), chunk):
            part = slice(start, start + chunk)
            plan = batch_plan(
                client_indices[part], seeds[part], sgd, None if steps is None else steps[part]
            )
            state, loss = self._train_chunk(global_state, x, y, plan, sgd)
            states.append(state)
            losses.append(loss)  # to the host after the last chunk: chunks queue up on a GPU
            actives.append(plan.active)
        stacked = {k: torch.cat([s[k] for s in states]) for k in global_state}
        means, stds = [], []
        for loss, active in zip(losses, actives, strict=True):
            loss = loss.cpu()
            for k in range(loss.shape[1]):
                mean, std = loss_summary(loss[:, k][active[:, k]])
                means.append(mean)
                stds.append(std)
        return stacked, np.array(means), np.array(stds)

    def _train_chunk(
        self,
        global_state: Mapping[str, torch.Tensor],
        x: torch.Tensor,
        y: torch.Tensor,
        plan: BatchPlan,
        sgd: LocalSGD,
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        n_clients = plan.rows.shape[1]

        def stack(name: str) -> torch.Tensor:
            tensor = global_state[name].to(self.device)
            return tensor.unsqueeze(0).repeat((n_clients,) + (1,) * tensor.dim())

        params = {n: stack(n).requires_grad_(True) for n in self.param_names}
        buffers = {n: stack(n) for n in global_state if n not in params}
        velocity = {n: torch.zeros_like(p) for n, p in params.items()} if sgd.momentum else {}
        anchor = {n: global_state[n].to(self.device) for n in params} if sgd.prox_mu else {}
        rows = plan.rows.to(self.device, non_blocking=True)
        weight = plan.weight.to(self.device, non_blocking=True)
        active = plan.active.to(self.device, non_blocking=True)
        # Known on the host, so no synchronisation: steps where every client is active
        # take the plain update, the others the masked one.
        everyone = plan.active.all(dim=1).tolist()
        losses = torch.zeros(plan.n_steps, n_clients, device=self.device)
        for s in range(plan.n_steps):
            loss = self._loss(params, buffers, x[rows[s]], y[rows[s]], weight[s])
            grads: Sequence[torch.Tensor] = torch.autograd.grad(loss.sum(), list(params.values()))
            if sgd.prox_mu:  # FedProx: + mu (w_k - w_t), before weight decay as in torch's SGD
                grads = [
                    g.add(params[n].detach() - anchor[n], alpha=sgd.prox_mu)
                    for n, g in zip(params, grads, strict=True)
                ]
            self._sgd_step(params, grads, velocity, None if everyone[s] else active[s], sgd)
            losses[s] = loss.detach()
        state = {n: params[n].detach() if n in params else buffers[n] for n in global_state}
        return state, losses

    def _loss(
        self,
        params: dict[str, torch.Tensor],
        buffers: dict[str, torch.Tensor],
        xb: torch.Tensor,
        yb: torch.Tensor,
        weight: torch.Tensor,
    ) -> torch.Tensor:
        """Per-client weighted mean cross-entropy of one padded minibatch, shape (K,)."""
        masks = {name: weight for name in self.mask_names}
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            logits = self._forward(params, buffers, masks, xb)
        n_clients, width = weight.shape
        per_sample = F.cross_entropy(
            logits.float().reshape(n_clients * width, -1), yb.reshape(-1), reduction="none"
        ).view(n_clients, width)
        return (per_sample * weight).sum(dim=1) / weight.sum(dim=1).clamp_min(1)

    @torch.no_grad()
    def _sgd_step(
        self,
        params: dict[str, torch.Tensor],
        grads: Sequence[torch.Tensor],
        velocity: dict[str, torch.Tensor],
        active: torch.Tensor | None,
        sgd: LocalSGD,
    ) -> None:
        """torch.optim.SGD's update, applied to active clients only (None: every client)."""
        for (name, param), grad in zip(params.items(), grads, strict=True):
            if sgd.weight_decay:
                grad = grad.add(param, alpha=sgd.weight_decay)
            if active is None:  # in place, as torch.optim.SGD does it
                if sgd.momentum:
                    grad = velocity[name].mul_(sgd.momentum).add_(grad)
                param.add_(grad, alpha=-sgd.lr)
                continue
            keep = active.view((-1,) + (1,) * (param.dim() - 1))
            if sgd.momentum:
                buffer = torch.where(keep, sgd.momentum * velocity[name] + grad, velocity[name])
                velocity[name] = buffer
                grad = buffer
            param.copy_(torch.where(keep, param - sgd.lr * grad, param))
