"""RB usage from rb_allocation events: a step function that conserves what flows hold."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.errors import MissingDataError
from netfl.trace.rb import rb_usage, time_average


def _events(rows, **extra):
    frame = pd.DataFrame(rows, columns=["t_s", "client", "n_rb"])
    frame["round"] = 0
    frame["kind"] = pd.Categorical(["rb_allocation"] * len(frame))
    for name, values in extra.items():
        frame[name] = values
    return frame


def test_two_uploads_share_the_cell():
    # Client 1 holds 10 RBs from t=0; client 2 arrives at t=2 and both get 5; 1 leaves at 4.
    events = _events(
        [(0, 1, 10), (2, 1, 5), (2, 2, 5), (4, 1, 0), (4, 2, 10), (6, 2, 0)],
        n_rb_total=10.0,
    )
    usage = rb_usage(events)
    assert usage["t_s"].tolist() == [0, 2, 4, 6]
    assert usage["n_rb_used"].tolist() == [10, 10, 10, 0]
    assert usage["utilisation"].tolist() == [1, 1, 1, 0]
    # Busy 6 s out of 8 s.
    assert time_average(usage, "utilisation", t_end_s=8.0)["ul"] == pytest.approx(0.75)


def test_directions_and_background_flows_are_separate():
    events = _events(
        [(0, -1, 4), (1, -1, 6), (1, 3, 2), (3, -1, 0), (3, -1, 0)],
        flow=[100, 101, 7, 100, 101],
        direction=["dl", "dl", "ul", "dl", "dl"],
    )
    usage = rb_usage(events).set_index(["direction", "t_s"])["n_rb_used"]
    assert usage.loc["dl"].tolist() == [4, 10, 0]
    assert usage.loc["ul"].tolist() == [2]
    assert np.isnan(rb_usage(events)["utilisation"]).all()  # total unknown


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 20), st.integers(0, 4), st.integers(0, 8)),
        min_size=1,
        max_size=40,
    )
)
def test_usage_is_the_sum_of_current_holdings(rows):
    """Property: after each time, RBs in use = sum over flows of their latest allocation."""
    rows = sorted(rows, key=lambda r: r[0])
    usage = rb_usage(_events(rows)).set_index("t_s")["n_rb_used"]
    for t in sorted({r[0] for r in rows}):
        latest = {}
        for time, client, n in rows:
            if time <= t:
                latest[client] = n
        assert usage.loc[t] == sum(latest.values())
        assert usage.loc[t] >= 0


def test_no_rb_events_is_a_clear_error(timing_run):
    timeline = pd.read_parquet(timing_run / "timeline.parquet")
    with pytest.raises(MissingDataError, match="no 'rb_allocation' events"):
        rb_usage(timeline)
