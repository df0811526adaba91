"""The sweep directory and its index table.

::

    <sweep dir>/
      sweep.yaml        the sweep file as last run
      index.parquet     one row per run (also index.csv, the same table for people)
      runs/<run id>/    one run directory per run

Index columns: ``run_id``, ``seed``, ``label`` (the run's overrides, readable),
``overrides`` (JSON object of dotted key -> value), ``status`` (``pending``, ``completed``,
``failed``, ``interrupted``), ``error`` (empty unless failed), ``run_dir`` (relative to the
sweep directory) and ``wall_time_s``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from netfl.errors import RunDirectoryError, RunReadError
from netfl.rundir import write_parquet, write_text

INDEX_FILE = "index.parquet"
INDEX_CSV = "index.csv"
SWEEP_FILE = "sweep.yaml"
RUNS_FOLDER = "runs"

INDEX_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string()),
        pa.field("seed", pa.int64()),
        pa.field("label", pa.string()),
        pa.field("overrides", pa.string()),
        pa.field("status", pa.string()),
        pa.field("error", pa.string()),
        pa.field("run_dir", pa.string()),
        pa.field("wall_time_s", pa.float64()),
    ]
)


def is_sweep_directory(path: Path) -> bool:
    return (path / INDEX_FILE).is_file()


def read_index(sweep_dir: Path) -> pd.DataFrame:
    """The index of a sweep directory; an unreadable one is a :class:`RunReadError` naming it."""
    path = sweep_dir / INDEX_FILE
    try:
        table = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise RunReadError(f"{path}: not a readable sweep index ({exc})") from None
    missing = set(INDEX_SCHEMA.names) - set(table.columns)
    if missing:
        raise RunReadError(f"{path}: not a sweep index (no column {sorted(missing)[0]!r})")
    return table


def write_index(sweep_dir: Path, index: pd.DataFrame) -> None:
    """Write both forms of the index, each atomically."""
    table = pa.Table.from_pandas(
        index[INDEX_SCHEMA.names], schema=INDEX_SCHEMA, preserve_index=False
    )
    write_parquet(sweep_dir / INDEX_FILE, table)
    write_text(sweep_dir / INDEX_CSV, index[INDEX_SCHEMA.names].to_csv(index=False))


def prepare_sweep_dir(path: Path) -> None:
    """Create the sweep directory, or accept an existing sweep directory (to resume it).

    An existing non-empty directory that is not a sweep directory is refused: a sweep never
    writes into a folder it did not create.
    """
    if path.exists() and not path.is_dir():
        raise RunDirectoryError(f"{path}: exists and is not a directory")
    if path.is_dir() and any(path.iterdir()) and not is_sweep_directory(path):
        raise RunDirectoryError(
            f"{path}: directory exists, is not empty and is not a sweep directory (no"
            f" {INDEX_FILE}); choose another --out"
        )
    try:
        (path / RUNS_FOLDER).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunDirectoryError(f"{path}: cannot create the sweep directory: {exc}") from exc


def new_row(run_id: str, seed: int, label: str, overrides: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "seed": seed,
        "label": label,
        "overrides": json.dumps(overrides, sort_keys=True),
        "status": "pending",
        "error": "",
        "run_dir": f"{RUNS_FOLDER}/{run_id}",
        "wall_time_s": float("nan"),
    }
