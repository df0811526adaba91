"""A selection context whose arrays are computed when first read (issue 27): the same
context as the eager one, nothing gathered that a strategy does not read, the reports as
they were when it was made even if they change before it is read, and picklable."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from netfl.fl.asynchronous import _IdleCandidates, _IdleColumns
from netfl.fl.exchange import Outcome
from netfl.fl.feedback import ReportedTimes
from netfl.radio.network import Transfer
from netfl.selection.base import DEFERRED_COLUMNS, SelectionContext

CANDIDATES = np.array([1, 3, 4], dtype=np.int64)
#: A pool of clients 1-5 (rows 0-4) with 2 and 5 (rows 1 and 4) in flight: CANDIDATES idle.
POOL = np.array([1, 2, 3, 4, 5], dtype=np.int64)


def _idle(pool: np.ndarray, busy_rows: list[int], n_clients: int = 6) -> _IdleCandidates:
    pool_row = np.full(n_clients, -1, dtype=np.int64)
    pool_row[pool] = np.arange(len(pool))
    return _IdleCandidates(pool, pool_row, busy_rows)


def _reported() -> ReportedTimes:
    reported = ReportedTimes(6)
    reported.update_s[:] = np.arange(6) * 1.0
    reported.upload_s[:] = np.arange(6) * 2.0
    reported.misses[:] = np.arange(6)
    return reported


def _contexts(
    reported: ReportedTimes, made: list[str]
) -> tuple[SelectionContext, SelectionContext]:
    n_samples = np.arange(6) * 10
    mu = np.arange(6) / 10

    def feature(name: str) -> np.ndarray:
        made.append(name)
        return mu[CANDIDATES]

    idle = _idle(POOL, [1, 4])
    columns = _IdleColumns(idle, reported, n_samples)
    deferred = SelectionContext.deferred(
        columns, ("mu",), feature, round=2, now_s=5.0, candidates=idle, budget=1
    )
    eager = SelectionContext(
        round=2,
        now_s=5.0,
        candidates=CANDIDATES,
        budget=1,
        update_time_s=reported.update_s[CANDIDATES],
        upload_time_s=reported.upload_s[CANDIDATES],
        n_samples=n_samples[CANDIDATES],
        features={"mu": mu[CANDIDATES]},
        misses=reported.misses[CANDIDATES],
    )
    return deferred, eager


def _assert_same(a: SelectionContext, b: SelectionContext) -> None:
    for spec in dataclasses.fields(SelectionContext):
        left, right = getattr(a, spec.name), getattr(b, spec.name)
        if spec.name == "features":
            assert left.keys() == right.keys()
            for name in left:
                np.testing.assert_array_equal(left[name], right[name])
        else:
            np.testing.assert_array_equal(left, right, err_msg=spec.name)


def test_the_deferred_context_is_the_eager_one():
    made: list[str] = []
    deferred, eager = _contexts(_reported(), made)
    assert made == []  # nothing gathered yet
    assert "candidates" not in deferred.__dict__
    assert deferred.n_candidates == 3 and deferred.candidate(1) == 3
    assert "candidates" not in deferred.__dict__  # counted and picked without gathering
    _assert_same(deferred, eager)  # every field read
    assert made == ["mu"]
    for name in ("candidates", *DEFERRED_COLUMNS):
        assert not getattr(deferred, name).flags.writeable, name
    with pytest.raises(AttributeError):
        deferred.not_a_field  # noqa: B018


def test_it_reads_the_reports_as_they_were_when_it_was_made():
    reported = _reported()
    deferred, _ = _contexts(reported, [])
    first = deferred.update_time_s.copy()
    # A client completes: the reports change before the strategy reads the rest.
    out = Outcome(client=3, order=0, status="completed", ready_s=9.0)
    out.download = Transfer(3, 1.0, 0.0, 1.0)
    out.upload = Transfer(3, 1.0, 9.0, 10.0)
    reported.observe([out], 0.0)
    assert reported.update_s[3] == 8.0 and reported.upload_s[3] == 1.0
    np.testing.assert_array_equal(deferred.update_time_s, first)
    np.testing.assert_array_equal(deferred.upload_time_s, [2.0, 6.0, 8.0])


def test_it_pickles_with_its_arrays_not_the_server():
    deferred, eager = _contexts(_reported(), [])
    copy = pickle.loads(pickle.dumps(deferred))
    _assert_same(copy, eager)
    assert "_columns" not in copy.__dict__


@given(
    pool=st.lists(st.integers(0, 40), unique=True, max_size=25).map(sorted),
    data=st.data(),
)
def test_idle_candidates_are_the_pool_without_the_clients_in_flight(pool, data):
    busy = sorted(data.draw(st.sets(st.integers(0, max(len(pool) - 1, 0)))) if pool else [])
    idle = _idle(np.array(pool, dtype=np.int64), busy, n_clients=41)
    expected = [c for row, c in enumerate(pool) if row not in busy]
    assert len(idle) == len(expected)
    assert idle.gather().tolist() == expected
    assert not idle.gather().flags.writeable
    assert [idle.at(j) for j in range(len(expected))] == expected
    assert [idle.at(-j - 1) for j in range(len(expected))] == expected[::-1]
    assert [c for c in range(-2, 44) if idle.contains(c)] == expected
    with pytest.raises(IndexError):
        idle.at(len(expected))


class _Reader:
    def __init__(self) -> None:
        self.frozen = 0

    def freeze(self) -> None:
        self.frozen += 1


def test_readers_that_died_are_not_kept():
    # One reader per selection: those gone before the reports change are dropped, not
    # kept (the list stays bounded by the live ones), and the live one is frozen once.
    reported = _reported()
    alive = _Reader()
    reported.read_later(alive)
    for _ in range(10_000):
        reported.read_later(_Reader())  # dies at once
    assert len(reported._readers) <= 2 * 1 + 64 + 1
    out = Outcome(client=3, order=0, status="dropped", left_s=2.0)
    reported.observe([out], 0.0)
    assert alive.frozen == 1 and reported._readers == []
