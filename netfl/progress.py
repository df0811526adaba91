"""Progress display: a live bar on a terminal, plain log lines otherwise, nothing if quiet."""

from __future__ import annotations

import math
import sys
import time
from types import TracebackType
from typing import Any, TextIO

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

from netfl.recorder.tables import RoundRecord


def pick_mode(mode: str, stream: TextIO) -> str:
    """``"auto"`` becomes a live bar on a terminal and log lines otherwise."""
    if mode == "auto":
        return "bar" if stream.isatty() else "log"
    return mode


def start_bar(
    stream: TextIO, unit: str, fields: str, total: int | None, **values: Any
) -> tuple[Progress, TaskID]:
    """A started rich bar ``<unit> done/total [bar] <fields> elapsed eta``."""
    bar = Progress(
        TextColumn(unit),
        MofNCompleteColumn(),
        BarColumn(),
        TextColumn(fields),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=Console(file=stream),
    )
    bar.start()
    return bar, bar.add_task(unit, total=total, **values)


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
        mode: str = "auto",
        every: int = 1,
        stream: TextIO | None = None,
    ) -> None:
        self.stream = stream or sys.stderr
        self.mode = pick_mode(mode, self.stream)
        self.total_rounds = total_rounds
        self.every = every
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._accuracy = math.nan
        self._wall_start = time.perf_counter()

    def __enter__(self) -> RunProgress:
        if self.mode == "bar":
            self._progress, self._task = start_bar(
                self.stream,
                "round",
                "sim {task.fields[sim]}  acc {task.fields[acc]}",
                self.total_rounds,
                sim="0.0 s",
                acc=_accuracy(math.nan),
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
                f"round {record.round} ({done}{total} done)  sim {record.t_end_s:,.1f} s  acc"
                f" {_accuracy(self._accuracy).strip()}  wall {wall:.1f} s{eta}",
                file=self.stream,
                flush=True,
            )
