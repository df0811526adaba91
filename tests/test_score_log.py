"""The strategy's score log (``strategy.parquet``): compact in memory, and a checkpoint's
head of it is the log as it was (what a resumed run writes on from)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pyarrow as pa
import pytest

from netfl.recorder.strategy import ScoreLog


def _round(log: ScoreLog, r: int, n: int, names: tuple[str, ...]) -> None:
    values = np.linspace(0.0, 1.0, n) + r
    log.record(r, 10.0 * r, {name: dict(enumerate(values.tolist())) for name in names})


def test_a_head_is_the_log_recorded_up_to_there():
    whole, short = ScoreLog(), ScoreLog()
    for log, rounds in ((whole, 4), (short, 2)):
        log.record(0, 0.0, {"empty": {}})  # a score with no values adds no name
        for r in range(rounds):
            _round(log, r, 3, ("backlog",) if r < 2 else ("backlog", "tau_hat"))
    head = whole.head(len(short))
    assert head.to_arrow().equals(short.to_arrow())
    assert head.to_arrow().column("score").chunk(0).dictionary.to_pylist() == ["backlog"]
    assert whole.to_arrow().column("score").to_pylist()[-4:] == ["backlog"] + ["tau_hat"] * 3


def test_a_row_takes_about_26_bytes():
    # RBCS-F keeps three scores of every client every round: 30 million rows for 10,000
    # devices and 1,000 rounds. Lists of Python objects took about 95 B a row.
    log = ScoreLog()
    tracemalloc.start()
    for r in range(10):
        _round(log, r, 10_000, ("backlog", "tau_hat", "tau_bar"))
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(log) == 300_000
    assert held / len(log) < 32


def test_drained_rows_and_a_later_head_make_the_whole_log():
    # What a streamed run with checkpoints does: parts drained at round ends, then a
    # checkpoint's head of the rows held; the parts and the head are the log to there.
    whole, log = ScoreLog(), ScoreLog()
    drained = []
    for r in range(5):
        names = ("backlog",) if r < 3 else ("backlog", "tau_hat")
        _round(whole, r, 4, names)
        _round(log, r, 4, names)
        if r in (1, 2):
            drained.append(log.drain())
    assert len(log) == len(whole) == 28 and log.buffered == 16 and log.n_drained == 12
    head = log.head(16)  # round 3's backlog rows; tau_hat comes after
    assert head.n_drained == 12 and head.buffered == 4
    assert head.to_arrow().column("score").chunk(0).dictionary.to_pylist() == ["backlog"]
    parts = pa.concat_tables([*drained, head.to_arrow()])
    assert parts.to_pylist() == whole.to_arrow().slice(0, 16).to_pylist()
    with pytest.raises(ValueError, match="no head of 11 rows: 12 drained"):
        log.head(11)
