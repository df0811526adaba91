"""Running a sweep: plan (skip completed runs), execute on a backend, keep the index current."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

import pandas as pd
from rich.progress import Progress, TaskID

from netfl.errors import NetflError
from netfl.progress import pick_mode, start_bar
from netfl.recorder.sweep_index import (
    SWEEP_FILE,
    is_sweep_directory,
    new_row,
    prepare_sweep_dir,
    read_index,
    write_index,
)
from netfl.rundir import write_text
from netfl.sweep import backends, gpu
from netfl.sweep.spec import Sweep

BACKENDS = ("local", "ray")
#: Run statuses that running again would not change (a diverged run diverges again).
FINISHED = ("completed", "diverged")


@dataclass(frozen=True)
class SweepResult:
    sweep_dir: Path
    index: pd.DataFrame
    skipped: int

    @property
    def failed(self) -> pd.DataFrame:
        """The runs that did not finish (failed, interrupted, never started)."""
        return self.index[~self.index["status"].isin(FINISHED)]

    @property
    def diverged(self) -> pd.DataFrame:
        """The runs whose model or loss became non-finite (their error: round: cause)."""
        return self.index[self.index["status"] == "diverged"]


class SweepProgress:
    """A bar over runs on a terminal, one line per finished run otherwise, or nothing."""

    def __init__(self, total: int, mode: str = "auto", stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.mode = pick_mode(mode, self.stream)
        self.total, self.done, self.failed = total, 0, 0
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> SweepProgress:
        if self.mode == "bar":
            self._bar, self._task = start_bar(
                self.stream, "runs", "failed {task.fields[failed]}", self.total, failed=0
            )
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.stop()

    def update(self, outcome: backends.Outcome, label: str) -> None:
        self.done += 1
        self.failed += outcome.status != "completed"
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self.done, failed=self.failed)
        elif self.mode == "log":
            error = f": {outcome.error}" if outcome.error else ""
            print(
                f"run {self.done}/{self.total} {outcome.run_id} {outcome.status}"
                f" ({outcome.wall_time_s:.1f} s) [{label}]{error}",
                file=self.stream,
                flush=True,
            )


Row = dict[str, Any]


def _plan(sweep: Sweep, sweep_dir: Path) -> dict[str, Row]:
    """Index rows by run id for this sweep, carrying over the runs already completed."""
    rows: dict[str, Row] = {}
    for run in sweep.runs:
        if run.run_id in rows:
            raise NetflError(f"{sweep.source}: the sweep lists the same run twice ({run.label})")
        rows[run.run_id] = new_row(run.run_id, run.seed, run.label, run.overrides)
    if is_sweep_directory(sweep_dir):
        old = read_index(sweep_dir).set_index("run_id")
        for run_id, row in rows.items():
            status = _finished(sweep_dir / str(row["run_dir"])) if run_id in old.index else None
            if status is not None:
                error = old.at[run_id, "error"] if status == "diverged" else ""
                row.update(status=status, error=error, wall_time_s=old.at[run_id, "wall_time_s"])
    return rows


def _finished(run_dir: Path) -> str | None:
    """The run's status if it is finished (:data:`FINISHED`), else None."""
    from netfl.trace.run import Run

    try:
        status = Run(run_dir).status
    except NetflError:
        return None
    return status if status in FINISHED else None


def run_sweep(
    sweep: Sweep,
    out: str | Path | None = None,
    *,
    backend: str = "local",
    jobs: int = 1,
    address: str | None = None,
    gpu_fraction: float = 0.25,
    progress: str = "auto",
) -> SweepResult:
    """Run every run of ``sweep`` not yet completed in ``out`` (default ``sweeps/<name>``).

    The index is written before the first run and after every run, so an interrupted sweep
    (Ctrl-C, a crash) resumes where it stopped when run again.
    """
    if backend not in BACKENDS:
        raise NetflError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if jobs < 1:
        raise NetflError(f"jobs must be at least 1, got {jobs}")
    if backend == "ray":
        backends.import_ray()  # fail before writing anything
    else:  # N runs on one GPU must fit its memory
        gpu.check_jobs([run.scenario_data for run in sweep.runs], jobs)
    sweep_dir = Path(out) if out is not None else Path("sweeps") / sweep.name
    prepare_sweep_dir(sweep_dir)
    rows = _plan(sweep, sweep_dir)
    write_text(sweep_dir / SWEEP_FILE, sweep.text)
    write_index(sweep_dir, pd.DataFrame(list(rows.values())))
    tasks = [
        backends.Task(run.run_id, run.scenario_data, str(sweep_dir / rows[run.run_id]["run_dir"]))
        for run in sweep.runs
        if rows[run.run_id]["status"] not in FINISHED
    ]
    skipped = len(rows) - len(tasks)
    with SweepProgress(len(tasks), progress) as bar:

        def on_done(outcome: backends.Outcome) -> None:
            row = rows[outcome.run_id]
            row.update(status=outcome.status, error=outcome.error, wall_time_s=outcome.wall_time_s)
            write_index(sweep_dir, pd.DataFrame(list(rows.values())))
            bar.update(outcome, str(row["label"]))

        if backend == "ray":
            backends.run_ray(tasks, on_done, address, gpu_fraction)
        else:
            backends.run_local(tasks, jobs, on_done)
    index = pd.DataFrame(list(rows.values()))
    return SweepResult(sweep_dir, index, skipped)
