"""Runs of a local sweep that share one GPU: do N of them fit its memory?

``netfl sweep --jobs N`` runs N worker processes. Runs that train on CUDA
(``learning.device: cuda``, or ``auto`` on a machine with a GPU) then share the one GPU:
each process holds its own CUDA context and allocations, and the GPU runs their kernels
in turn (time-slicing; no MPS needed). Their memory is what limits N. Before the first
run, a spawned probe process (so that the sweep's own process takes no GPU memory) asks
torch for the GPU's free memory and estimates what one run of each distinct training
set-up needs (:mod:`netfl.learning.gpu_memory`, the figure ``netfl validate`` states); N
runs that cannot fit are refused, naming ``--jobs`` and how many fit.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from netfl.errors import NetflError


def wants_gpu(data: dict[str, Any]) -> str:
    """``"required"`` (device cuda), ``"preferred"`` (auto) or ``"no"`` (cpu, no learning)."""
    learning = data.get("learning")
    if not learning:
        return "no"
    return {"cuda": "required", "auto": "preferred"}.get(learning.get("device", "auto"), "no")


@dataclass(frozen=True)
class GpuRoom:
    """What the probe found: the GPU (None: no CUDA), its free memory, and the estimated
    bytes of one run of each distinct set-up."""

    name: str | None
    free_bytes: int
    run_bytes: list[int]


def probe(set_ups: list[dict[str, Any]]) -> GpuRoom:
    """In a worker process: the GPU's free memory and each set-up's estimate."""
    import torch

    from netfl.scenario import scenario_from_data
    from netfl.validation import scenario_gpu_memory

    if not torch.cuda.is_available():
        return GpuRoom(None, 0, [])
    free, _ = torch.cuda.mem_get_info()
    needs = [scenario_gpu_memory(scenario_from_data(d)).total_bytes for d in set_ups]
    return GpuRoom(torch.cuda.get_device_name(), int(free), needs)


def _probe_in_a_process(set_ups: list[dict[str, Any]]) -> GpuRoom:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        return pool.submit(probe, set_ups).result()


def has_nvidia_driver() -> bool:
    """Whether this machine has an NVIDIA driver loaded (checked without importing torch)."""
    return os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidiactl")


def check_jobs(runs: list[dict[str, Any]], jobs: int) -> None:
    """Refuse ``jobs`` runs at once on one GPU when they cannot fit its memory, naming
    ``--jobs``, and runs that ask for cuda on a machine without CUDA, naming
    ``learning.device`` (raise NetflError). Probes only where a run asks for cuda, or for
    auto with ``jobs > 1`` on a machine with an NVIDIA driver."""
    wants = [(data, wants_gpu(data)) for data in runs]
    driver = any(want == "preferred" for _, want in wants) and has_nvidia_driver()
    gpu_runs = [d for d, want in wants if want == "required" or (want == "preferred" and driver)]
    required = any(want == "required" for _, want in wants)
    if not required and (jobs <= 1 or not gpu_runs):
        return
    # One run at a time needs only whether CUDA exists: no memory estimates (which load
    # each set-up's dataset and model).
    room = _probe_in_a_process(_distinct(gpu_runs) if jobs > 1 else [])
    if room.name is None:
        if required:
            raise NetflError(
                "learning.device is cuda, but torch sees no CUDA device on this machine"
                " (a CPU-only torch build, or no GPU); set learning.device to auto or cpu"
            )
        return
    if jobs <= 1:
        return
    problem = jobs_problem(min(jobs, len(gpu_runs)), max(room.run_bytes), room)
    if problem:
        raise NetflError(problem)


def jobs_problem(jobs: int, run_bytes: int, room: GpuRoom) -> str | None:
    """Why ``jobs`` runs of ``run_bytes`` each cannot share the GPU of ``room`` (None:
    they fit)."""
    fit = room.free_bytes // max(run_bytes, 1)
    if jobs <= fit:
        return None
    advice = f"use --jobs {fit} or fewer" if fit else "not even one run fits"
    return (
        f"--jobs {jobs}: {jobs} runs training on one GPU ({room.name}) need about"
        f" {jobs * run_bytes / 2**30:.1f} GiB ({run_bytes / 2**30:.2f} GiB each, as"
        f" `netfl validate --print` details), but it has {room.free_bytes / 2**30:.1f} GiB"
        f" free: {advice} (learning.max_parallel_clients or learning.bf16 make a run need"
        " less)"
    )


def _distinct(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One run per training set-up (runs that differ only in seed or name need the same)."""
    found: dict[str, dict[str, Any]] = {}
    for data in runs:
        key = json.dumps(
            {k: v for k, v in data.items() if k not in ("seed", "name")},
            sort_keys=True,
            default=str,
        )
        found.setdefault(key, data)
    return list(found.values())
