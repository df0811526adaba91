"""What a run that stopped for lack of room keeps: the tables that fit.

A full disk, a quota or a file past the file-size limit (``ulimit -f``) stops a run
(:func:`netfl.simulation.simulate`); what was recorded until then is written where it fits,
most needed first, and the error line says what was written and what not
(:class:`netfl.errors.DiskFullError`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from netfl.errors import DiskFullError
from netfl.recorder.streaming import TableStream, part_paths
from netfl.recorder.tables import clients_table, rounds_table
from netfl.rundir import RunDirLock, write_json, write_parquet
from netfl.world import World


def clients_of(world: World) -> Any:
    """``clients.parquet``'s table: the drawn columns, the server's and the radio's totals."""
    columns = dict(world.client_columns)
    columns.update(world.server.client_totals())
    radio_totals = getattr(world.network, "client_totals", None)
    if callable(radio_totals):
        columns.update(radio_totals())
    return clients_table(columns)


def write_what_fits(
    world: World,
    run_dir: Path,
    summary: dict[str, Any],
    full: DiskFullError,
    lock: RunDirLock,
    streams: Sequence[TableStream],
) -> None:
    """The run stopped for lack of room: give the lock's reserved space back (the failed
    write's temporary file is gone too) and write what fits, most needed first: the
    summary (status failed), the rounds and clients tables, then every row of the
    timeline and the strategy's scores not on disk yet, as parts (``<table>.parts/``,
    which :func:`netfl.load_run` reads). ``full`` records what was written and what not."""
    lock.release_reserve()
    summary["status"] = "failed"
    tables = {
        "summary.json": lambda: write_json(run_dir / "summary.json", summary),
        "rounds.parquet": lambda: write_parquet(
            run_dir / "rounds.parquet", rounds_table(world.server.records)
        ),
        "clients.parquet": lambda: write_parquet(run_dir / "clients.parquet", clients_of(world)),
    }
    for name, write in tables.items():
        try:
            write()
            full.kept.append(name if name != "summary.json" else "summary.json (status failed)")
        except OSError:
            full.lost.append(name)
    for stream in streams:
        if stream.finished:
            full.kept.append(f"{stream.table}.parquet")
            continue
        saved = stream.save_parts()
        if part_paths(run_dir, stream.table):
            so_far = "so far" if saved else "until the last part that fitted"
            full.kept.append(f"{stream.table}.parts/ (the {stream.table} {so_far})")
        if not saved:
            full.lost.append(f"the {stream.table}'s last rows")
