"""The timeline: an append-only log of simulation events (``timeline.parquet``).

One row per event. ``t_s`` is simulated seconds, ``round`` and ``client`` are -1 where they
do not apply, ``kind`` names the event, and the value columns hold NaN where they do not
apply. Columns are public API: new ones may be added, none renamed.

A client's phases in a round are the gaps between its consecutive events: download
(``download_start`` -> ``download_end``), cold start (``cold_start_start`` ->
``cold_start_end``, absent when warm), queue wait (the end of the
previous phase -> ``compute_start``: background jobs ahead of the FL job under FIFO),
compute (``compute_start`` -> ``compute_end``), upload wait (``compute_end`` ->
``upload_start``: waiting for its turn in FedCS's scheduled upload) and upload
(``upload_start`` -> ``upload_end``). The same phases of a strategy's poll carry the
prefix ``poll_``. A client that leaves its round ends with ``drop``, ``deadline_miss`` or
``cancel``. Under the asynchronous protocols (fedasync, fedbuff) a client's events carry in
``round`` the global model version it downloaded, and the server's (``aggregate``,
``round_end``) the version they produce.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa

#: Event kinds written by netfl. Components may add kinds; these are the documented ones.
KINDS: dict[str, str] = {
    "round_start": "a round begins",
    "request": "resource request sent to a client (one row per asked client)",
    "response": "an available client's resource report arrived (bits, duration_s)",
    "select": "the strategy's choice (one row per selected client, in selection order;"
    " duration_s: the selection's compute time)",
    "download_start": "model download to a client begins (distribution step)",
    "download_end": "model download to a client completes",
    "cold_start_start": "a device not selected in the previous round starts preparing its data",
    "cold_start_end": "data preparation (cold start) ends (duration_s)",
    "compute_start": "local update gets the device's CPU (after any queue wait)",
    "compute_end": "local update ends on a client (duration_s: compute time; under"
    " fl.partial_work steps_planned and steps_done, the local SGD steps asked and done)",
    "upload_start": "model upload from a client begins (after any wait for its turn)",
    "upload_end": "model upload from a client completes (arrived at the server)",
    "deadline_miss": "a client's upload did not arrive before the round deadline (or T_final)",
    "drop": "a client left mid-round; its work is lost",
    "radio_link_lost": "a client's transfer was lost with its radio link (moving devices)",
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
    "aggregate": "the server has aggregated the arrived updates (duration_s: its time)",
    "edge_aggregate": "hierarchical FL: an edge aggregator averaged its cell's arrived updates"
    " (client: the edge's cell)",
    "cloud_sync": "hierarchical FL: the edges' models went up to the cloud and the cloud's"
    " model came back over the edge -> cloud backhaul (duration_s, bits)",
    "evaluate": "the global model is evaluated (accuracy, loss)",
    "client_loss": "a client's loss of the global model at an evaluation (learning.fairness_loss)",
    "round_end": "a round ends",
    "background_flow_start": "a background (non-FL) transfer begins",
    "background_flow_end": "a background (non-FL) transfer completes",
    "handover": (
        "a moving device handed over (Event A3): optional columns `source_cell`, `cell`"
        " (the target), `ping_pong`; duration_s: the interruption of its transfers"
    ),
    "radio_link_failure": (
        "a moving device's radio link failed (SINR below Qout for T310): its transfers are"
        " lost; optional column `cell`: the cell lost"
    ),
    "reattach": "after a radio link failure, the device is attached again (`cell`)",
    "position": "a moving device's position (`x_m`, `y_m`), every output.trajectory_every_s",
    "rb_allocation": (
        "a flow's resource blocks change: it holds `n_rb` RBs from now on (0 releases them);"
        " optional columns `flow`, `direction` ('ul'/'dl'), `cell`, `n_rb_total`"
        " (netfl/trace/rb.py)"
    ),
}

VALUE_COLUMNS = ("bits", "rate_bps", "duration_s", "accuracy", "loss")

#: Columns only some runs have, appended after the value columns when any event sets them,
#: null in the other rows: RB allocations of the LTE model (``RB_COLUMNS``), and the local
#: SGD steps asked and done on ``compute_end`` under ``fl.partial_work`` (``STEP_COLUMNS``),
#: and the handovers and positions of moving devices (``MOBILITY_COLUMNS``).
OPTIONAL_COLUMNS: dict[str, pa.DataType] = {
    "n_rb": pa.float64(),
    "n_rb_total": pa.float64(),
    "flow": pa.int64(),
    "direction": pa.string(),
    "cell": pa.int64(),
    "source_cell": pa.int64(),
    "ping_pong": pa.bool_(),
    "x_m": pa.float64(),
    "y_m": pa.float64(),
    "steps_planned": pa.int32(),
    "steps_done": pa.int32(),
}
RB_COLUMNS = ("n_rb", "n_rb_total", "flow", "direction", "cell")
MOBILITY_COLUMNS = ("cell", "source_cell", "ping_pong", "x_m", "y_m")
STEP_COLUMNS = ("steps_planned", "steps_done")

SCHEMA = pa.schema(
    [
        pa.field("t_s", pa.float64()),
        pa.field("round", pa.int32()),
        pa.field("client", pa.int32()),
        pa.field("kind", pa.dictionary(pa.int16(), pa.string())),
        *(pa.field(name, pa.float64()) for name in VALUE_COLUMNS),
    ]
)


#: At most this many rows: :meth:`Timeline.record_many` appends them one by one.
_FEW_ROWS = 16

#: numpy's types of the ``array`` module's "i" and "h" items on this platform.
_INT = np.dtype(f"i{array('i').itemsize}")
_SHORT = np.dtype(f"i{array('h').itemsize}")


class Timeline:
    """Column-wise event recorder; cheap to append, converted to Arrow once.

    Columns are typed arrays (8 bytes a value or less), kinds are small integer codes, and
    value and optional columns are stored sparsely (row index, value) and filled with NaN
    (or null) on export, so a million events take tens of megabytes.

    ``optional`` fixes the optional columns up front (a streamed timeline's parts must all
    have one schema): exactly those are exported, null where no event sets them, and an
    event setting another is refused. Without it (``None``) an optional column is exported
    when some event sets it. :meth:`drain` hands over the rows held so far (written as a
    part by :mod:`netfl.recorder.streaming`) and forgets them; ``len`` counts every row.
    """

    def __init__(self, optional: Iterable[str] | None = None) -> None:
        fixed = None if optional is None else set(optional)
        if fixed is not None and not fixed <= OPTIONAL_COLUMNS.keys():
            raise KeyError(
                f"not optional timeline columns: {sorted(fixed - OPTIONAL_COLUMNS.keys())}"
            )
        self._fixed = None if fixed is None else tuple(n for n in OPTIONAL_COLUMNS if n in fixed)
        self._codes: dict[str, int] = {}
        self._n_drained = 0
        self._drained_until_s = -math.inf
        self._clear()

    def _clear(self) -> None:
        """Empty the buffers (the kind codes stay: every part uses the same ones)."""
        optional = tuple(OPTIONAL_COLUMNS) if self._fixed is None else self._fixed
        self._t = array("d")
        self._round = array("i")
        self._client = array("i")
        self._kind = array("h")
        self._rows: dict[str, array[int]] = {
            name: array("q") for name in (*VALUE_COLUMNS, *optional)
        }
        self._values: dict[str, array[float]] = {name: array("d") for name in VALUE_COLUMNS}
        self._optional: dict[str, list[object]] = {name: [] for name in optional}

    def __len__(self) -> int:
        """Rows recorded, drained or not."""
        return self._n_drained + len(self._t)

    @property
    def schema(self) -> pa.Schema | None:
        """The exported schema when the optional columns are fixed, else None."""
        if self._fixed is None:
            return None
        return pa.schema([*SCHEMA, *(pa.field(n, OPTIONAL_COLUMNS[n]) for n in self._fixed)])

    @property
    def buffered(self) -> int:
        """Rows recorded and not drained yet: the ones held in memory."""
        return len(self._t)

    def _code(self, kind: str) -> int:
        code = self._codes.get(kind)
        if code is None:
            code = self._codes[kind] = len(self._codes)
        return code

    def _check(self, values: dict[str, Any]) -> None:
        if not values.keys() <= self._rows.keys():
            raise KeyError(f"not timeline columns: {sorted(values.keys() - self._rows.keys())}")

    def record(
        self, t_s: float, kind: str, round: int = -1, client: int = -1, **values: float | str
    ) -> None:
        """Append one event. ``values`` keys must be value or optional columns."""
        if values:
            if not values.keys() <= self._rows.keys():  # _check, in place: rows a client update
                self._check(values)
            row = len(self._t)
            rows, numbers = self._rows, self._values
            for name, value in values.items():
                rows[name].append(row)
                column = numbers.get(name)
                if column is not None:
                    column.append(value)  # type: ignore[arg-type]
                else:
                    self._optional[name].append(value)
        self._t.append(t_s)
        self._round.append(round)
        self._client.append(client)
        code = self._codes.get(kind)
        self._kind.append(code if code is not None else self._code(kind))

    def record_rows(self, t_s: float, kind: str, clients: list[int], **columns: list[Any]) -> None:
        """Append one event per client, all at ``t_s``, row ``i`` with the ``i``-th value of
        every column: the rows :meth:`record` would append one by one, in one call."""
        n = len(clients)
        if not n:
            return
        self._check(columns)
        rows = range(len(self._t), len(self._t) + n)
        for name, values in columns.items():
            if len(values) != n:
                raise ValueError(f"column {name!r} has {len(values)} values for {n} rows")
            self._rows[name].extend(rows)
            column = self._values.get(name)
            if column is not None:
                column.extend(values)
            else:
                self._optional[name].extend(values)
        self._t.extend([t_s] * n)
        self._round.extend([-1] * n)
        self._client.extend(clients)
        code = self._codes.get(kind)
        self._kind.extend([code if code is not None else self._code(kind)] * n)

    def record_many(
        self, t_s: float, kind: str, round: int, clients: Iterable[int], **values: float
    ) -> None:
        """Append one event per client, all at ``t_s`` with the same values (``clients``:
        any iterable of ints; a numpy array is appended without a Python loop)."""
        if isinstance(clients, list) and 0 < len(clients) <= _FEW_ROWS:
            # numpy's per-call cost is more than a few rows appended one by one (the
            # asynchronous protocols select a client or two at a time); same rows.
            for client in clients:  # array("d") stores a value as float(value) would
                self.record(t_s, kind, int(round), int(client), **values)
            return
        ids = (
            np.fromiter(clients, dtype=np.int64) if not isinstance(clients, np.ndarray) else clients
        )
        first, n = len(self._t), len(ids)
        self._check(values)
        for name, value in values.items():
            self._rows[name].frombytes(np.arange(first, first + n, dtype=np.int64).tobytes())
            self._values[name].frombytes(np.full(n, float(value)).tobytes())
        self._t.frombytes(np.full(n, float(t_s)).tobytes())
        self._round.frombytes(np.full(n, int(round), dtype=_INT).tobytes())
        self._client.frombytes(ids.astype(_INT).tobytes())
        self._kind.frombytes(np.full(n, self._code(kind), dtype=_SHORT).tobytes())

    def _column(self, name: str) -> np.ndarray:
        column = np.full(len(self._t), math.nan)
        rows: Any = np.frombuffer(self._rows[name], dtype=np.int64) if self._rows[name] else []
        column[rows] = np.frombuffer(self._values[name], dtype=np.float64)
        return column

    def _optional_column(self, name: str) -> pa.Array:
        column: list[object] = [None] * len(self._t)
        for row, value in zip(self._rows[name], self._optional[name], strict=True):
            column[row] = value
        return pa.array(column, OPTIONAL_COLUMNS[name])

    def to_arrow(self, *, sort_by_time: bool = False) -> pa.Table:
        """The events held (all of them unless some were drained) as an Arrow table, in
        recording order, or with ``sort_by_time`` stably sorted by ``t_s`` (what
        ``timeline.parquet`` holds). The sort permutes the numpy columns before Arrow sees
        them, and is skipped when the events were recorded in time order (the usual case),
        so the table is built once, without a sorted copy."""
        t = np.frombuffer(self._t, dtype=np.float64)
        order: np.ndarray | None = None
        if sort_by_time and len(t) > 1 and not bool(np.all(t[1:] >= t[:-1])):
            order = np.argsort(t, kind="stable")

        def arranged(values: np.ndarray) -> np.ndarray:
            return values if order is None else values[order]

        kinds = pa.DictionaryArray.from_arrays(
            pa.array(arranged(np.frombuffer(self._kind, dtype=np.int16)), pa.int16()),
            pa.array(list(self._codes), pa.string()),
        )
        columns = [
            pa.array(arranged(t), pa.float64()),
            pa.array(arranged(np.frombuffer(self._round, dtype=np.int32)), pa.int32()),
            pa.array(arranged(np.frombuffer(self._client, dtype=np.int32)), pa.int32()),
            kinds,
            *(pa.array(arranged(self._column(name)), pa.float64()) for name in VALUE_COLUMNS),
        ]
        schema = SCHEMA
        for name, dtype in OPTIONAL_COLUMNS.items():
            if name in self._optional and (self._fixed is not None or self._rows[name]):
                optional = self._optional_column(name)
                columns.append(optional if order is None else optional.take(pa.array(order)))
                schema = schema.append(pa.field(name, dtype))
        return pa.Table.from_arrays(columns, schema=schema)

    def drain(self) -> pa.Table:
        """The rows held, sorted by time (:meth:`to_arrow`), and forget them.

        Events are recorded at the simulated time they happen, or (a response) earlier in
        the same round, so rows drained at a round's end never precede a row drained
        before: the drained tables, concatenated, are the whole timeline sorted by time. A
        row recorded at a time already drained breaks that, and raises."""
        t = np.frombuffer(self._t, dtype=np.float64)
        if len(t) and float(t.min()) < self._drained_until_s:
            raise RuntimeError(
                f"a timeline event at t={float(t.min())!r} s was recorded after the events up"
                f" to t={self._drained_until_s!r} s were written out"
            )
        table = self.to_arrow(sort_by_time=True)
        if len(t):
            self._drained_until_s = float(t.max())
        self._n_drained += len(t)
        del t  # the buffer it views is replaced
        self._clear()
        return table
