"""One batched local-SGD step on static tensors, captured once as a CUDA graph and replayed.

Within a chunk of the batched trainer every tensor of a step has a static shape: K
clients, a minibatch width B (the plans are padded), the model's parameters. So the step
(gather the minibatch, forward under ``vmap``, ``autograd.grad``, FedProx's term, the
masked SGD update, the loss) can be recorded once with ``torch.cuda.CUDAGraph`` and
replayed for every step of every round with that shape: one launch per step instead of
the step's dozens of kernels and the Python of ``vmap``, ``functional_call`` and autograd
between them, and no host synchronisation inside a round.

For that, everything the step reads or writes lives at a fixed address for as long as the
graph does (:class:`StaticStep`): the stacked parameters, buffers and momentum, the
round's plan in buffers of ``capacity`` steps, the learning rate as a device scalar (it
decays between rounds), and a step counter on the device that the step itself advances.
A round copies its plan and the global model in, replays ``n_steps`` times, and copies the
states and losses out. The training data are captured by address too; the learner keeps
them on the device for the whole run, and a new tensor (or a longer plan, a new K or B)
builds and captures a new step.

The update is ``torch.optim.SGD``'s (weight decay, then momentum with zero dampening),
masked per client as in the eager loop; the learning rate is a tensor, so the step computes
``w - lr * g`` where the eager unmasked step computes ``w.add_(g, alpha=-lr)``: equal up to
rounding, not bit for bit (CUDA results are checked against the sequential trainer within
tolerance, never against bits).

``capture`` is the recorder: :func:`cuda_graph` on a GPU, :func:`no_graph` (the body run
as it is) on the CPU, where the tests check the static step's numbers against the
sequential reference. A step that cannot be captured (a host synchronisation or a
host-to-device copy inside the model's forward, data-dependent shapes) raises
:class:`CaptureError` naming why, and the trainer falls back to the eager loop, saying so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

Body = Callable[[], None]
Recorder = Callable[[Body], Body]

#: Eager runs of the step on a side stream before capture (cuDNN and cuBLAS pick their
#: algorithms and allocate workspaces there, as torch's CUDA-graph notes ask).
WARMUP_STEPS = 3


class CaptureError(RuntimeError):
    """The step could not be captured (the message says why); train eagerly instead."""


def no_graph(body: Body) -> Body:
    """The body itself: the static step without a graph (CPU, tests)."""
    return body


def cuda_graph(body: Body) -> Body:
    """Warm ``body`` up on a side stream, capture it into a CUDA graph, return its replay.

    Raises
    ------
    CaptureError
        When the warm-up synchronises with the host or the capture fails.
    """
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    try:
        with torch.cuda.stream(stream):
            torch.cuda.set_sync_debug_mode("error")  # a host sync would break the graph
            try:
                for _ in range(WARMUP_STEPS):
                    body()
            finally:
                torch.cuda.set_sync_debug_mode("default")
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            body()
    except Exception as exc:
        torch.cuda.synchronize()
        raise CaptureError(_reason(exc)) from exc
    return graph.replay


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}"


@torch.no_grad()
def masked_sgd_update(
    param: torch.Tensor,
    grad: torch.Tensor,
    velocity: torch.Tensor | None,
    active: torch.Tensor,
    lr: float | torch.Tensor,
    momentum: float,
    weight_decay: float,
) -> None:
    """torch.optim.SGD's update of one stacked parameter (clients first), for the clients
    ``active`` (K,) only; ``velocity`` (the momentum buffer, None without momentum) and
    ``param`` in place, so that a captured step keeps their addresses."""
    keep = active.view((-1,) + (1,) * (param.dim() - 1))
    if weight_decay:
        grad = grad.add(param, alpha=weight_decay)
    if velocity is not None:
        velocity.copy_(torch.where(keep, velocity * momentum + grad, velocity))
        grad = velocity
    param.copy_(torch.where(keep, param - lr * grad, param))


class StepModel(Protocol):
    """What the static step needs from the batched trainer."""

    param_names: list[str]

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
        """Per-client weighted mean loss of one padded minibatch, shape (K,)."""


@dataclass(frozen=True)
class StepShape:
    """What a captured step is specialised to (a new value builds a new step)."""

    n_clients: int
    width: int
    momentum: float
    weight_decay: float
    prox_mu: float
    data: tuple[int, int]
    """Addresses of the training inputs and labels."""


class StaticStep:
    """The batched step of :class:`~netfl.learning.batched.BatchedTrainer` on static
    tensors, recorded by ``capture`` (see the module docstring)."""

    def __init__(
        self,
        model: StepModel,
        template: Mapping[str, torch.Tensor],
        x: torch.Tensor,
        y: torch.Tensor,
        shape: StepShape,
        capacity: int,
        capture: Recorder,
    ) -> None:
        device = x.device
        k, width, cap = shape.n_clients, shape.width, capacity
        self.capacity = capacity
        self.model, self.shape, self.x, self.y = model, shape, x, y
        names = model.param_names

        def stacked(name: str) -> torch.Tensor:
            value = template[name].detach().to(device)
            return value.unsqueeze(0).repeat((k,) + (1,) * value.dim()).contiguous()

        self.params = {n: stacked(n).requires_grad_(True) for n in names}
        self.buffers = {n: stacked(n) for n in template if n not in self.params}
        self.velocity = {n: torch.zeros_like(p) for n, p in self.params.items()}
        self.anchor = {n: template[n].detach().to(device).clone() for n in names}
        self.rows = torch.zeros(cap, k, width, dtype=torch.int64, device=device)
        self.weight = torch.zeros(cap, k, width, device=device)
        self.active = torch.zeros(cap, k, dtype=torch.bool, device=device)
        self.keys = torch.zeros(k, dtype=torch.int64, device=device)
        self.lr = torch.zeros((), device=device)
        self.counter = torch.zeros(1, dtype=torch.int64, device=device)
        self.losses = torch.zeros(cap, k, device=device)
        self.replay = capture(self._body)

    def _body(self) -> None:
        """One step: the plan's row ``counter``, then ``counter += 1``."""
        at = self.counter
        rows = self.rows.index_select(0, at).squeeze(0)
        weight = self.weight.index_select(0, at).squeeze(0)
        active = self.active.index_select(0, at).squeeze(0)
        step = at.expand(self.shape.n_clients)
        with torch.enable_grad():  # also when replayed without a graph under no_grad
            loss = self.model.loss(
                self.params, self.buffers, self.x[rows], self.y[rows], weight, self.keys, step
            )
            grads = torch.autograd.grad(loss.sum(), list(self.params.values()))
        self._update(grads, active)
        with torch.no_grad():
            self.losses.index_copy_(0, at, loss.detach().unsqueeze(0))
            self.counter.add_(1)

    @torch.no_grad()
    def _update(self, grads: Sequence[torch.Tensor], active: torch.Tensor) -> None:
        """torch.optim.SGD's update (FedProx's term first), for active clients only."""
        shape = self.shape
        for (name, param), grad in zip(self.params.items(), grads, strict=True):
            if shape.prox_mu:
                grad = grad.add(param - self.anchor[name], alpha=shape.prox_mu)
            velocity = self.velocity[name] if shape.momentum else None
            masked_sgd_update(
                param, grad, velocity, active, self.lr, shape.momentum, shape.weight_decay
            )

    @torch.no_grad()
    def run(
        self,
        global_state: Mapping[str, torch.Tensor],
        rows: torch.Tensor,
        weight: torch.Tensor,
        active: torch.Tensor,
        keys: torch.Tensor,
        lr: float,
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Train one chunk from ``global_state`` along its plan (host tensors: ``rows``,
        ``weight`` (S, K, B), ``active`` (S, K), ``keys`` (K,)); return the clients'
        states and the (S, K) losses, on the device, without waiting for them."""
        n_steps = int(rows.shape[0])
        for name, param in self.params.items():
            param.copy_(global_state[name].unsqueeze(0).expand_as(param))
            self.anchor[name].copy_(global_state[name])
        for name, buffer in self.buffers.items():
            buffer.copy_(global_state[name].unsqueeze(0).expand_as(buffer))
        for velocity in self.velocity.values():
            velocity.zero_()
        for static, plan in ((self.rows, rows), (self.weight, weight), (self.active, active)):
            static[:n_steps].copy_(_pinned(plan), non_blocking=True)
        self.keys.copy_(_pinned(keys), non_blocking=True)
        self.lr.fill_(lr)
        self.counter.zero_()
        for _ in range(n_steps):
            self.replay()
        state = {n: self.params[n].detach().clone() for n in self.params}
        state.update({n: b.clone() for n, b in self.buffers.items()})
        return state, self.losses[:n_steps].clone()


def _pinned(tensor: torch.Tensor) -> torch.Tensor:
    """A host tensor in page-locked memory, so that a non-blocking copy to the GPU does
    not wait for the stream (from pageable memory it would)."""
    if tensor.device.type == "cpu" and torch.cuda.is_available():
        return tensor.pin_memory()
    return tensor
