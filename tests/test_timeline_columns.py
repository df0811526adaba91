"""Optional timeline columns (RB allocations): present only when used, null elsewhere."""

from __future__ import annotations

import pytest

from netfl.trace.timeline import SCHEMA, Timeline


def test_without_optional_columns_the_schema_is_unchanged():
    timeline = Timeline()
    timeline.record(0.0, "round_start", 0)
    assert timeline.to_arrow().schema == SCHEMA


def test_optional_columns_are_null_where_not_set():
    timeline = Timeline()
    timeline.record(0.0, "round_start", 0)
    timeline.record(1.0, "rb_allocation", client=3, n_rb=10.0, flow=7, direction="ul")
    timeline.record(2.0, "round_end", 0)
    table = timeline.to_arrow().to_pydict()
    assert table["n_rb"] == [None, 10.0, None]
    assert table["flow"] == [None, 7, None]
    assert table["direction"] == [None, "ul", None]
    assert "n_rb_total" not in table


def test_unknown_columns_are_still_refused():
    with pytest.raises(KeyError, match="not timeline columns"):
        Timeline().record(0.0, "x", speed=3.0)
