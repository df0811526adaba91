"""A selection context whose arrays are computed when first read (issue 27): the same
context as the eager one, nothing gathered that a strategy does not read, the reports as
they were when it was made even if they change before it is read, and picklable."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from netfl.fl.asynchronous import _IdleColumns, _updated
from netfl.fl.exchange import Outcome
from netfl.fl.feedback import ReportedTimes
from netfl.radio.network import Transfer
from netfl.selection.base import DEFERRED_COLUMNS, SelectionContext

CANDIDATES = np.array([1, 3, 4], dtype=np.int64)


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

    columns = _IdleColumns(CANDIDATES, reported, n_samples)
    deferred = SelectionContext.deferred(
        columns, ("mu",), feature, round=2, now_s=5.0, candidates=CANDIDATES, budget=1
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


@pytest.mark.parametrize(
    ("removed", "added", "expected"),
    [
        ({4}, {5}, [1, 3, 5, 7]),
        ({1, 7}, {0, 8}, [0, 3, 4, 8]),
        (set(), {2}, [1, 2, 3, 4, 7]),
        ({3}, {2}, [1, 2, 4, 7]),  # the added one lands where the removed one was
        ({3}, set(), [1, 4, 7]),
    ],
)
def test_idle_candidates_updated_in_one_copy(removed, added, expected):
    ids = np.array([1, 3, 4, 7], dtype=np.int64)
    updated = _updated(ids, removed, added)
    assert updated.tolist() == expected
    assert not updated.flags.writeable
    assert ids.tolist() == [1, 3, 4, 7]  # a new array: contexts keep theirs
