"""The run directory: creation rules and atomic writes.

A run directory is never overwritten silently: an existing non-empty directory is refused
unless ``force`` is given, and even then only if it is a netfl run directory (it holds a
``summary.json`` or ``scenario.resolved.yaml``), so ``--force`` cannot wipe a home folder.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

from netfl.errors import RunDirectoryError

RUN_MARKERS = ("summary.json", "scenario.resolved.yaml")


def is_run_directory(path: Path) -> bool:
    return any((path / marker).is_file() for marker in RUN_MARKERS)


def default_run_dir(root: str | Path, name: str, now: datetime | None = None) -> Path:
    """``<root>/<name>-<UTC timestamp>``, with ``-2``, ``-3``... if that already exists."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    base = Path(root) / f"{name}-{stamp}"
    candidate, counter = base, 2
    while candidate.exists():
        candidate = base.with_name(f"{base.name}-{counter}")
        counter += 1
    return candidate


def prepare_run_dir(path: Path, force: bool = False) -> Path:
    """Create ``path`` for a new run, applying the no-silent-overwrite rules."""
    return prepare_output_dir(path, force, "run", is_run_directory, "summary.json")


def prepare_output_dir(
    path: Path, force: bool, kind: str, owned: Callable[[Path], bool], marker: str
) -> Path:
    """Create the output folder ``path``; an existing non-empty one is replaced only with
    ``force``, and then only if ``owned(path)`` says netfl wrote it (it holds ``marker``)."""
    if path.exists() and not path.is_dir():
        raise RunDirectoryError(f"{path}: exists and is not a directory")
    if path.is_dir() and any(path.iterdir()):
        if not force:
            raise RunDirectoryError(
                f"{path}: directory exists and is not empty; choose another --out, or pass"
                f" --force to replace the {kind} it holds"
            )
        if not owned(path):
            raise RunDirectoryError(
                f"{path}: not a netfl {kind} directory (no {marker}); refusing to replace it"
                " even with --force"
            )
        shutil.rmtree(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunDirectoryError(f"{path}: cannot create the {kind} directory: {exc}") from exc
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _atomic(path: Path, write: Any) -> None:
    """Write through a temporary file and rename it into place; the file gets the mode a
    plain ``open`` would give it (0666 less the umask), not ``mkstemp``'s 0600."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str) -> None:
    def write(tmp: str) -> None:
        Path(tmp).write_text(text, encoding="utf-8")

    _atomic(path, write)


def write_bytes(path: Path, data: bytes) -> None:
    def write(tmp: str) -> None:
        Path(tmp).write_bytes(data)

    _atomic(path, write)


def _finite_or_null(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_or_null(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_or_null(v) for v in value]
    return value


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Strict JSON: NaN and infinities become null."""
    text = json.dumps(_finite_or_null(data), indent=2, allow_nan=False)
    write_text(path, text + "\n")


def write_parquet(path: Path, table: pa.Table) -> None:
    def write(tmp: str) -> None:
        pq.write_table(table, tmp, compression="zstd")

    _atomic(path, write)


def write_arrow(path: Path, table: pa.Table) -> None:
    """An Arrow IPC file (Feather v2), LZ4-compressed: ten times faster to write than
    Parquet, for files the run reads back itself."""

    def write(tmp: str) -> None:
        feather.write_feather(table, tmp, compression="lz4")

    _atomic(path, write)


def write_parquet_stream(path: Path, schema: pa.Schema, tables: Iterable[pa.Table]) -> None:
    """One Parquet file from ``tables`` written one after another (a row group or more
    each), so only one of them need be in memory at a time."""

    def write(tmp: str) -> None:
        with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
            for table in tables:
                writer.write_table(table)

    _atomic(path, write)
