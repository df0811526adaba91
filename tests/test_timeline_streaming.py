"""The timeline written in parts as the run goes (issue 16, item 3): memory flat in rounds,
the parts readable mid-run, and the final ``timeline.parquet`` the same rows as before."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

from netfl import load_run
from netfl.recorder import streaming
from netfl.recorder.streaming import PARTS_DIR, part_paths, timeline_stream
from netfl.recorder.timeline import OPTIONAL_COLUMNS, SCHEMA, Timeline
from netfl.scenario import scenario_from_data
from netfl.simulation import simulate

ROWS_PER_ROUND = 8


def _round(timeline: Timeline, r: int) -> None:
    """Eight rows at t = r .. r + 0.6, one recorded late (a response reported in its round)."""
    timeline.record(float(r), "round_start", r)
    for c in range(5):
        timeline.record(r + 0.1 * (c + 1), "upload_end", r, c, bits=float(c))
    timeline.record(r + 0.05, "response", r, 9, duration_s=0.05)
    timeline.record(r + 0.6, "round_end", r)


def test_parts_are_written_at_round_ends_and_the_whole_is_their_concatenation(tmp_path):
    streamed, held = Timeline(optional=()), Timeline(optional=())
    stream = timeline_stream(streamed, tmp_path, part_rows=10)
    for r in range(9):
        _round(streamed, r)
        _round(held, r)
        stream.round_ended()
        # Never more than one part and one round held, whatever the rounds.
        assert streamed.buffered < 10
    assert stream.peak_buffered <= 10 + ROWS_PER_ROUND
    assert len(streamed) == 9 * ROWS_PER_ROUND
    parts = part_paths(tmp_path)
    assert [p.name for p in parts] == [f"part-{16 * i:012d}.arrow" for i in range(4)]
    assert [feather.read_table(p).num_rows for p in parts] == [16] * 4
    concatenated = pd.concat([feather.read_table(p).to_pandas() for p in parts], ignore_index=True)

    stream.finish()
    assert not (tmp_path / PARTS_DIR).exists()
    whole = pq.read_table(tmp_path / "timeline.parquet")
    assert whole.to_pandas().equals(held.to_arrow(sort_by_time=True).to_pandas())
    assert whole.schema == SCHEMA
    assert pq.ParquetFile(tmp_path / "timeline.parquet").metadata.num_row_groups == 5
    # The parts were the timeline's start, sorted by time (the late response moved up).
    assert whole.to_pandas().iloc[:64].equals(concatenated)
    assert list(concatenated["kind"].astype(str)[:3]) == ["round_start", "response", "upload_end"]


def test_a_short_run_writes_its_timeline_in_one_go(tmp_path):
    timeline = Timeline(optional=())
    stream = timeline_stream(timeline, tmp_path, part_rows=100)
    _round(timeline, 0)
    stream.round_ended()
    stream.finish()
    assert not (tmp_path / PARTS_DIR).exists()
    assert pq.ParquetFile(tmp_path / "timeline.parquet").metadata.num_rows == ROWS_PER_ROUND


def test_a_new_stream_clears_the_parts_a_killed_run_left(tmp_path):
    (tmp_path / PARTS_DIR).mkdir()
    (tmp_path / PARTS_DIR / "part-00007.arrow").write_bytes(b"stale")
    timeline_stream(Timeline(optional=()), tmp_path, part_rows=5)
    assert part_paths(tmp_path) == []


def test_a_row_recorded_before_the_time_written_out_is_refused():
    timeline = Timeline(optional=())
    _round(timeline, 3)
    timeline.drain()
    timeline.record(3.6, "round_start", 4)  # the last drained time itself is fine
    timeline.record(3.5, "upload_end", 3, 1)
    with pytest.raises(RuntimeError, match=r"t=3.5 s was recorded after .* t=3.6 s"):
        timeline.drain()


def test_fixed_optional_columns_are_exported_even_when_unset_and_others_refused():
    rb = Timeline(optional=OPTIONAL_COLUMNS)
    rb.record(0.0, "round_start", 0)
    table = rb.to_arrow()
    assert table.schema.names == [*SCHEMA.names, *OPTIONAL_COLUMNS]
    assert table.column("n_rb").to_pylist() == [None]
    plain = Timeline(optional=())
    with pytest.raises(KeyError, match="not timeline columns"):
        plain.record(0.0, "rb_allocation", n_rb=3.0)
    with pytest.raises(KeyError, match="not optional timeline columns"):
        Timeline(optional=["speed"])
    assert rb.schema == table.schema and Timeline().schema is None


def test_only_a_timeline_with_a_fixed_schema_is_streamed(tmp_path):
    with pytest.raises(ValueError, match="optional columns fixed up front"):
        timeline_stream(Timeline(), tmp_path)


def _lte(tiny: dict[str, Any], rounds: int) -> dict[str, Any]:
    tiny["radio"] = {"model": "lte", "record_rb_allocations": True}
    tiny["learning"] = None
    tiny["fl"].update({"rounds": rounds, "model_size_bits": 1.0e6})
    return tiny


def _plain(timeline: pd.DataFrame) -> pd.DataFrame:
    return timeline.assign(kind=timeline["kind"].astype(str)).reset_index(drop=True)


def test_a_streamed_run_is_readable_mid_run_and_ends_with_the_same_timeline(
    tiny, tmp_path, monkeypatch
):
    held = simulate(scenario_from_data(_lte(tiny, 6)), tmp_path / "held").run_dir
    run_dir = tmp_path / "streamed"
    seen: list[tuple[int, pd.DataFrame | None]] = []

    def peek(record: Any) -> None:
        # What a SIGKILL here would leave: the parts written so far, read by load_run.
        parts = part_paths(run_dir)
        seen.append((len(parts), load_run(run_dir).timeline if parts else None))

    monkeypatch.setattr(streaming, "PART_ROWS", 40)
    simulate(scenario_from_data(_lte(tiny, 6)), run_dir, on_round=peek)
    assert not (run_dir / PARTS_DIR).exists()
    whole = load_run(held).timeline
    pd.testing.assert_frame_equal(load_run(run_dir).timeline, whole)
    assert whole["n_rb"].notna().any()
    # Parts were written as the run went, and each time they read as the timeline's start.
    counts = [n for n, _ in seen]
    assert counts == sorted(counts) and counts[-1] >= 3
    for n_parts, partial in seen:
        if partial is not None:
            assert len(partial) >= 40 * n_parts
            pd.testing.assert_frame_equal(_plain(partial), _plain(whole.iloc[: len(partial)]))
