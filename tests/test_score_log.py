"""The strategy's score log (``strategy.parquet``): compact in memory, and a checkpoint's
head of it is the log as it was (what a resumed run writes on from)."""

from __future__ import annotations

import tracemalloc

import numpy as np

from netfl.trace.strategy import ScoreLog


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
