"""Local-training throughput: client-epochs per second, sequential vs batched backends.

Synthetic tensors of each dataset's shape (no dataset files needed), one round of local
SGD for K clients of ``n`` samples each, timed after a warm-up round. FLOPs are counted
with ``torch.utils.flop_counter`` on one minibatch (forward + backward) of the plain
model; on a GPU the achieved rate is also given as a fraction of the device's peak.

Backends:

- ``sequential``: the reference, one ``nn.Module`` + ``torch.optim.SGD`` per client;
- ``batched``: what ``learning.backend: batched`` runs (on CPU: the dense path for
  Linear/ReLU stacks, the sequential loop for models with convolutions, vmap otherwise;
  see netfl/learning/learner.py's make_trainer);
- ``dense``: the dense path (netfl/learning/dense.py), Linear/ReLU stacks only;
- ``batched-vmap``: the vectorised torch.func path forced, also for convolutions on CPU;
- ``batched-graph``: the vectorised path with the chunk's step captured as a CUDA graph
  and replayed (``learning.cuda_graphs``, the default on a GPU; on CPU the same static
  step runs without a graph, which shows its cost there).

``us/client-step`` is the round's time over its client-steps (K x steps of one client).
``--bf16`` applies bf16 autocast to the batched backends (on CPU, CPU autocast). The
``% of peak`` column compares with the dense peak of the card named in the first line
(:data:`PEAK_TFLOPS`): bf16 with ``--bf16``, else plain fp32 (convolutions may run in
TF32 on tensor cores, torch's default for cuDNN, so fp32 rows can exceed 100%).

Usage::

    python -m benchmarks.bench_training                      # CPU table (markdown)
    python -m benchmarks.bench_training --device cuda --bf16 # GPU, bf16 autocast
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch.nn import functional as F
from torch.utils.flop_counter import FlopCounterMode

from netfl.config.learning import LearningConfig
from netfl.learning.batched import BatchedTrainer
from netfl.learning.capture import cuda_graph, no_graph
from netfl.learning.dense import DenseTrainer
from netfl.learning.learner import make_trainer
from netfl.learning.models import (
    digits_mlp,
    fedcs_cifar_cnn,
    logistic_regression,
    mlp_64_30,
    rbcsf_fmnist_cnn,
)
from netfl.learning.trainer import LocalSGD, SequentialTrainer, Trainer

#: name -> (builder, input shape, samples per client, batch size)
MODELS = {
    "logistic_regression": (logistic_regression, (60,), 100, 10),
    "digits_mlp": (digits_mlp, (1, 8, 8), 100, 10),
    "mlp_64_30": (mlp_64_30, (1, 28, 28), 100, 10),
    "rbcsf_fmnist_cnn": (rbcsf_fmnist_cnn, (1, 28, 28), 100, 50),
    "fedcs_cifar_cnn": (fedcs_cifar_cnn, (3, 32, 32), 50, 50),
}
#: Dense peak TFLOP/s by device-name fragment, first match: (bf16 tensor, fp32 non-tensor).
#: NVIDIA's datasheets: H100 SXM 989 / 67, H100 PCIe 756 / 51, H100 NVL 835 / 60, H200 (SXM)
#: 989 / 67, A100 312 / 19.5 (the bf16 figures without sparsity).
PEAK_TFLOPS = {
    "H100 PCIe": (756.0, 51.0),
    "H100 NVL": (835.0, 60.0),
    "H100": (989.0, 67.0),
    "H200": (989.0, 67.0),
    "A100": (312.0, 19.5),
}


@dataclass
class Row:
    model: str
    backend: str
    clients: int
    samples_per_client: int
    batch_size: int
    seconds: float
    us_per_client_step: float
    client_epochs_per_s: float
    gflops_per_s: float
    peak_fraction: float | None


def flops_per_sample(model: torch.nn.Module, shape: tuple[int, ...], batch: int, device) -> float:
    """Forward + backward FLOPs of one minibatch, per sample."""
    x = torch.randn(batch, *shape, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    counter = FlopCounterMode(display=False)
    with counter:
        F.cross_entropy(model(x), y).backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops() / batch


def trainer_for(backend: str, model, device, chunk: int | None, bf16: bool) -> Trainer:
    if backend == "sequential":
        return SequentialTrainer(model, device)
    if backend == "dense":
        return DenseTrainer(model, device)
    if backend == "batched":  # what learning.backend: batched runs on this device
        config = LearningConfig(backend="batched", max_parallel_clients=chunk, bf16=bf16)
        return make_trainer(config, model, device)
    capture = None
    if backend == "batched-graph":
        capture = cuda_graph if device.type == "cuda" else no_graph
    return BatchedTrainer(model, device, chunk, bf16, vectorize_convolutions=True, capture=capture)


def time_backends(trainers: dict[str, Trainer], model, shape, k, n, sgd, device, repeats, clock):
    """Best time of one round per backend (``clock``: time.perf_counter for wall seconds,
    time.process_time for this process's CPU seconds, steadier on a shared machine);
    repeats interleave the backends, so a change in machine load hits them alike."""
    x = torch.randn(k * n, *shape, device=device)
    y = torch.randint(0, 10, (k * n,), device=device)
    indices = [torch.arange(i * n, (i + 1) * n) for i in range(k)]  # host, as the learner
    state = {name: v.clone() for name, v in model.state_dict().items()}
    seeds = list(range(k))
    best = dict.fromkeys(trainers, float("inf"))
    for trainer in trainers.values():
        trainer.train(state, x, y, indices, seeds, sgd)  # warm-up
    for _ in range(repeats):
        for name, trainer in trainers.items():
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = clock()
            trainer.train(state, x, y, indices, seeds, sgd)
            if device.type == "cuda":
                torch.cuda.synchronize()
            best[name] = min(best[name], clock() - start)
    return best


def peak(device, bf16: bool) -> float | None:
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    for fragment, (bf16_peak, fp32_peak) in PEAK_TFLOPS.items():
        if fragment in name:
            return bf16_peak if bf16 else fp32_peak
    return None


def run(args: argparse.Namespace) -> list[Row]:
    device = torch.device(args.device)
    rows = []
    for name in args.models:
        build, shape, n, batch = MODELS[name]
        n = args.samples or n
        torch.manual_seed(0)
        model = build(shape, 10).to(device)
        per_sample = flops_per_sample(model, shape, batch, device)
        sgd = LocalSGD(lr=0.01, epochs=args.epochs, batch_size=batch)
        for k in args.clients:
            trainers = {
                backend: trainer_for(
                    backend,
                    model,
                    device,
                    None if backend == "sequential" else args.chunk,
                    args.bf16,
                )
                for backend in args.backends
            }
            clock = time.process_time if args.cpu_time else time.perf_counter
            times = time_backends(trainers, model, shape, k, n, sgd, device, args.repeats, clock)
            for backend, seconds in times.items():
                gflops = per_sample * k * n * args.epochs / seconds / 1e9
                client_steps = k * int(sgd.steps_taken(np.array([n]))[0])
                # The sequential reference has no bf16 autocast: compare it with fp32 peak.
                top = peak(device, args.bf16 and backend != "sequential")
                fraction = None if top is None else gflops / 1e3 / top
                rows.append(
                    Row(
                        name,
                        backend,
                        k,
                        n,
                        batch,
                        seconds,
                        seconds / client_steps * 1e6,
                        k * args.epochs / seconds,
                        gflops,
                        fraction,
                    )
                )
                print(json.dumps(asdict(rows[-1])), flush=True)
    return rows


def markdown(rows: list[Row]) -> str:
    lines = [
        "| model | clients | n/client | batch | backend | s/round | us/client-step |"
        " client-epochs/s | GFLOP/s | % of peak |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        fraction = "-" if r.peak_fraction is None else f"{100 * r.peak_fraction:.1f}"
        lines.append(
            f"| {r.model} | {r.clients} | {r.samples_per_client} | {r.batch_size} | {r.backend}"
            f" | {r.seconds:.3f} | {r.us_per_client_step:.1f} | {r.client_epochs_per_s:.1f}"
            f" | {r.gflops_per_s:.2f} |"
            f" {fraction} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--clients", nargs="+", type=int, default=[10, 50, 100])
    parser.add_argument(
        "--backends",
        nargs="+",
        default=["sequential", "batched", "batched-vmap"],
        choices=["sequential", "batched", "dense", "batched-vmap", "batched-graph"],
    )
    parser.add_argument("--samples", type=int, default=None, help="samples per client")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=None, help="max_parallel_clients")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast (cuda)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument(
        "--cpu-time", action="store_true", help="CPU seconds of this process instead of wall"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    hardware = (
        torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads"
    )
    print(f"# torch {torch.__version__}, {hardware}", flush=True)
    print(markdown(run(args)))


if __name__ == "__main__":
    main()
