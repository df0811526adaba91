"""CPU threads of a run (issue 16 item 10): torch's and numpy BLAS's, from learning.threads."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import torch

from netfl.scenario import scenario_from_data
from netfl.selection.base import SelectionContext
from netfl.simulation import simulate
from tests.protocol_helpers import Recorder, group, scenario


class BlasProbe(Recorder):
    """Records the BLAS thread limits in force while it selects."""

    seen: ClassVar[list[int]] = []

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        from threadpoolctl import threadpool_info

        blas = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
        BlasProbe.seen.extend(blas)
        return super().select(ctx)


def test_strategies_run_with_the_blas_threads_of_learning_threads(tmp_path: Path) -> None:
    BlasProbe.seen = []
    data = scenario([group("a", 4)], selection={"name": "tests.test_threads:BlasProbe"})
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=2, user_api="blas"):  # the process allows 2
        simulate(scenario_from_data(data), tmp_path / "run")
    assert BlasProbe.seen and set(BlasProbe.seen) == {1}


def test_training_uses_learning_threads_torch_threads(tmp_path: Path) -> None:
    before = torch.get_num_threads()
    try:
        data = scenario(
            [group("a", 4, n_samples=20)],
            learning={"dataset": "digits", "model": "digits_mlp", "threads": 2, "batch_size": 10},
            fl={"rounds": 1, "clients_per_round": 2},
            selection={"name": "random"},
        )
        simulate(scenario_from_data(data), tmp_path / "run")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


class ThreadProbe(Recorder):
    """Writes its process id and torch's intra-op threads to ``log`` when it selects."""

    def __init__(self, log: str) -> None:
        super().__init__()
        self.log = log

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        with open(self.log, "a") as file:
            file.write(f"{os.getpid()} {torch.get_num_threads()}\n")
        return super().select(ctx)


def test_a_sweep_on_cpu_keeps_one_torch_thread_per_job(tmp_path: Path) -> None:
    """--jobs 2: a run trains in a worker process with one torch thread (the default
    learning.threads), however many cores the machine has (a worker's libraries are
    limited to cores / jobs threads before torch loads), so N jobs use N cores."""
    from netfl.sweep.backends import Task, run_local

    log = tmp_path / "threads.log"
    data = scenario(
        [group("a", 4, n_samples=20)],
        learning={"dataset": "digits", "model": "digits_mlp", "device": "cpu"},
        fl={"rounds": 1, "clients_per_round": 2},
        selection={"name": "tests.test_threads:ThreadProbe", "params": {"log": str(log)}},
    )
    outcomes: list = []
    run_local([Task("run", data, str(tmp_path / "run"))], 2, outcomes.append)
    assert [o.status for o in outcomes] == ["completed"], outcomes
    seen = [line.split() for line in log.read_text().splitlines()]
    assert seen and all(threads == "1" for _, threads in seen)
    assert all(int(pid) != os.getpid() for pid, _ in seen)  # in a worker
