"""Named random streams: reproducible, independent, insensitive to order."""

from __future__ import annotations

import numpy as np
import pytest

from netfl.rng import Streams


def test_same_seed_same_stream():
    assert np.array_equal(Streams(5).get("a").random(4), Streams(5).get("a").random(4))


def test_stream_does_not_depend_on_what_else_was_drawn():
    first = Streams(5)
    first.get("b").random(100)
    assert np.array_equal(first.get("a").random(4), Streams(5).get("a").random(4))


def test_names_and_seeds_give_different_streams():
    a, b = Streams(5).get("a").random(4), Streams(5).get("b").random(4)
    assert not np.array_equal(a, b)
    assert not np.array_equal(a, Streams(6).get("a").random(4))


def test_a_stream_is_issued_once():
    streams = Streams(1)
    streams.get("x")
    with pytest.raises(RuntimeError, match="already issued"):
        streams.get("x")
