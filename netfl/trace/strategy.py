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

from collections.abc import Mapping

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
    """Column-wise recorder of ``Strategy.scores()``, converted to Arrow once."""

    def __init__(self) -> None:
        self._round: list[int] = []
        self._t: list[float] = []
        self._client: list[int] = []
        self._score: list[str] = []
        self._value: list[float] = []

    def __len__(self) -> int:
        return len(self._round)

    def record(self, round: int, t_s: float, scores: Mapping[str, Mapping[int, float]]) -> None:
        """Append every value of ``scores`` (``{name: {client: value}}``) for this round."""
        for name, values in scores.items():
            n = len(values)
            self._round.extend([int(round)] * n)
            self._t.extend([float(t_s)] * n)
            self._score.extend([str(name)] * n)
            self._client.extend(int(c) for c in values)
            self._value.extend(float(v) for v in values.values())

    def head(self, n: int) -> ScoreLog:
        """A copy holding the first ``n`` rows (the log as it was ``n`` rows ago)."""
        head = ScoreLog()
        for name in ("_round", "_t", "_client", "_score", "_value"):
            setattr(head, name, getattr(self, name)[:n])
        return head

    def to_arrow(self) -> pa.Table:
        score = pa.array(self._score, pa.string()).dictionary_encode()
        columns = [
            pa.array(self._round, pa.int32()),
            pa.array(self._t, pa.float64()),
            pa.array(self._client, pa.int32()),
            score.cast(SCHEMA.field("score").type),
            pa.array(self._value, pa.float64()),
        ]
        return pa.Table.from_arrays(columns, schema=SCHEMA)
