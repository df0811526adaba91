"""GPU memory one run's training needs, estimated before it runs.

``netfl validate`` states it (for ``learning.device: cuda``, and with ``--print``), so a
user knows how many runs fit on one GPU, and ``netfl sweep --jobs N`` refuses N runs that
cannot fit the GPU's free memory. The terms, in bytes:

- ``context``: the CUDA context and the libraries' workspaces (cuBLAS, cuDNN), not seen
  by torch's allocator: :data:`CONTEXT_BYTES`;
- ``data``: the training and test sets, on the device for the whole run (inputs fp32,
  labels int64);
- ``models``: the global model, the previous one (``global_update``), two for the
  aggregation rule's state (server momentum, second moments), one per model version in
  flight (asynchronous protocols), and the stacked states of the clients trained in one
  call (all of a round's, :func:`clients_per_call`);
- ``step``: one chunk's training step: the K stacked parameters, their gradients and
  momentum, and the activations the backward keeps, counted by running the batched
  trainer's loss (vmap, masked batch norm, client dropout; bf16 under CPU autocast for
  ``learning.bf16``) on two clients' minibatches on the CPU under
  ``torch.autograd.graph.saved_tensors_hooks``, times K / 2, plus the largest layer's
  output gradient and its input's (the backward's temporaries);
- ``evaluation``: the largest layer's input and output in the no-grad forward of
  ``EVAL_CHUNK`` test rows.

The allocator's cache holds more than the live tensors at the peak (fragmentation,
blocks rounded up): the allocations are multiplied by :data:`ALLOCATOR_FACTOR`.
tests/test_learning_device.py checks the step's activation count against the batched
trainer's own saved tensors (CPU); tests/test_gpu.py the whole estimate against
``torch.cuda.max_memory_allocated`` on a GPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import nn

from netfl.config import Scenario
from netfl.config.learning import LearningConfig
from netfl.learning.dropout import with_client_dropout
from netfl.learning.evaluation import EVAL_CHUNK

CONTEXT_BYTES = 768 * 2**20
"""The CUDA context with cuBLAS's and cuDNN's handles and workspaces: about 500 MiB for
the context of torch 2.x on a Hopper GPU with lazy module loading, plus workspaces (a lead,
from PyTorch's CUDA notes; tests/test_gpu.py prints the value measured on the card)."""

ALLOCATOR_FACTOR = 1.25
"""Reserved over allocated bytes at the peak (the caching allocator's rounding and
fragmentation); a lead to be checked with tests/test_gpu.py's printout."""

FP32_BYTES, LABEL_BYTES = 4, 8


@dataclass(frozen=True)
class GpuMemory:
    """The estimate's terms, in bytes (see the module docstring)."""

    context: int
    data: int
    models: int
    step: int
    evaluation: int
    clients: int
    """Clients in one chunk (K)."""
    batch_size: int
    bf16: bool

    @property
    def allocated_bytes(self) -> int:
        """What torch's allocator holds at the peak: data, models, and the larger of the
        training step and the evaluation (they do not overlap)."""
        return self.data + self.models + max(self.step, self.evaluation)

    @property
    def total_bytes(self) -> int:
        return self.context + math.ceil(ALLOCATOR_FACTOR * self.allocated_bytes)

    def describe(self) -> str:
        precision = "bf16 autocast" if self.bf16 else "fp32"
        return (
            f"{_gib(self.total_bytes)} GPU memory per run (CUDA context {_gib(self.context)},"
            f" data {_gib(self.data)}, models {_gib(self.models)}, training step"
            f" {_gib(self.step)} for {self.clients} clients x {self.batch_size} samples in"
            f" {precision}, evaluation {_gib(self.evaluation)}; allocations x"
            f" {ALLOCATOR_FACTOR} for the allocator's cache)"
        )

    def fitting(self, free_bytes: int) -> int:
        """How many such runs fit in ``free_bytes``."""
        return int(free_bytes // max(self.total_bytes, 1))


def _gib(n_bytes: float) -> str:
    if n_bytes >= 2**30:
        return f"{n_bytes / 2**30:.2f} GiB"
    return f"{n_bytes / 2**20:.1f} MiB"


def clients_per_call(scenario: Scenario) -> int:
    """Clients the learner trains in one call at most: the selection budget (synchronous
    protocols), or the clients in flight (asynchronous ones)."""
    fl = scenario.fl
    return max(fl.selection_budget, fl.concurrency_in_force if fl.is_async else 0, 1)


def estimate_gpu_memory(
    scenario: Scenario, model: nn.Module, input_shape: tuple[int, ...], sizes: tuple[int, int]
) -> GpuMemory:
    """The estimate for ``scenario``'s training of ``model`` on samples of
    ``input_shape``, ``sizes`` = (training samples, test samples)."""
    learning = scenario.learning
    assert learning is not None
    n_params = sum(p.numel() for p in model.parameters())
    state_numel = sum(t.numel() for t in model.state_dict().values())
    per_call = clients_per_call(scenario)
    chunk = 1 if learning.backend == "sequential" else per_call
    chunk = min(chunk, learning.max_parallel_clients or chunk)
    width = learning.batch_size
    sample_bytes = math.prod(input_shape) * FP32_BYTES + LABEL_BYTES
    in_flight = scenario.fl.concurrency_in_force if scenario.fl.is_async else 0
    models = FP32_BYTES * ((4 + in_flight) * state_numel + per_call * state_numel)
    saved, widest = activation_bytes(model, input_shape, width, learning)
    momentum = 1 if learning.momentum else 0
    step = chunk * (FP32_BYTES * n_params * (2 + momentum) + saved + 2 * widest * width)
    evaluation = 2 * layer_bytes_per_sample(model, input_shape) * min(EVAL_CHUNK, sizes[1])
    return GpuMemory(
        context=CONTEXT_BYTES,
        data=(sizes[0] + sizes[1]) * sample_bytes,
        models=models,
        step=step,
        evaluation=evaluation,
        clients=chunk,
        batch_size=width,
        bf16=learning.bf16,
    )


def activation_bytes(
    model: nn.Module, input_shape: tuple[int, ...], width: int, learning: LearningConfig
) -> tuple[int, int]:
    """Bytes the backward keeps for one client's minibatch of ``width`` samples, and the
    widest layer's output bytes per sample.

    Batched: the trainer's own loss (vmap, masked batch norm, client dropout, bf16
    autocast) on two clients, halved (what it keeps grows with the clients: each keeps
    its own activations and, under autocast, its own bf16 copy of the weights). Sequential:
    the plain model on one minibatch.
    """
    x = torch.randn(2, width, *input_shape)
    if learning.backend == "sequential":
        module = with_client_dropout(model).train()
        saved = count_saved(lambda: module(x[0]))
        return saved, layer_bytes_per_sample(model, input_shape)
    from netfl.learning.batched import BatchedTrainer

    trainer = BatchedTrainer(
        model, torch.device("cpu"), bf16=learning.bf16, vectorize_convolutions=True
    )
    state = model.state_dict()
    stacked = {n: v.unsqueeze(0).repeat((2,) + (1,) * v.dim()) for n, v in state.items()}
    params = {n: stacked[n].requires_grad_(True) for n in trainer.param_names}
    buffers = {n: v for n, v in stacked.items() if n not in params}
    labels = torch.zeros(2, width, dtype=torch.int64)
    counters = torch.zeros(2, dtype=torch.int64)
    weight = torch.ones(2, width)
    saved = count_saved(
        lambda: trainer.loss(params, buffers, x, labels, weight, counters, counters)
    )
    return saved // 2, layer_bytes_per_sample(model, input_shape)


def count_saved(forward: Callable[[], object]) -> int:
    """Bytes of the distinct storages autograd saves for the backward while ``forward()``
    runs."""
    seen: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        forward()
    return sum(seen.values())


def layer_bytes_per_sample(model: nn.Module, input_shape: tuple[int, ...]) -> int:
    """The largest input or output of a leaf module, in fp32 bytes per sample."""
    sizes: list[int] = [math.prod(input_shape)]

    def hook(module: nn.Module, inputs: tuple[torch.Tensor, ...], output: object) -> None:
        if isinstance(output, torch.Tensor):
            sizes.append(output[0].numel())

    handles = [m.register_forward_hook(hook) for m in _leaves(model)]
    try:
        with torch.no_grad():
            was_training = model.training
            model.eval()
            model(torch.zeros(1, *input_shape))
            model.train(was_training)
    finally:
        for handle in handles:
            handle.remove()
    return FP32_BYTES * max(sizes)


def _leaves(model: nn.Module) -> Iterator[nn.Module]:
    return (m for m in model.modules() if not list(m.children()))
