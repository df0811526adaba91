"""Phases reconstructed from the timeline: exact on a hand-written log, consistent on a run."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from netfl import load_run
from netfl.trace.phases import PHASES, phase_intervals, phase_table


def _timeline(rows):
    frame = pd.DataFrame(rows, columns=["t_s", "round", "client", "kind"])
    frame["kind"] = frame["kind"].astype("category")
    frame["bits"] = np.nan
    frame["some_future_column"] = 1.0  # extra columns are ignored
    return frame


LOG = _timeline(
    [
        (0.0, 0, -1, "round_start"),
        (0.0, 0, 1, "select"),
        (0.0, 0, 2, "select"),
        (0.0, 0, 1, "download_start"),
        (0.0, 0, 2, "download_start"),
        (1.0, 0, 1, "download_end"),
        (1.5, 0, 1, "compute_start"),  # 0.5 s in the compute queue
        (2.0, 0, 2, "download_end"),
        (2.0, 0, 2, "compute_start"),
        (4.0, 0, 1, "compute_end"),
        (4.0, 0, 1, "some_new_event"),  # a kind the reader does not know
        (4.5, 0, 1, "upload_start"),  # 0.5 s waiting for the radio
        (6.0, 0, 1, "upload_end"),
        (7.0, 0, 2, "deadline_miss"),  # client 2 still computing
        (7.0, 0, -1, "round_end"),
    ]
)


def test_phases_of_a_hand_written_log():
    table = phase_table(LOG).set_index("client")
    one = table.loc[1]
    assert [one[f"{p}_s"] for p in PHASES] == [1.0, 0.5, 2.5, 0.5, 1.5]
    assert one["outcome"] == "completed"
    assert one["end_s"] == 6.0
    two = table.loc[2]
    # Cut while computing: compute runs to the cut, nothing after it.
    assert two["download_s"] == 2.0
    assert two["wait_s"] == 0.0
    assert two["compute_s"] == 5.0
    assert np.isnan(two["upload_wait_s"]) and np.isnan(two["upload_s"])
    assert two["outcome"] == "deadline_miss"
    assert two["end_s"] == 7.0


def test_intervals_tile_each_client_round():
    intervals = phase_intervals(phase_table(LOG))
    for _, part in intervals.groupby("client"):
        assert np.allclose(part["start_s"].to_numpy()[1:], part["end_s"].to_numpy()[:-1])
    assert set(intervals.loc[intervals["client"] == 2, "phase"]) == {"download", "wait", "compute"}


def test_phases_of_a_run_match_the_placeholder_timing(timing_run):
    """Fixed rates: download = M / r_dl, compute = E D / sps, upload = M / r_ul (no waits)."""
    run = load_run(timing_run)
    phases = run.phases()
    assert run.phases() is phases  # reconstructed once per run (Gantt chart, report)
    clients = run.clients.set_index("client")
    bits = json.loads((timing_run / "summary.json").read_text())["model_size_bits"]
    c = clients.loc[phases["client"]]
    assert phases["download_s"].to_numpy() == pytest.approx(bits / c["rate_dl_bps"].to_numpy())
    assert (phases["wait_s"] == 0).all()
    full = phases["outcome"] == "completed"
    expected_compute = (c["n_samples"] / c["compute_sps"]).to_numpy()
    assert phases.loc[full, "compute_s"].to_numpy() == pytest.approx(expected_compute[full])
    assert phases.loc[full, "upload_s"].to_numpy() == pytest.approx(
        bits / c["rate_ul_bps"].to_numpy()[full]
    )
    # Every selected client appears once per round, and its phases add up to its round.
    assert len(phases) == run.rounds["n_selected"].sum()
    total = phases[[f"{p}_s" for p in PHASES]].sum(axis=1, min_count=1)
    assert total.to_numpy() == pytest.approx(
        (phases["end_s"] - phases["download_start_s"]).to_numpy()
    )
    # The deadline (2.5 s) cut some clients; a cut happens exactly at the deadline.
    cut = phases[phases["outcome"] == "deadline_miss"]
    assert len(cut) > 0
    starts = run.rounds.set_index("round").loc[cut["round"], "t_start_s"].to_numpy()
    assert cut["end_s"].to_numpy() == pytest.approx(starts + 2.5)
    arrived = phases[full].groupby("round")["client"].apply(sorted)
    for row in run.rounds.itertuples():
        assert arrived.get(row.round, []) == sorted(row.completed)
