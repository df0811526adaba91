"""The timeline: an append-only log of simulation events (``timeline.parquet``).

One row per event. ``t_s`` is simulated seconds, ``round`` and ``client`` are -1 where they
do not apply, ``kind`` names the event, and the value columns hold NaN where they do not
apply. Columns are public API: new ones may be added, none renamed.

A client's phases in a round are the gaps between its consecutive events (see
:mod:`netfl.trace.phases`): download (``download_start`` -> ``download_end``), cold start
(``cold_start_start`` -> ``cold_start_end``, absent when warm), queue wait (the end of the
previous phase -> ``compute_start``: background jobs ahead of the FL job under FIFO),
compute (``compute_start`` -> ``compute_end``), upload wait (``compute_end`` ->
``upload_start``: waiting for its turn in FedCS's scheduled upload) and upload
(``upload_start`` -> ``upload_end``). The same phases of a strategy's poll carry the
prefix ``poll_``. A client that leaves its round ends with ``drop``, ``deadline_miss`` or
``cancel``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pyarrow as pa

#: Event kinds written by netfl. Components may add kinds; these are the documented ones.
KINDS: dict[str, str] = {
    "round_start": "a round begins",
    "request": "resource request sent to a client (one row per asked client)",
    "response": "an available client's resource report arrived (bits, duration_s)",
    "select": "the strategy's choice (one row per selected client, in selection order)",
    "download_start": "model download to a client begins (distribution step)",
    "download_end": "model download to a client completes",
    "cold_start_start": "a device not selected in the previous round starts preparing its data",
    "cold_start_end": "data preparation (cold start) ends (duration_s)",
    "compute_start": "local update gets the device's CPU (after any queue wait)",
    "compute_end": "local update ends on a client (duration_s: compute time)",
    "upload_start": "model upload from a client begins (after any wait for its turn)",
    "upload_end": "model upload from a client completes (arrived at the server)",
    "deadline_miss": "a client's upload did not arrive before the round deadline (or T_final)",
    "drop": "a client left mid-round; its work is lost",
    "cancel": "the server stopped a client's work: enough updates arrived (over-selection)"
    " or a poll timed out",
    "poll_download_start": "a strategy's poll: model download to a polled client begins",
    "poll_download_end": "poll: the download completes",
    "poll_cold_start_start": "poll: the polled device starts preparing its data",
    "poll_cold_start_end": "poll: data preparation ends",
    "poll_compute_start": "poll: the on-device computation (e.g. the local loss) begins",
    "poll_compute_end": "poll: the on-device computation ends",
    "poll_upload_start": "poll: the polled client's answer upload begins",
    "poll_upload_end": "poll: the answer arrived at the server",
    "aggregate": "the server aggregates the arrived updates",
    "evaluate": "the global model is evaluated (accuracy, loss)",
    "round_end": "a round ends",
    "background_flow_start": "a background (non-FL) transfer begins",
    "background_flow_end": "a background (non-FL) transfer completes",
}

VALUE_COLUMNS = ("bits", "rate_bps", "duration_s", "accuracy", "loss")

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
    """Column-wise event recorder; cheap to append, converted to Arrow once.

    Value columns are stored sparsely (row index, value) and filled with NaN on export.
    """

    def __init__(self) -> None:
        self._t: list[float] = []
        self._round: list[int] = []
        self._client: list[int] = []
        self._kind: list[str] = []
        self._rows: dict[str, list[int]] = {name: [] for name in VALUE_COLUMNS}
        self._values: dict[str, list[float]] = {name: [] for name in VALUE_COLUMNS}

    def __len__(self) -> int:
        return len(self._t)

    def record(
        self, t_s: float, kind: str, round: int = -1, client: int = -1, **values: float
    ) -> None:
        """Append one event. ``values`` keys must be value columns."""
        row = len(self._t)
        if values and not values.keys() <= self._rows.keys():
            raise KeyError(f"not timeline columns: {sorted(values.keys() - self._rows.keys())}")
        for name, value in values.items():
            self._rows[name].append(row)
            self._values[name].append(float(value))
        self._t.append(float(t_s))
        self._round.append(int(round))
        self._client.append(int(client))
        self._kind.append(kind)

    def record_many(
        self, t_s: float, kind: str, round: int, clients: Iterable[int], **values: float
    ) -> None:
        """Append one event per client, all at ``t_s`` with the same values."""
        clients = [int(c) for c in clients]
        first, n = len(self._t), len(clients)
        if values and not values.keys() <= self._rows.keys():
            raise KeyError(f"not timeline columns: {sorted(values.keys() - self._rows.keys())}")
        for name, value in values.items():
            self._rows[name].extend(range(first, first + n))
            self._values[name].extend([float(value)] * n)
        self._t.extend([float(t_s)] * n)
        self._round.extend([int(round)] * n)
        self._client.extend(clients)
        self._kind.extend([kind] * n)

    def _column(self, name: str) -> np.ndarray:
        column = np.full(len(self._t), math.nan)
        column[np.asarray(self._rows[name], dtype=np.int64)] = self._values[name]
        return column

    def to_arrow(self) -> pa.Table:
        columns = [
            pa.array(self._t, pa.float64()),
            pa.array(self._round, pa.int32()),
            pa.array(self._client, pa.int32()),
            pa.array(self._kind, pa.string()).dictionary_encode().cast(SCHEMA.field("kind").type),
            *(pa.array(self._column(name), pa.float64()) for name in VALUE_COLUMNS),
        ]
        return pa.Table.from_arrays(columns, schema=SCHEMA)
