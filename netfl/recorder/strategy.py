"""The strategy's internal scores per round (``strategy.parquet``).

Long format, one row per (round, score name, client): ``round``, ``t_s`` (simulated time
of the selection), ``client``, ``score`` (the name the strategy gave it, e.g. ``ucb``,
``backlog``, ``tau_bar``) and ``value``. Pivot in pandas for a round x client matrix, e.g.
the virtual-queue backlogs of RBCS-F (:func:`netfl.trace.metrics.score_matrix`).

Wiring (server side): after each ``select`` call
``score_log.record(round, env.now, strategy.scores())``; at the end write
``score_log.to_arrow()`` to ``strategy.parquet``.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from itertools import repeat

import numpy as np
import pyarrow as pa

SCHEMA = pa.schema(
    [
        pa.field("round", pa.int32()),
        pa.field("t_s", pa.float64()),
        pa.field("client", pa.int32()),
        pa.field("score", pa.dictionary(pa.int16(), pa.string())),
        pa.field("value", pa.float64()),
    ]
)


class ScoreLog:
    """Column-wise recorder of ``Strategy.scores()``, converted to Arrow once.

    Typed arrays (26 bytes a row, score names as small integer codes in order of first
    use) rather than lists of Python objects (about 95 bytes a row): RBCS-F records three
    scores for every client every round, 30 million rows for 10,000 devices and 1,000
    rounds. :meth:`drain` hands the rows held over (written as a part,
    :mod:`netfl.recorder.streaming`) and forgets them; ``len`` counts every row."""

    _n_drained = 0  # (class defaults: checkpoints pickled before streaming lack them)
    _names_drained = 0

    def __init__(self) -> None:
        self._n_drained = 0
        self._names_drained = 0  # names in use when the rows were last drained
        self._names: dict[str, int] = {}
        self._clear()

    def _clear(self) -> None:
        self._round = array("i")
        self._t = array("d")
        self._client = array("i")
        self._score = array("h")
        self._value = array("d")

    def __len__(self) -> int:
        """Rows recorded, drained or not."""
        return self._n_drained + len(self._round)

    @property
    def buffered(self) -> int:
        """Rows recorded and not drained yet: the ones held in memory."""
        return len(self._round)

    @property
    def n_drained(self) -> int:
        """Rows drained (written out as parts) so far."""
        return self._n_drained

    def record(self, round: int, t_s: float, scores: Mapping[str, Mapping[int, float]]) -> None:
        """Append every value of ``scores`` (``{name: {client: value}}``) for this round."""
        for name, values in scores.items():
            n = len(values)
            if n == 0:
                continue
            code = self._names.setdefault(str(name), len(self._names))
            self._round.extend(repeat(int(round), n))
            self._t.extend(repeat(float(t_s), n))
            self._score.extend(repeat(code, n))
            self._client.extend(int(c) for c in values)
            self._value.extend(float(v) for v in values.values())

    def head(self, n: int) -> ScoreLog:
        """The log as it was when it had ``n`` rows (rows drained since refused)."""
        held = n - self._n_drained
        if not 0 <= held <= len(self._round):
            raise ValueError(f"no head of {n} rows: {self._n_drained} drained, {len(self)} in all")
        head = ScoreLog()
        head._n_drained, head._names_drained = self._n_drained, self._names_drained
        for name in ("_round", "_t", "_client", "_score", "_value"):
            setattr(head, name, getattr(self, name)[:held])
        # Codes are given in order of first use: the head's names are the first ones.
        used = max(max(head._score, default=-1) + 1, self._names_drained)
        head._names = dict(list(self._names.items())[:used])
        return head

    def drain(self) -> pa.Table:
        """The rows held (:meth:`to_arrow`), which are then forgotten."""
        table = self.to_arrow()
        self._n_drained += len(self._round)
        self._names_drained = len(self._names)
        self._clear()
        return table

    def to_arrow(self) -> pa.Table:
        """The rows held (all of them unless some were drained) as an Arrow table."""
        score = pa.DictionaryArray.from_arrays(
            pa.array(np.frombuffer(self._score, dtype=np.int16), pa.int16()),
            pa.array(list(self._names), pa.string()),
        )
        columns = [
            pa.array(np.frombuffer(self._round, dtype=np.int32), pa.int32()),
            pa.array(np.frombuffer(self._t, dtype=np.float64), pa.float64()),
            pa.array(np.frombuffer(self._client, dtype=np.int32), pa.int32()),
            score,
            pa.array(np.frombuffer(self._value, dtype=np.float64), pa.float64()),
        ]
        return pa.Table.from_arrays(columns, schema=SCHEMA)
