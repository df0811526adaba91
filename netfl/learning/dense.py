"""Local SGD of small dense models at the cost of their arithmetic (the ``dense`` path).

Multinomial logistic regression and MLPs (a stack of ``nn.Linear`` layers with ReLU
between them, after an optional ``nn.Flatten``) are the models of much of the FL
literature (FedProx's Synthetic, digits, FEMNIST's MLP). Their steps are a few small
matrix products, so autograd, ``torch.optim`` and ``torch.func.vmap`` cost more than the
arithmetic. Here a round's clients train together with the forward and backward pass
written out: every layer's weights are stacked on a leading client axis, one step is a
few batched matrix products (``baddbmm``) for all clients, and the SGD update is fused
into the product that computes the weight gradient.

- **Same steps as the reference.** Each client's minibatches come from the plan of
  :func:`netfl.learning.trainer.client_plans` (same seeds, same order, the first
  ``steps[k]`` under partial work); the update is ``torch.optim.SGD``'s (FedProx's
  mu (w - w_t) and weight decay added to the gradient, then momentum without dampening);
  the loss is the minibatch's mean cross-entropy. Results equal
  :class:`~netfl.learning.trainer.SequentialTrainer`'s up to float rounding (the tests
  compare them at 1e-5).
- **No padding waste.** Clients are sorted by their number of steps, longest first, so
  the clients still training are always a prefix of the stack: a client whose plan has
  ended simply drops out of the products (a narrower view, no masked arithmetic). Only a
  short last batch of an epoch is padded (weight 0) to the common batch width.
- **Eligibility.** :func:`dense_layers` says whether a model is such a stack, and why not;
  ``learning.backend: batched`` takes this path on CPU for every eligible model, and
  ``learning.backend: dense`` asks for it (refused, naming the reason, where the model is
  not eligible).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from netfl.learning.trainer import LocalSGD, TrainOutput, loss_summaries, padded_visits

#: Memory for the inputs of a stretch of steps, gathered at once (bytes).
GATHER_BYTES = 4 * 2**20


@dataclass(frozen=True)
class DenseLayer:
    """One ``nn.Linear`` of the stack: its state-dict names and whether ReLU follows."""

    weight: str
    bias: str | None
    relu: bool


def dense_layers(model: nn.Module) -> list[DenseLayer] | str:
    """The layers of a Flatten/Linear/ReLU stack, or a sentence saying why ``model`` is not
    one (then it trains on another path).

    >>> dense_layers(nn.Sequential(nn.Flatten(), nn.Linear(4, 3), nn.ReLU()))
    [DenseLayer(weight='1.weight', bias='1.bias', relu=True)]
    >>> dense_layers(nn.Sequential(nn.Linear(4, 3), nn.Dropout(), nn.Linear(3, 2)))
    'its layer 1 is a Dropout (the dense path takes Flatten, Linear and ReLU only)'
    """
    if not isinstance(model, nn.Sequential):
        return f"it is a {type(model).__name__}, not an nn.Sequential of Linear and ReLU layers"
    layers: list[DenseLayer] = []
    for name, module in model.named_children():
        if isinstance(module, nn.Linear):
            bias = f"{name}.bias" if module.bias is not None else None
            layers.append(DenseLayer(f"{name}.weight", bias, relu=False))
        elif isinstance(module, nn.ReLU) and layers and not layers[-1].relu:
            layers[-1] = DenseLayer(layers[-1].weight, layers[-1].bias, relu=True)
        elif isinstance(module, nn.Flatten) and not layers and module.start_dim == 1:
            continue
        else:
            return (
                f"its layer {name} is a {type(module).__name__} (the dense path takes"
                " Flatten, Linear and ReLU only)"
            )
    if not layers:
        return "it has no Linear layer"
    if any(True for _ in model.buffers()):
        return "it has buffers (the dense path keeps parameters only)"
    if any(p.dtype != torch.float32 for p in model.parameters()):
        return "its parameters are not float32"
    return layers


class DenseTrainer:
    """The ``dense`` path (see the module docstring); same results as SequentialTrainer."""

    path = "dense"

    def __init__(self, model: nn.Module, device: torch.device) -> None:
        layers = dense_layers(model)
        if isinstance(layers, str):
            raise ValueError(f"the model cannot take the dense path: {layers}")
        self.layers = layers
        self.device = device
        self._inputs: torch.Tensor | None = None

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
        plan = _padded_plan(client_indices, seeds, sgd, steps)
        stack = _Stack(self.layers, global_state, len(client_indices), self.device)
        losses = self._run(stack, _Update(stack, sgd), x, y, plan)
        inverse = np.argsort(plan.order, kind="stable")
        states = stack.state(torch.as_tensor(inverse, device=self.device))
        taken = np.arange(losses.shape[0])[:, None] < plan.lengths[None, :]
        means, stds = loss_summaries(losses, taken)
        return {name: states[name] for name in global_state}, means[inverse], stds[inverse]

    def _buffer(self, columns: int) -> torch.Tensor:
        """Room for the inputs of a stretch of steps, kept between rounds (a fresh
        allocation of this size costs more page faults than the copy). The last column
        multiplies the first layer's bias: ones, or zeros if it has none."""
        rows = max(1, GATHER_BYTES // (4 * columns))
        if self._inputs is None or self._inputs.shape[1] != columns:
            self._inputs = torch.zeros(rows, columns, device=self.device)
            if self.layers[0].bias is not None:
                self._inputs[:, -1] = 1.0
        return self._inputs

    def _run(
        self, stack: _Stack, update: _Update, x: torch.Tensor, y: torch.Tensor, plan: _Plan
    ) -> torch.Tensor:
        """Train ``stack`` in place through ``plan``; return the loss of every step, (S, K)."""
        device = self.device
        n_steps, n_clients, width = plan.rows.shape
        features = x.reshape(x.shape[0], -1)
        labels = y[plan.rows.to(y.device)].to(device).unsqueeze(-1)  # (S, K, B, 1)
        scale = plan.scale.to(device).unsqueeze(-1)  # 1 / batch, 0 where padded
        log_p = torch.zeros(n_steps, n_clients, width, 1, device=device)
        buffer = self._buffer(features.shape[1] + 1)
        with torch.inference_mode():
            for first, last, k in _segments(plan.active):
                # The first k clients train from step first to last - 1.
                step = _Step(self.layers, update, k, width)
                chunk = max(1, len(buffer) // (k * width))
                for start in range(first, last, chunk):
                    end = min(start + chunk, last)
                    inputs = _gather(features, plan.rows[start:end, :k], buffer)
                    for args in zip(
                        inputs.unbind(0),
                        labels[start:end, :k].unbind(0),
                        scale[start:end, :k].unbind(0),
                        scale[start:end, :k].neg().unbind(0),
                        log_p[start:end, :k].unbind(0),
                        strict=True,
                    ):
                        step(*args)
        return log_p.squeeze(-1).mul_(scale.squeeze(-1)).sum(-1).neg_()


def _gather(features: torch.Tensor, rows: torch.Tensor, buffer: torch.Tensor) -> torch.Tensor:
    """The rows (c, k, B) of ``features`` into ``buffer`` (its last column is kept): a
    (c, k, B, in + 1) view."""
    c, k, width = rows.shape
    used = buffer[: c * k * width]
    index = rows.reshape(-1).to(features.device)
    torch.index_select(features, 0, index, out=used[:, :-1])
    return used.view(c, k, width, -1)


class _Stack:
    """Every client's parameters, stacked on a leading axis, one contiguous tensor per
    layer (small batched products run about 3x slower on strided views): the first
    layer's weight with its bias as an extra column (its inputs get a column of ones;
    without a bias, a column of zeros that stays zero), the other layers' weights
    (K, out, in) and biases (K, out, 1)."""

    def __init__(
        self,
        layers: list[DenseLayer],
        global_state: Mapping[str, torch.Tensor],
        n_clients: int,
        device: torch.device,
    ) -> None:
        self.layers = layers
        first = layers[0]
        weight = global_state[first.weight].to(device)
        bias = (
            global_state[first.bias].to(device)
            if first.bias is not None
            else torch.zeros(weight.shape[0], device=device)
        )
        #: the global value of each trained tensor: weights (out, in), biases (out, 1)
        self.anchors: list[torch.Tensor] = [torch.cat([weight, bias.unsqueeze(1)], dim=1)]
        for layer in layers[1:]:
            self.anchors.append(global_state[layer.weight].to(device))
            if layer.bias is not None:
                self.anchors.append(global_state[layer.bias].to(device).unsqueeze(1))
        self.params = [
            value.unsqueeze(0).repeat(n_clients, 1, 1).contiguous() for value in self.anchors
        ]

    def state(self, order: torch.Tensor) -> dict[str, torch.Tensor]:
        """The state dict of every client, rows in ``order``."""
        params = iter(p.index_select(0, order) for p in self.params)
        first = self.layers[0]
        merged = next(params)
        states = {first.weight: merged[:, :, :-1].contiguous()}
        if first.bias is not None:
            states[first.bias] = merged[:, :, -1].contiguous()
        for layer in self.layers[1:]:
            states[layer.weight] = next(params)
            if layer.bias is not None:
                states[layer.bias] = next(params).squeeze(-1)
        return states


class _Update:
    """torch.optim.SGD's update rule for the stacked parameters (what persists between
    steps: the velocities, the proximal anchors)."""

    def __init__(self, stack: _Stack, sgd: LocalSGD) -> None:
        self.stack = stack
        self.sgd = sgd
        mu = sgd.prox_mu
        # Without momentum: w <- w - lr (g + mu (w - w_t) + wd w)
        #                        = (1 - lr (mu + wd)) w - lr g + lr mu w_t
        self.decay = 1.0 - sgd.lr * (mu + sgd.weight_decay)
        self.extra = mu + sgd.weight_decay
        self.pull = [v * (sgd.lr * mu) for v in stack.anchors] if mu else None
        self.anchor = [v * mu for v in stack.anchors] if mu else None
        self.velocity = [torch.zeros_like(p) for p in stack.params] if sgd.momentum else None


class _Step:
    """One SGD step of the first k clients (bound to their views of the stack, so that a
    step is the tensor operations alone)."""

    def __init__(self, layers: list[DenseLayer], update: _Update, k: int, width: int) -> None:
        params = [p[:k] for p in update.stack.params]
        self.update = update
        self.ones = torch.ones(k, width, 1, device=params[0].device)
        #: per layer: (weight transposed (k, in, out), bias expanded (k, B, out) or None, relu)
        self.forward: list[tuple[torch.Tensor, torch.Tensor | None, bool]] = []
        #: per layer, last first: (index, relu, weight for the gradient below or None,
        #: [(tensor index, takes the inputs (else ones))])
        backward: list[tuple[int, bool, torch.Tensor | None, list[tuple[int, bool]]]] = []
        first = params[0]
        self.forward.append((first.transpose(1, 2), None, layers[0].relu))
        backward.append((0, layers[0].relu, None, [(0, True)]))
        position = 1
        for index, layer in enumerate(layers[1:], start=1):
            weight = params[position]
            targets = [(position, True)]
            bias = None
            if layer.bias is not None:
                bias = params[position + 1].squeeze(-1).unsqueeze(1).expand(k, width, -1)
                targets.append((position + 1, False))
            self.forward.append((weight.transpose(1, 2), bias, layer.relu))
            backward.append((index, layer.relu, weight, targets))
            position += len(targets)
        self.backward = backward[::-1]
        self.params = params
        sgd = update.sgd
        self.lr, self.decay = sgd.lr, update.decay
        self.pull = update.pull
        self.plain = update.velocity is None
        if not self.plain:
            assert update.velocity is not None
            self.velocity = [v[:k] for v in update.velocity]

    def __call__(
        self,
        inputs: torch.Tensor,
        labels: torch.Tensor,
        scale: torch.Tensor,
        neg_scale: torch.Tensor,
        log_p: torch.Tensor,
    ) -> None:
        """``inputs`` (k, B, in + 1, the last column ones), ``labels`` (k, B, 1), per-sample
        loss weights and their negatives (k, B, 1); the labels' log-probabilities go to
        ``log_p``."""
        a = inputs
        outputs = [a]
        for weight_t, bias, relu in self.forward:
            a = torch.bmm(a, weight_t) if bias is None else torch.baddbmm(bias, a, weight_t)
            if relu:
                a.relu_()
            outputs.append(a)
        log_prob = torch.log_softmax(a, 2)
        torch.gather(log_prob, 2, labels, out=log_p)
        # d(mean cross-entropy)/d logits = (softmax - one-hot) / batch
        grad = log_prob.exp_().mul_(scale).scatter_add_(2, labels, neg_scale)
        for index, relu, weight, targets in self.backward:
            if relu:
                grad = torch.ops.aten.threshold_backward(grad, outputs[index + 1], 0)
            # the gradient below, with the weights before this step's update
            below = None if weight is None else torch.bmm(grad, weight)
            grad_t = grad.transpose(1, 2)
            for position, takes_inputs in targets:
                self._update(position, grad_t, outputs[index] if takes_inputs else self.ones)
            if below is not None:
                grad = below

    def _update(self, position: int, grad_t: torch.Tensor, right: torch.Tensor) -> None:
        param = self.params[position]
        if self.plain:
            param.baddbmm_(grad_t, right, beta=self.decay, alpha=-self.lr)
            if self.pull is not None:
                param.add_(self.pull[position])
            return
        update = self.update
        gradient = torch.bmm(grad_t, right)
        if update.extra:
            gradient.add_(param, alpha=update.extra)
        if update.anchor is not None:
            gradient.sub_(update.anchor[position])
        velocity = self.velocity[position]
        velocity.mul_(update.sgd.momentum).add_(gradient)
        param.add_(velocity, alpha=-self.lr)


def _segments(counts: list[int]) -> list[tuple[int, int, int]]:
    """Stretches [first, last) of steps with the same number k > 0 of clients training."""
    segments: list[tuple[int, int, int]] = []
    for s, k in enumerate(counts):
        if k == 0:
            break
        if segments and segments[-1][2] == k:
            segments[-1] = (segments[-1][0], s + 1, k)
        else:
            segments.append((s, s + 1, k))
    return segments


@dataclass(frozen=True)
class _Plan:
    """The clients' minibatches, longest plan first: ``order`` (the clients' positions in
    the call, sorted), ``lengths`` (their steps), ``rows`` (S, K, B) and per-sample loss
    weights ``scale`` (1 / batch, 0 where padded)."""

    order: np.ndarray
    lengths: np.ndarray
    rows: torch.Tensor
    scale: torch.Tensor

    @property
    def active(self) -> list[int]:
        """How many clients (a prefix of the sorted stack) take each step."""
        steps = np.arange(self.rows.shape[0])[:, None]
        return (steps < self.lengths[None, :]).sum(axis=1).tolist()


def _padded_plan(
    client_indices: Sequence[torch.Tensor],
    seeds: Sequence[int],
    sgd: LocalSGD,
    steps: Sequence[int] | None,
) -> _Plan:
    """:func:`netfl.learning.trainer.padded_visits`, the clients sorted by their number
    of steps (longest first), each sample weighted 1 / its minibatch's size."""
    rows, taken, lengths = padded_visits(client_indices, seeds, sgd, steps)
    order = np.argsort(-lengths, kind="stable")
    rows, taken = np.ascontiguousarray(rows[:, order]), taken[:, order]
    size = taken.sum(axis=2, keepdims=True)
    scale = np.ascontiguousarray(np.where(taken, 1.0 / np.maximum(size, 1), 0.0), np.float32)
    return _Plan(order, lengths[order], torch.from_numpy(rows), torch.from_numpy(scale))
