"""The timeline: an append-only log of simulation events (``timeline.parquet``).

One row per event. ``t_s`` is simulated seconds, ``round`` and ``client`` are -1 where they
do not apply, ``kind`` names the event, and the value columns hold NaN where they do not
apply. Columns are public API: new ones may be added, none renamed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pyarrow as pa

#: Event kinds written by netfl. Components may add kinds; these are the documented ones.
KINDS: dict[str, str] = {
    "round_start": "a round begins",
    "request": "resource request sent to the round's candidate clients",
    "select": "the strategy's choice (one row per selected client)",
    "download_start": "model download to a client begins",
    "download_end": "model download to a client completes",
    "compute_start": "local update begins on a client",
    "compute_end": "local update ends on a client",
    "upload_start": "model upload from a client begins",
    "upload_end": "model upload from a client completes (arrived at the server)",
    "deadline_miss": "a client's upload did not arrive before the round deadline",
    "drop": "a client left mid-round; its work is lost",
    "aggregate": "the server aggregates the arrived updates",
    "evaluate": "the global model is evaluated (accuracy, loss)",
    "client_loss": "a client's loss of the global model at an evaluation (learning.fairness_loss)",
    "round_end": "a round ends",
    "background_flow_start": "a background (non-FL) transfer begins",
    "background_flow_end": "a background (non-FL) transfer completes",
    "rb_allocation": (
        "a flow's resource blocks change: it holds `n_rb` RBs from now on (0 releases them);"
        " optional columns `flow`, `direction` ('ul'/'dl'), `n_rb_total` (netfl/trace/rb.py)"
    ),
}

VALUE_COLUMNS = ("bits", "rate_bps", "duration_s", "accuracy", "loss")

#: Columns only some runs have (RB allocations of the LTE model): appended after the value
#: columns when any event sets them, null in the other rows.
OPTIONAL_COLUMNS: dict[str, pa.DataType] = {
    "n_rb": pa.float64(),
    "n_rb_total": pa.float64(),
    "flow": pa.int64(),
    "direction": pa.string(),
}

SCHEMA = pa.schema(
    [
        pa.field("t_s", pa.float64()),
        pa.field("round", pa.int32()),
        pa.field("client", pa.int32()),
        pa.field("kind", pa.dictionary(pa.int16(), pa.string())),
        *(pa.field(name, pa.float64()) for name in VALUE_COLUMNS),
    ]
)


class Timeline:
    """Column-wise event recorder; cheap to append, converted to Arrow once."""

    def __init__(self) -> None:
        self._t: list[float] = []
        self._round: list[int] = []
        self._client: list[int] = []
        self._kind: list[str] = []
        self._values: dict[str, list[float]] = {name: [] for name in VALUE_COLUMNS}
        self._optional: dict[str, list[object]] = {}

    def __len__(self) -> int:
        return len(self._t)

    def record(
        self, t_s: float, kind: str, round: int = -1, client: int = -1, **values: float | str
    ) -> None:
        """Append one event. ``values`` keys must be value or optional columns."""
        row = len(self._t)
        self._t.append(float(t_s))
        self._round.append(int(round))
        self._client.append(int(client))
        self._kind.append(kind)
        for name, column in self._values.items():
            column.append(float(values.pop(name, math.nan)))
        for name, value in values.items():
            if name not in OPTIONAL_COLUMNS:
                raise KeyError(
                    f"not timeline columns: {sorted(set(values) - set(OPTIONAL_COLUMNS))}"
                )
            if name not in self._optional:
                self._optional[name] = [None] * row  # backfill the rows before
            self._optional[name].append(value)
        for optional in self._optional.values():
            if len(optional) == row:
                optional.append(None)

    def record_many(
        self, t_s: float, kind: str, round: int, clients: Iterable[int], **values: float
    ) -> None:
        for client in clients:
            self.record(t_s, kind, round, client, **values)

    def to_arrow(self) -> pa.Table:
        columns = [
            pa.array(self._t, pa.float64()),
            pa.array(self._round, pa.int32()),
            pa.array(self._client, pa.int32()),
            pa.array(self._kind, pa.string()).dictionary_encode().cast(SCHEMA.field("kind").type),
            *(pa.array(self._values[name], pa.float64()) for name in VALUE_COLUMNS),
        ]
        schema = SCHEMA
        for name, dtype in OPTIONAL_COLUMNS.items():
            if name in self._optional:
                columns.append(pa.array(self._optional[name], dtype))
                schema = schema.append(pa.field(name, dtype))
        return pa.Table.from_arrays(columns, schema=schema)
