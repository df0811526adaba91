"""Tables written as the run goes (``<table>.parts/``), so memory stays flat in rounds.

The timeline (``timeline.parquet``) and the strategy's scores (``strategy.parquet``) grow
with the rounds. At a round's end, once one of them holds :data:`PART_ROWS` rows or more,
they are written as one complete file ``<table>.parts/part-<first row>.arrow`` (the
timeline sorted by time; written atomically) and forgotten. At the end of the run the parts
are copied, one at a time, into ``<table>.parquet`` (one Parquet writer, a row group or
more a part) and the folder is removed. The parts are Arrow IPC files (Feather v2, LZ4),
not Parquet: a million rows take 0.01 s to write and read back against 0.09 s to encode as
Parquet, so a table is encoded as Parquet once, as it was when it was held in memory
(``docs/benchmarks.md``, "Streamed timeline"). A table that never reaches
:data:`PART_ROWS` is written from memory in one go, as before streaming.

A run killed mid-way (SIGKILL, power cut) keeps every part written so far: the tables up
to the last flushed round stay readable (:func:`read_parts`, which :func:`netfl.load_run`
uses). ``netfl simulate --resume`` clears the timeline's parts and writes them again as it
replays; the replay does not recompute the strategy's scores, so the score parts before the
checkpoint are kept (the checkpoint holds the rows after them) and an interrupted run with
checkpoints keeps them too.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

from netfl.errors import RunReadError
from netfl.recorder.timeline import Timeline
from netfl.rundir import write_arrow, write_parquet, write_parquet_stream

if TYPE_CHECKING:  # pandas (0.3-0.5 s to import) only where a run is read back
    import pandas as pd

PART_ROWS = 1_000_000
"""Rows held before a round's end writes them out: about 40 MB of timeline held (7 to 12
bytes a value column a row), a part of a few MB on disk; the peak is this plus one round's."""

TIMELINE = "timeline"
STRATEGY = "strategy"
PARTS_DIR = f"{TIMELINE}.parts"
TIMELINE_FILE = f"{TIMELINE}.parquet"


class Drainable(Protocol):
    """A table recorded in memory that can hand its rows over (``Timeline``, ``ScoreLog``)."""

    def __len__(self) -> int: ...  # rows recorded, handed over or not

    @property
    def buffered(self) -> int: ...  # rows held

    def drain(self) -> pa.Table: ...  # the rows held, which are then forgotten


def parts_dir(run_dir: Path, table: str = TIMELINE) -> Path:
    return run_dir / f"{table}.parts"


def part_paths(run_dir: Path, table: str = TIMELINE) -> list[Path]:
    """The complete parts of ``table`` in ``run_dir``, in order (temporary files of an
    unfinished write start with a dot and are not listed)."""
    return sorted(parts_dir(run_dir, table).glob("part-*.arrow"))


def _first_row(part: Path) -> int:
    return int(part.stem.removeprefix("part-"))


def covers(run_dir: Path, table: str, rows: int) -> bool:
    """Whether the parts of ``table`` in ``run_dir`` hold its first ``rows`` rows, one part
    after the other and ending there (parts from row ``rows`` on are not looked at)."""
    covered = 0
    for part in part_paths(run_dir, table):
        first = _first_row(part)
        if first >= rows:
            break
        if first != covered:
            return False
        try:
            covered += feather.read_table(part).num_rows
        except Exception:  # pyarrow raises several unrelated types for a bad file
            return False
    return covered == rows


class TableStream:
    """Writes the rows of ``source()`` (a :class:`Drainable`, looked up each time: a
    resumed run swaps the score log in) into ``run_dir`` as the run goes.

    Creating it removes the parts a killed run left from row ``keep_rows`` on (all of them
    by default). Call :meth:`round_ended` at each round's end and :meth:`finish` once;
    ``whole()`` is the table written in one go when no part was written.
    """

    def __init__(
        self,
        source: Callable[[], Drainable],
        run_dir: Path,
        table: str,
        schema: pa.Schema,
        whole: Callable[[], pa.Table],
        *,
        part_rows: int | None = None,
        keep_rows: int = 0,
    ) -> None:
        self.source = source
        self.run_dir = run_dir
        self.table = table
        self.schema = schema
        self.whole = whole
        self.part_rows = PART_ROWS if part_rows is None else part_rows
        if self.part_rows < 1:
            raise ValueError(f"part_rows must be at least 1, not {self.part_rows}")
        self.peak_buffered = 0
        """The most rows held at a round's end (before writing them out)."""
        self._unwritten: list[tuple[int, pa.Table]] = []
        """Parts drained whose write failed (a full disk): kept for the next write."""
        self.finished = False
        """Whether :meth:`finish` wrote ``<table>.parquet``."""
        if keep_rows == 0:
            shutil.rmtree(parts_dir(run_dir, table), ignore_errors=True)
        for part in part_paths(run_dir, table):
            if _first_row(part) >= keep_rows:
                part.unlink()

    def round_ended(self) -> None:
        """Write the rows held out as a part once there are :attr:`part_rows` of them."""
        held = self.source().buffered
        self.peak_buffered = max(self.peak_buffered, held)
        if held >= self.part_rows:
            self._write_part()

    def _write_part(self) -> None:
        """Write the rows held as a part (and any part an earlier write failed on: a row
        drained is never dropped, a full disk only defers its part)."""
        source = self.source()
        if source.buffered:
            self._unwritten.append((len(source) - source.buffered, source.drain()))
        folder = parts_dir(self.run_dir, self.table)
        folder.mkdir(exist_ok=True)
        while self._unwritten:
            first, table = self._unwritten[0]
            write_arrow(folder / f"part-{first:012d}.arrow", table)
            self._unwritten.pop(0)

    def save_parts(self) -> bool:
        """Write every row not on disk yet as parts, which :func:`read_parts` (and so
        :func:`netfl.load_run`) reads: what a run stopped by a full disk keeps of this
        table. Whether it worked (False: an OSError; the rows stay held)."""
        try:
            self._write_part()
        except OSError:
            with contextlib.suppress(OSError):  # no empty folder that promises parts
                parts_dir(self.run_dir, self.table).rmdir()
            return False
        return True

    def finish(self, keep_parts: bool = False) -> None:
        """Write ``<table>.parquet`` (atomically) and remove the parts, unless
        ``keep_parts`` (a resumable run's scores: its checkpoint continues from them)."""
        source = self.source()
        path = self.run_dir / f"{self.table}.parquet"
        if len(source) == source.buffered and not self._unwritten:  # nothing written out
            write_parquet(path, self.whole())
        else:
            if source.buffered or self._unwritten:
                self._write_part()
            tables = (feather.read_table(part) for part in part_paths(self.run_dir, self.table))
            write_parquet_stream(path, self.schema, tables)
        self.finished = True
        if not keep_parts:
            shutil.rmtree(parts_dir(self.run_dir, self.table), ignore_errors=True)


def timeline_stream(timeline: Timeline, run_dir: Path, part_rows: int | None = None) -> TableStream:
    """The stream of the timeline: parts sorted by time, stale parts all removed."""
    schema = timeline.schema
    if schema is None:
        raise ValueError("a streamed timeline needs its optional columns fixed up front")
    return TableStream(
        lambda: timeline,
        run_dir,
        TIMELINE,
        schema,
        lambda: timeline.to_arrow(sort_by_time=True),
        part_rows=part_rows,
    )


def read_parts(run_dir: Path, table: str = TIMELINE) -> pd.DataFrame | None:
    """``table`` from the parts a run still going (or killed) has written so far, or None
    where ``<table>.parquet`` is the one to read.

    When both are there (a resumed run: the interrupted run's ``<table>.parquet`` and the
    parts of the resumed one, both the start of the same table) the longer is read."""
    parts = part_paths(run_dir, table)
    if not parts:
        return None
    try:
        whole = pa.concat_tables([feather.read_table(part) for part in parts])
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise RunReadError(
            f"{parts_dir(run_dir, table)}: not readable {table} parts ({exc})"
        ) from None
    path = run_dir / f"{table}.parquet"
    if path.is_file():
        try:
            if pq.ParquetFile(path).metadata.num_rows >= whole.num_rows:
                return None
        except Exception:  # a bad <table>.parquet: read the parts
            pass
    return whole.to_pandas()
