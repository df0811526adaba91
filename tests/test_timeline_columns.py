"""Optional timeline columns (RB allocations): present only when used, null elsewhere."""

from __future__ import annotations

import pytest

from netfl.recorder.timeline import SCHEMA, Timeline


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


def test_sorted_by_time_is_a_stable_sort_of_every_column():
    # Events recorded out of time order (t 2, 1, 2, 0, 1): the sorted table is the stable
    # sort by t_s, value and optional columns moving with their rows.
    timeline = Timeline()
    timeline.record(2.0, "a", 0, 1, bits=10.0)
    timeline.record(1.0, "b", 0, 2, n_rb=3.0, direction="ul")
    timeline.record(2.0, "c", 1, 3)
    timeline.record(0.0, "a", 1, 4, duration_s=5.0)
    timeline.record(1.0, "c", 2, 5, direction="dl")
    table = timeline.to_arrow(sort_by_time=True).to_pydict()
    assert table["t_s"] == [0.0, 1.0, 1.0, 2.0, 2.0]
    assert table["client"] == [4, 2, 5, 1, 3]
    assert table["kind"] == ["a", "b", "c", "a", "c"]
    assert table["duration_s"][0] == 5.0 and table["bits"][3] == 10.0
    assert table["n_rb"] == [None, 3.0, None, None, None]
    assert table["direction"] == [None, "ul", "dl", None, None]
    # Recording order unless asked; and a timeline already in order is returned as is.
    assert timeline.to_arrow().column("client").to_pylist() == [1, 2, 3, 4, 5]
    ordered = Timeline()
    for t in (0.0, 1.0, 1.0, 3.0):
        ordered.record(t, "a")
    sorted_, plain = ordered.to_arrow(sort_by_time=True), ordered.to_arrow()
    assert sorted_.column("t_s").to_pylist() == [0.0, 1.0, 1.0, 3.0]
    assert sorted_.to_pandas().equals(plain.to_pandas())  # NaN-aware


def test_rows_recorded_together_are_the_rows_recorded_one_by_one():
    """Timeline.record_rows (a step's handovers in one call) appends what record would."""
    rows = [(4, 0.05, 7, 2, False), (9, 0.05, 1, 7, True), (12, 0.05, 30, 29, False)]
    one, together = Timeline(), Timeline()
    for timeline in (one, together):
        timeline.record(0.5, "round_start", 0)
    for client, duration, cell, source, ping in rows:
        one.record(
            1.25, "handover", client=client, duration_s=duration, cell=cell,
            source_cell=source, ping_pong=ping,
        )  # fmt: skip
    clients, durations, cells, sources, pings = (list(c) for c in zip(*rows, strict=True))
    together.record_rows(
        1.25, "handover", clients, duration_s=durations, cell=cells, source_cell=sources,
        ping_pong=pings,
    )  # fmt: skip
    together.record_rows(2.0, "handover", [])
    assert repr(together.to_arrow().to_pydict()) == repr(one.to_arrow().to_pydict())  # NaN too
    with pytest.raises(ValueError, match="2 values for 3 rows"):
        together.record_rows(3.0, "handover", clients, cell=cells[:2])
    with pytest.raises(KeyError, match="not timeline columns"):
        together.record_rows(3.0, "handover", clients, speed=cells)
