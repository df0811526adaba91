"""Progress display: a live bar on a terminal, plain log lines otherwise, nothing if quiet."""

from __future__ import annotations

import math
import sys
import time
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from netfl.trace.tables import RoundRecord


def _accuracy(value: float) -> str:
    return "   -  " if math.isnan(value) else f"{value:6.2%}"


class RunProgress:
    """Context manager that reports each finished round.

    ``mode``: ``"bar"`` (rich live bar), ``"log"`` (one line every N rounds), ``"quiet"``.
    ``"auto"`` picks the bar when ``stream`` is a terminal, else log lines.
    """

    def __init__(
        self,
        total_rounds: int | None,
        time_budget_s: float | None,
        mode: str = "auto",
        every: int = 1,
        stream: TextIO | None = None,
    ) -> None:
        self.stream = stream or sys.stderr
        if mode == "auto":
            mode = "bar" if self.stream.isatty() else "log"
        self.mode = mode
        self.total_rounds = total_rounds
        self.time_budget_s = time_budget_s
        self.every = every
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._accuracy = math.nan
        self._wall_start = time.perf_counter()

    def __enter__(self) -> RunProgress:
        if self.mode == "bar":
            self._progress = Progress(
                TextColumn("round"),
                MofNCompleteColumn(),
                BarColumn(),
                TextColumn("sim {task.fields[sim]}  acc {task.fields[acc]}"),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(
                "run", total=self.total_rounds, sim="0.0 s", acc=_accuracy(math.nan)
            )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    def update(self, record: RoundRecord) -> None:
        if not math.isnan(record.accuracy):
            self._accuracy = record.accuracy
        done = record.round + 1
        if self._progress is not None and self._task is not None:
            self._progress.update(
                self._task,
                completed=done,
                sim=f"{record.t_end_s:,.1f} s",
                acc=_accuracy(self._accuracy),
            )
        elif self.mode == "log" and (done % self.every == 0 or done == self.total_rounds):
            total = f"/{self.total_rounds}" if self.total_rounds else ""
            wall = time.perf_counter() - self._wall_start
            eta = ""
            if self.total_rounds:
                eta = f"  eta {wall / done * (self.total_rounds - done):.1f} s"
            print(
                f"round {done}{total}  sim {record.t_end_s:,.1f} s  acc"
                f" {_accuracy(self._accuracy).strip()}  wall {wall:.1f} s{eta}",
                file=self.stream,
                flush=True,
            )
