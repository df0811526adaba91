"""Where sweep runs execute: this process, local worker processes, or a Ray cluster.

Every backend takes :class:`Task` objects and reports an :class:`Outcome` per task through
a callback as soon as the task ends, so the index is written after every run. A failed run
is an outcome (with its error), never an exception that stops the sweep.

Ray (``pip install netfl[ray]``) is imported only when the Ray backend is used. Ray tasks
simulate into a temporary folder on the worker node and return the run directory's files,
which the driver writes into the sweep directory, so a cluster needs no shared file system
(dataset files given by ``learning.data_root`` must exist on every node).
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netfl.errors import Diverged, NetflError
from netfl.rundir import prepare_run_dir, write_bytes
from netfl.sweep.gpu import wants_gpu

OnDone = Callable[["Outcome"], None]


@dataclass(frozen=True)
class Task:
    """One run to execute: its id, resolved scenario and run directory."""

    run_id: str
    scenario_data: dict[str, Any]
    run_dir: str

    @property
    def wants_gpu(self) -> str:
        """``"required"`` (device cuda), ``"preferred"`` (auto) or ``"no"`` (cpu, no learning)."""
        return wants_gpu(self.scenario_data)


@dataclass(frozen=True)
class Outcome:
    run_id: str
    status: str
    error: str
    wall_time_s: float


def execute(task: Task, run_dir: str | None = None) -> Outcome:
    """Run one task into ``run_dir`` (default: the task's).

    A failed run is returned as an outcome with its error, a diverged one with status
    ``diverged`` and its round and cause; only Ctrl-C propagates (the run directory then
    says ``interrupted``).
    """
    from netfl.scenario import scenario_from_data
    from netfl.simulation import simulate

    start = time.perf_counter()
    status, error = "failed", ""
    try:
        scenario = scenario_from_data(task.scenario_data, source=f"run {task.run_id}")
        simulate(scenario, Path(run_dir or task.run_dir), force=True)
        status = "completed"
    except Diverged as exc:  # a result, not a failure: running it again diverges again
        status, error = "diverged", f"{exc.round}: {exc.cause}"
    except Exception as exc:  # recorded in the index; the sweep goes on
        error = f"{type(exc).__name__}: {exc}"
    return Outcome(task.run_id, status, error, time.perf_counter() - start)


# -- local ---------------------------------------------------------------------------------


def _limit_threads(threads: int) -> None:
    """Worker initializer: share the CPU cores among the workers (read when torch loads)."""
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(threads)


def run_local(tasks: Iterable[Task], jobs: int, on_done: OnDone) -> None:
    """Run in this process (``jobs == 1``) or in ``jobs`` spawned worker processes."""
    tasks = list(tasks)
    if jobs <= 1:
        for task in tasks:
            on_done(execute(task))
        return
    threads = max(1, (os.cpu_count() or 1) // jobs)
    context = multiprocessing.get_context("spawn")  # fork is unsafe once torch has threads
    with ProcessPoolExecutor(
        jobs, mp_context=context, initializer=_limit_threads, initargs=(threads,)
    ) as pool:
        pending: dict[Future[Outcome], Task] = {pool.submit(execute, t): t for t in tasks}
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    task = pending.pop(future)
                    on_done(_result(future, task))
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def _result(future: Future[Outcome], task: Task) -> Outcome:
    try:
        return future.result()
    except Exception as exc:  # the worker process itself died
        return Outcome(task.run_id, "failed", f"worker died: {type(exc).__name__}: {exc}", 0.0)


# -- Ray -----------------------------------------------------------------------------------


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise NetflError(
            "the Ray backend needs Ray: pip install 'netfl[ray]' (or use --backend local)"
        ) from None
    return ray


def ray_resources(wants_gpu: str, cluster_gpus: float, gpu_fraction: float) -> dict[str, float]:
    """Resources one run requests: a CPU, plus ``gpu_fraction`` of a GPU when it trains on one.

    ``learning.device: cuda`` on a cluster without GPUs is an error (the task would wait
    forever); ``auto`` takes a GPU fraction only where the cluster has GPUs.
    """
    if wants_gpu == "required" and cluster_gpus <= 0:
        raise NetflError("learning.device is cuda, but the Ray cluster has no GPUs")
    use_gpu = wants_gpu == "required" or (wants_gpu == "preferred" and cluster_gpus > 0)
    return {"num_cpus": 1.0, "num_gpus": gpu_fraction if use_gpu else 0.0}


def execute_collect(task: Task) -> tuple[Outcome, dict[str, bytes]]:
    """Ray task body: run into a temporary folder and return the run directory's files
    (paths relative to it, subfolders such as ``checkpoint/`` included)."""
    folder = Path(tempfile.mkdtemp(prefix=f"netfl-{task.run_id}-"))
    try:
        outcome = execute(task, str(folder / "run"))
        run = folder / "run"
        files = {
            p.relative_to(run).as_posix(): p.read_bytes() for p in run.rglob("*") if p.is_file()
        }
        return outcome, files
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def write_files(run_dir: Path, files: dict[str, bytes]) -> None:
    """Write what :func:`execute_collect` returned into ``run_dir``."""
    prepare_run_dir(run_dir, force=True)
    for name, data in files.items():
        path = run_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(path, data)


def connect_ray(ray: Any, address: str | None) -> None:
    """``ray.init(address)``; a cluster that cannot be reached is bad input, one line."""
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        reason = " ".join(str(exc).split())[:300]
        where = f"--address {address}" if address else "Ray"
        raise NetflError(
            f"{where}: cannot connect to a Ray cluster ({reason}); start one with"
            " `ray start --head`, give its address, or leave --address out to start one here"
        ) from None


def run_ray(
    tasks: Iterable[Task], on_done: OnDone, address: str | None, gpu_fraction: float
) -> None:
    """Run on Ray: an existing ``ray.init`` in this process, else ``ray.init(address)``
    (not at all when there is nothing to run). No cluster at ``address`` is bad input
    (:class:`NetflError` naming ``--address``)."""
    tasks = list(tasks)
    if not tasks:
        return
    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        connect_ray(ray, address)
    try:
        gpus = float(ray.cluster_resources().get("GPU", 0.0))
        remote = ray.remote(execute_collect)
        pending = {}
        for task in tasks:
            options = ray_resources(task.wants_gpu, gpus, gpu_fraction)
            pending[remote.options(**options).remote(task)] = task
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                task = pending.pop(done[0])
                try:
                    outcome, files = ray.get(done[0])
                except Exception as exc:  # the task or its worker died
                    outcome = Outcome(task.run_id, "failed", f"{type(exc).__name__}: {exc}", 0.0)
                    files = {}
                if files:
                    write_files(Path(task.run_dir), files)
                on_done(outcome)
        except KeyboardInterrupt:
            for ref in pending:
                ray.cancel(ref)
            raise
    finally:
        if started:
            ray.shutdown()
