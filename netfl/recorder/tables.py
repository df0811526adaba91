"""Per-round (``rounds.parquet``) and per-client (``clients.parquet``) tables."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

ROUNDS_SCHEMA = pa.schema(
    [
        pa.field("round", pa.int32()),
        pa.field("t_start_s", pa.float64()),
        pa.field("t_end_s", pa.float64()),
        pa.field("n_selected", pa.int32()),
        pa.field("n_completed", pa.int32()),
        pa.field("selected", pa.list_(pa.int32())),
        pa.field("completed", pa.list_(pa.int32())),
        pa.field("accuracy", pa.float64()),
        pa.field("loss", pa.float64()),
        pa.field("lr", pa.float64()),
        pa.field("n_dropped", pa.int32()),
        pa.field("n_deadline_miss", pa.int32()),
        pa.field("energy_tx_j", pa.float64()),
        pa.field("energy_compute_j", pa.float64()),
        pa.field("staleness_mean", pa.float64()),
        pa.field("staleness_max", pa.int32()),
        pa.field("staleness", pa.list_(pa.int32())),
    ]
)

#: Columns a rounds table has under fl.partial_work, after ROUNDS_SCHEMA's: the local SGD
#: steps asked of and done by each selected client (aligned with ``selected``; done counts
#: the steps the device finished, aggregated only where the upload arrived).
STEP_COLUMNS = ("steps_planned", "steps_done")

#: Columns every clients table has, in order (components may append more).
CLIENT_COLUMNS: dict[str, pa.DataType] = {
    "client": pa.int32(),
    "group": pa.string(),
    "x_m": pa.float64(),
    "y_m": pa.float64(),
    "distance_m": pa.float64(),
    "los": pa.bool_(),
    "pathloss_db": pa.float64(),
    "shadowing_db": pa.float64(),
    "snr_ul_db": pa.float64(),
    "cell": pa.int32(),
    "coupling_loss_db": pa.float64(),
    "sinr_ul_db": pa.float64(),
    "sinr_dl_db": pa.float64(),
    "rate_ul_bps": pa.float64(),
    "rate_dl_bps": pa.float64(),
    "n_samples": pa.int64(),
    "compute_sps": pa.float64(),
    "n_selected": pa.int32(),
    "n_completed": pa.int32(),
    "n_dropped": pa.int32(),
    "n_deadline_miss": pa.int32(),
    "energy_tx_j": pa.float64(),
    "energy_compute_j": pa.float64(),
}


@dataclass
class RoundRecord:
    """What happened in one round (one global model version under the asynchronous
    protocols). ``staleness`` (aligned with ``completed``), its mean and max: global
    versions between each aggregated update's download and the aggregation (0 for
    synchronous rounds)."""

    round: int
    t_start_s: float
    t_end_s: float = math.nan
    selected: list[int] = field(default_factory=list)
    completed: list[int] = field(default_factory=list)
    accuracy: float = math.nan
    loss: float = math.nan
    lr: float = math.nan
    n_dropped: int = 0
    n_deadline_miss: int = 0
    energy_tx_j: float = math.nan
    energy_compute_j: float = math.nan
    staleness_mean: float = 0.0
    staleness_max: int = 0
    staleness: list[int] | None = None  # None: 0 for every completed client
    #: fl.partial_work: local SGD steps asked of and done by each selected client
    #: (aligned with ``selected``); None without partial work (no such columns).
    steps_planned: list[int] | None = None
    steps_done: list[int] | None = None


def rounds_table(records: Sequence[RoundRecord]) -> pa.Table:
    columns: dict[str, list[object]] = {name: [] for name in ROUNDS_SCHEMA.names}
    for rec in records:
        columns["round"].append(rec.round)
        columns["t_start_s"].append(rec.t_start_s)
        columns["t_end_s"].append(rec.t_end_s)
        columns["n_selected"].append(len(rec.selected))
        columns["n_completed"].append(len(rec.completed))
        columns["selected"].append([int(c) for c in rec.selected])
        columns["completed"].append([int(c) for c in rec.completed])
        columns["accuracy"].append(rec.accuracy)
        columns["loss"].append(rec.loss)
        columns["lr"].append(rec.lr)
        columns["n_dropped"].append(rec.n_dropped)
        columns["n_deadline_miss"].append(rec.n_deadline_miss)
        columns["energy_tx_j"].append(rec.energy_tx_j)
        columns["energy_compute_j"].append(rec.energy_compute_j)
        columns["staleness_mean"].append(rec.staleness_mean)
        columns["staleness_max"].append(rec.staleness_max)
        staleness = rec.staleness if rec.staleness is not None else [0] * len(rec.completed)
        columns["staleness"].append([int(t) for t in staleness])
    table = pa.Table.from_pydict(columns, schema=ROUNDS_SCHEMA)
    if any(rec.steps_planned is not None for rec in records):
        for name in STEP_COLUMNS:
            values = [[int(s) for s in getattr(rec, name) or []] for rec in records]
            table = table.append_column(
                pa.field(name, pa.list_(pa.int32())), pa.array(values, pa.list_(pa.int32()))
            )
    return table


def clients_table(columns: Mapping[str, np.ndarray | Sequence[object]]) -> pa.Table:
    """Build the clients table: the standard columns first (NaN/null if absent), then extras."""
    n = len(columns["client"])
    arrays: dict[str, pa.Array] = {}
    for name, dtype in CLIENT_COLUMNS.items():
        if name in columns:
            arrays[name] = pa.array(np.asarray(columns[name]).tolist(), type=dtype)
        elif pa.types.is_floating(dtype):
            arrays[name] = pa.array(np.full(n, np.nan), type=dtype)
        else:
            arrays[name] = pa.nulls(n, type=dtype)
    for name, values in columns.items():
        if name not in arrays:
            arrays[name] = pa.array(np.asarray(values).tolist())
    return pa.Table.from_pydict(arrays)
