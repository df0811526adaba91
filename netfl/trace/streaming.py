"""The timeline written as the run goes (``timeline.parts/``), so memory stays flat in rounds.

At a round's end, once the timeline holds :data:`PART_ROWS` rows or more, they are written
as one complete file ``timeline.parts/part-NNNNN.arrow`` (sorted by time, written
atomically) and forgotten. At the end of the run the parts are copied, one at a time, into
``timeline.parquet`` (one Parquet writer, a row group or more a part) and the folder is
removed. The parts are Arrow IPC files (Feather v2, LZ4), not Parquet: a million rows
take 0.01 s to write and read back against 0.09 s to encode as Parquet, so the timeline
is encoded as Parquet once, as it was when it was held in memory (``docs/benchmarks.md``,
"Streamed timeline"). A run that never reaches :data:`PART_ROWS` writes ``timeline.parquet``
from memory in one go, as before streaming.

A run killed mid-way (SIGKILL, power cut) keeps every part written so far: the timeline up
to the last flushed round stays readable (:func:`read_timeline`, which
:func:`netfl.load_run` uses), and ``netfl simulate --resume`` clears the stale parts and
writes them again as it replays.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

from netfl.errors import RunReadError
from netfl.rundir import write_arrow, write_parquet, write_parquet_stream
from netfl.trace.timeline import Timeline

PART_ROWS = 1_000_000
"""Rows held before a round's end writes them out: about 40 MB held (7 to 12 bytes a value
column a row), a part of 10 to 20 MB on disk; the peak is this plus one round's rows."""

PARTS_DIR = "timeline.parts"
TIMELINE_FILE = "timeline.parquet"
_PART = "part-{:05d}.arrow"


def part_paths(run_dir: Path) -> list[Path]:
    """The complete parts in ``run_dir``, in order (temporary files of an unfinished write
    start with a dot and are not listed)."""
    return sorted((run_dir / PARTS_DIR).glob("part-*.arrow"))


class TimelineStream:
    """Writes ``timeline``'s rows into ``run_dir`` as the run goes.

    Creating it removes the parts a killed run left in ``run_dir`` (a resumed run writes
    them again). Call :meth:`round_ended` at each round's end and :meth:`finish` once.
    """

    def __init__(self, timeline: Timeline, run_dir: Path, part_rows: int | None = None) -> None:
        if timeline.schema is None:
            raise ValueError("a streamed timeline needs its optional columns fixed up front")
        self.timeline = timeline
        self.run_dir = run_dir
        self.part_rows = PART_ROWS if part_rows is None else part_rows
        if self.part_rows < 1:
            raise ValueError(f"part_rows must be at least 1, not {self.part_rows}")
        self.n_parts = 0
        self.peak_buffered = 0
        """The most rows the timeline held at a round's end (before writing them out)."""
        shutil.rmtree(run_dir / PARTS_DIR, ignore_errors=True)

    def round_ended(self) -> None:
        """Write the rows held out as a part once there are :attr:`part_rows` of them."""
        held = self.timeline.buffered
        self.peak_buffered = max(self.peak_buffered, held)
        if held >= self.part_rows:
            self._write_part()

    def _write_part(self) -> None:
        folder = self.run_dir / PARTS_DIR
        folder.mkdir(exist_ok=True)
        write_arrow(folder / _PART.format(self.n_parts), self.timeline.drain())
        self.n_parts += 1

    def finish(self) -> None:
        """Write ``timeline.parquet`` (atomically) and remove the parts."""
        path = self.run_dir / TIMELINE_FILE
        if self.n_parts == 0:
            write_parquet(path, self.timeline.to_arrow(sort_by_time=True))
        else:
            if self.timeline.buffered:
                self._write_part()
            parts = part_paths(self.run_dir)
            tables = (feather.read_table(part) for part in parts)
            write_parquet_stream(path, self.timeline.schema, tables)
        shutil.rmtree(self.run_dir / PARTS_DIR, ignore_errors=True)


def read_parts(run_dir: Path) -> pd.DataFrame | None:
    """The timeline from the parts a run still going (or killed) has written so far, or
    None where ``timeline.parquet`` is the one to read.

    When both are there (a resumed run: the interrupted run's ``timeline.parquet`` and the
    parts of the resumed one, both the start of the same timeline) the longer is read."""
    parts = part_paths(run_dir)
    if not parts:
        return None
    try:
        table = pa.concat_tables([feather.read_table(part) for part in parts])
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise RunReadError(f"{run_dir / PARTS_DIR}: not readable timeline parts ({exc})") from None
    path = run_dir / TIMELINE_FILE
    if path.is_file():
        try:
            if pq.ParquetFile(path).metadata.num_rows >= table.num_rows:
                return None
        except Exception:  # a bad timeline.parquet: read the parts
            pass
    return table.to_pandas()
