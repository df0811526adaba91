"""The run directory: creation rules, a lock while a process writes it, atomic writes.

A run directory is never overwritten silently: an existing non-empty directory is refused
unless ``force`` is given, and even then only if it is a netfl run directory (it holds a
``summary.json`` or ``scenario.resolved.yaml``), so ``--force`` cannot wipe a home folder.

While a process writes a run directory it holds an advisory lock on its ``.netfl.lock``
file (:func:`lock_run_dir`; ``flock``, released by the kernel if the process dies), so a
second ``simulate --out`` or ``--resume`` of the same directory is refused with one line
instead of writing the same files. The lock file also reserves a little disk space, freed
when the disk fills up so that ``summary.json`` can still say what happened.
"""

from __future__ import annotations

import errno
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

LOCK_NAME = ".netfl.lock"
"""The lock file of a run directory being written (removed when the writer is done)."""

RESERVE_BYTES = 1 << 20
"""Disk space the lock file holds, given back when the disk is full so that the final
``summary.json`` (a few kilobytes) can still be written."""

#: errno values of a write that failed for lack of room: a full disk (ENOSPC), a quota
#: (EDQUOT), or a file past the process's file-size limit (EFBIG: ``ulimit -f``; Python
#: ignores the SIGXFSZ that would otherwise kill the process).
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG})


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` is a write that failed for lack of disk space (or file size)."""
    return isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS


def no_room_reason(exc: OSError) -> str:
    """What a :func:`disk_full` error means, in words."""
    # os.strerror: pyarrow's messages wrap the system's in their own words.
    reason = os.strerror(exc.errno) if exc.errno is not None else str(exc)
    if exc.errno == errno.EFBIG:
        return f"a file reached the file-size limit ({reason}; ulimit -f)"
    return f"the disk is full ({reason})"


def check_path_length(path: Path) -> None:
    """Refuse ``path`` up front when the file system cannot hold its name: a component
    longer than its NAME_MAX (255 bytes on most) or the whole longer than PATH_MAX
    (``os.pathconf`` of the nearest existing folder; the run directory's own files add
    up to 40 bytes to its path).

    Raises
    ------
    RunDirectoryError
        Naming the component and the limit.
    """
    absolute = Path(os.path.abspath(path))
    existing = absolute
    while not os.path.isdir(existing) and existing != existing.parent:  # no OSError
        existing = existing.parent
    name_max = _pathconf(existing, "PC_NAME_MAX", 255)
    path_max = _pathconf(existing, "PC_PATH_MAX", 4096)
    for part in absolute.parts[len(existing.parts) :]:
        size = len(os.fsencode(part))
        if size > name_max:
            shown = part if len(part) <= 40 else f"{part[:37]}..."
            raise RunDirectoryError(
                f"{shown!r} (in --out or the scenario's name) is {size} bytes long; this file"
                f" system takes names of at most {name_max}"
            )
    if len(os.fsencode(str(absolute))) + 40 > path_max:
        raise RunDirectoryError(
            f"{str(absolute)[:40]}...: the run directory's path is"
            f" {len(os.fsencode(str(absolute)))} bytes long; with its files it would pass this"
            f" file system's limit of {path_max}"
        )


def _pathconf(path: Path, name: str, default: int) -> int:
    try:
        return int(os.pathconf(path, name))
    except (OSError, ValueError):
        return default


class RunDirLock:
    """The lock of a run directory (see the module docstring): :func:`lock_run_dir`."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    def release_reserve(self) -> None:
        """Give the reserved disk space back (the disk is full)."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)

    def release(self) -> None:
        """Remove the lock file and unlock (idempotent)."""
        if self._fd is None:
            return
        (self.path / LOCK_NAME).unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> RunDirLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_run_dir(path: Path) -> RunDirLock:
    """Create ``path`` if needed and lock it for this process, reserving
    :data:`RESERVE_BYTES` in its lock file.

    Raises
    ------
    RunDirectoryError
        Another process holds the lock, or the directory cannot be created or written
        (read-only, not a directory).
    """
    import fcntl

    if path.exists() and not path.is_dir():
        raise RunDirectoryError(f"{path}: exists and is not a directory")
    lock_file = path / LOCK_NAME
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise RunDirectoryError(f"{path}: cannot write the run directory: {exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).split(b"\0")[0].decode(errors="replace").strip()
        os.close(fd)
        raise RunDirectoryError(
            f"{path}: another netfl process (pid {holder or '?'}) is writing this run"
            " directory; wait for it to end, or choose another --out"
        ) from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _reserve(fd)
    except OSError as exc:
        os.close(fd)
        lock_file.unlink(missing_ok=True)
        raise RunDirectoryError(f"{path}: cannot write the run directory: {exc}") from exc
    return RunDirLock(path, fd)


def _reserve(fd: int) -> None:
    """Allocate :data:`RESERVE_BYTES` of the lock file on disk (zeros after the pid)."""
    size = os.fstat(fd).st_size
    if hasattr(os, "posix_fallocate"):
        os.posix_fallocate(fd, size, RESERVE_BYTES)
    else:  # pragma: no cover - macOS: write the zeros
        os.pwrite(fd, bytes(RESERVE_BYTES), size)


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
    held = [p for p in path.iterdir() if p.name != LOCK_NAME] if path.is_dir() else []
    if held:
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
        for entry in held:  # the lock file (this process's) stays
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunDirectoryError(f"{path}: cannot create the {kind} directory: {exc}") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise RunDirectoryError(f"{path}: the {kind} directory is not writable")
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
