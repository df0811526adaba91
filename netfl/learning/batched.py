"""Batched local SGD: all of a round's clients train together in one vectorised loop.

The K clients' parameters are stacked on a leading axis and the model runs under
``torch.func.vmap(functional_call(...))``: one step of the loop is one minibatch step of
every client. Clients have different data sizes, so their minibatch plans are padded to
a common shape and masked:

- a padded sample has weight 0, and a client's loss is the weighted mean over its real
  samples, so its gradient is the one of its real minibatch;
- batch norm computes its statistics over the real samples only
  (:class:`~netfl.learning.masked_norm.MaskedBatchNorm` replaces every ``nn.BatchNorm*``;
  each client keeps its own running statistics);
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

Dropout layers draw their masks from each client's seed (:mod:`netfl.learning.dropout`),
so models with dropout train batched too, with the sequential trainer's masks; other
random operations draw from torch's generator (``vmap`` with ``randomness="different"``).

On CPU, vmap turns K clients' convolutions into one grouped convolution, which oneDNN
runs slower than K separate ones; there a model with convolutions trains through the
sequential loop unless ``vectorize_convolutions=True`` (docs/benchmarks.md, ## Training).

On a GPU (``cuda_graphs``), a chunk's step is captured once as a CUDA graph and replayed
(:mod:`netfl.learning.capture`); a step that cannot be captured trains through the eager
loop below, with a warning, and :attr:`BatchedTrainer.path` says which ran. bf16 autocast
(``bf16``) covers the forward pass and with it the backward's matrix products; parameters,
their updates and batch-norm statistics stay fp32. tests/test_gpu.py checks the CUDA paths
against the sequential trainer; ``benchmarks/gpu_check.sh`` times them.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, vmap
from torch.nn import functional as F

from netfl.errors import ScenarioWarning
from netfl.learning.capture import (
    CaptureError,
    Recorder,
    StaticStep,
    StepShape,
    masked_sgd_update,
)
from netfl.learning.dropout import KEY, STEP, client_key, with_client_dropout
from netfl.learning.masked_norm import MASK, MaskedBatchNorm, with_masked_batch_norm
from netfl.learning.trainer import (
    LocalSGD,
    SequentialTrainer,
    TrainOutput,
    loss_summaries,
    padded_visits,
)

__all__ = ["BatchPlan", "BatchedTrainer", "MaskedBatchNorm", "batch_plan"]

#: Captured steps kept per trainer (one per chunk shape; a run has one or two).
MAX_CAPTURED = 4


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
    rows, taken, _ = padded_visits(client_indices, seeds, sgd, steps)
    weight = torch.from_numpy(taken.astype(np.float32))
    return BatchPlan(torch.from_numpy(rows), weight, weight.sum(dim=2) > 0)


class BatchedTrainer:
    """Vectorised backend (see the module docstring); same results as SequentialTrainer.

    ``capture``: record each chunk's step and replay it (:mod:`netfl.learning.capture`;
    None: eager). The learner passes :func:`~netfl.learning.capture.cuda_graph` on a GPU
    with ``learning.cuda_graphs``.
    """

    def __init__(
        self,
        model: nn.Module,
        device: torch.device,
        max_parallel_clients: int | None = None,
        bf16: bool = False,
        vectorize_convolutions: bool | None = None,
        capture: Recorder | None = None,
    ) -> None:
        self.device = device
        self.module = with_masked_batch_norm(with_client_dropout(model)).to(device).train()
        self.param_names = [name for name, _ in self.module.named_parameters()]
        leaf = {name: name.rsplit(".", 1)[-1] for name, _ in self.module.named_buffers()}
        self.mask_names = [name for name, last in leaf.items() if last == MASK]
        self.key_names = [name for name, last in leaf.items() if last == KEY]
        self.step_names = [name for name, last in leaf.items() if last == STEP]
        self.max_parallel_clients = max_parallel_clients
        self.bf16 = bf16
        self._forward = vmap(self._one_client, randomness="different")
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
        self.capture = capture
        self._captured: dict[StepShape, StaticStep] = {}
        #: Why the step could not be captured (None: captured, or not asked to).
        self.capture_refused: str | None = None

    @property
    def path(self) -> str:
        """Which loop trains: ``batched, sequential loop`` (CPU convolutions),
        ``batched, captured``, ``batched, eager`` or ``batched, eager (capture refused:
        ...)``."""
        if self.fallback is not None:
            return "batched, sequential loop"
        if self.capture_refused is not None:
            return f"batched, eager (capture refused: {self.capture_refused})"
        return "batched, captured" if self.capture is not None else "batched, eager"

    def _one_client(
        self,
        params: dict[str, torch.Tensor],
        buffers: dict[str, torch.Tensor],
        inputs: dict[str, torch.Tensor],
        x: torch.Tensor,
    ) -> torch.Tensor:
        return functional_call(self.module, (params, buffers, inputs), (x,))

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
            keys = torch.tensor([client_key(seed) for seed in seeds[part]], dtype=torch.int64)
            state, loss = self._train_chunk(global_state, x, y, plan, keys, sgd)
            states.append(state)
            losses.append(loss)  # to the host after the last chunk: chunks queue up on a GPU
            actives.append(plan.active)
        stacked = {k: torch.cat([s[k] for s in states]) for k in global_state}
        summaries = [
            loss_summaries(loss, active.cpu().numpy())
            for loss, active in zip(losses, actives, strict=True)
        ]
        means = np.concatenate([mean for mean, _ in summaries])
        stds = np.concatenate([std for _, std in summaries])
        return stacked, means, stds

    def _train_chunk(
        self,
        global_state: Mapping[str, torch.Tensor],
        x: torch.Tensor,
        y: torch.Tensor,
        plan: BatchPlan,
        keys: torch.Tensor,
        sgd: LocalSGD,
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        step = self._static_step(global_state, x, y, plan, sgd) if plan.n_steps else None
        if step is not None:
            return step.run(global_state, plan.rows, plan.weight, plan.active, keys, sgd.lr)
        return self._train_eager(global_state, x, y, plan, keys, sgd)

    def _static_step(
        self,
        global_state: Mapping[str, torch.Tensor],
        x: torch.Tensor,
        y: torch.Tensor,
        plan: BatchPlan,
        sgd: LocalSGD,
    ) -> StaticStep | None:
        """The captured step for this chunk's shape (built and captured on first use), or
        None: eager (not asked for, or the capture was refused once)."""
        if self.capture is None or self.capture_refused is not None:
            return None
        _, n_clients, width = plan.rows.shape
        shape = StepShape(
            n_clients,
            width,
            sgd.momentum,
            sgd.weight_decay,
            sgd.prox_mu,
            (x.data_ptr(), y.data_ptr()),
        )
        step = self._captured.pop(shape, None)  # re-inserted last: the most recent
        if step is None or step.capacity < plan.n_steps:
            while len(self._captured) >= MAX_CAPTURED:
                del self._captured[next(iter(self._captured))]
            step = self._new_step(global_state, x, y, shape, plan.n_steps)
            if step is None:
                return None
        self._captured[shape] = step
        return step

    def _new_step(
        self,
        global_state: Mapping[str, torch.Tensor],
        x: torch.Tensor,
        y: torch.Tensor,
        shape: StepShape,
        n_steps: int,
    ) -> StaticStep | None:
        """Build and capture a step with room for ``n_steps`` (rounded up to a power of
        two, so that longer plans rarely need another); None, with a warning, if the
        capture is refused (every later chunk then trains eagerly)."""
        assert self.capture is not None
        capacity = 1 << max(n_steps - 1, 0).bit_length()
        try:
            return StaticStep(self, global_state, x, y, shape, capacity, self.capture)
        except CaptureError as exc:
            self.capture_refused = str(exc)
            self._captured.clear()
            warnings.warn(
                "learning.cuda_graphs: the training step could not be captured as a CUDA"
                f" graph ({exc}); training runs eagerly (learning.cuda_graphs: false skips"
                " the attempt)",
                ScenarioWarning,
                stacklevel=2,
            )
            return None

    def _train_eager(
        self,
        global_state: Mapping[str, torch.Tensor],
        x: torch.Tensor,
        y: torch.Tensor,
        plan: BatchPlan,
        keys: torch.Tensor,
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
        rows = _to_device(plan.rows, self.device)
        weight = _to_device(plan.weight, self.device)
        active = _to_device(plan.active, self.device)
        keys = _to_device(keys, self.device)
        counters = torch.arange(plan.n_steps, device=self.device)
        # Known on the host, so no synchronisation: steps where every client is active
        # take the plain update, the others the masked one.
        everyone = plan.active.all(dim=1).tolist()
        losses = torch.zeros(plan.n_steps, n_clients, device=self.device)
        for s in range(plan.n_steps):
            loss = self.loss(
                params,
                buffers,
                x[rows[s]],
                y[rows[s]],
                weight[s],
                keys,
                counters[s].expand(n_clients),
            )
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

    def loss(
        self,
        params: dict[str, torch.Tensor],
        buffers: dict[str, torch.Tensor],
        xb: torch.Tensor,
        yb: torch.Tensor,
        weight: torch.Tensor,
        keys: torch.Tensor,
        step: torch.Tensor,
    ) -> torch.Tensor:
        """Per-client weighted mean cross-entropy of one padded minibatch, shape (K,):
        ``weight`` (K, B) masks padded samples; ``keys`` and ``step`` (K,) are the
        clients' dropout keys and local step."""
        inputs = {name: weight for name in self.mask_names}
        inputs.update({name: keys for name in self.key_names})
        inputs.update({name: step for name in self.step_names})
        # No autocast weight cache: a captured step must recast on every replay.
        with torch.autocast(
            self.device.type, dtype=torch.bfloat16, enabled=self.bf16, cache_enabled=False
        ):
            logits = self._forward(params, buffers, inputs, xb)
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
            if active is not None:
                buffer = velocity[name] if sgd.momentum else None
                masked_sgd_update(
                    param, grad, buffer, active, sgd.lr, sgd.momentum, sgd.weight_decay
                )
                continue
            if sgd.weight_decay:  # in place, as torch.optim.SGD does it
                grad = grad.add(param, alpha=sgd.weight_decay)
            if sgd.momentum:
                grad = velocity[name].mul_(sgd.momentum).add_(grad)
            param.add_(grad, alpha=-sgd.lr)


def _to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A host tensor on ``device``; to a GPU from page-locked memory, so that the copy
    does not wait for the work queued before it (from pageable memory it would)."""
    if device.type == "cuda":
        tensor = tensor.pin_memory()
    return tensor.to(device, non_blocking=True)
