"""Progress display: a live bar on a terminal, log lines elsewhere, nothing when quiet."""

from __future__ import annotations

import io

from netfl.progress import RunProgress
from netfl.recorder.tables import RoundRecord
from netfl.sweep.runner import SweepProgress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _rounds(progress: RunProgress, n: int) -> None:
    for r in range(n):
        progress.update(RoundRecord(round=r, t_start_s=r, t_end_s=r + 1.0, accuracy=0.5))


def test_run_progress_draws_a_bar_on_a_terminal():
    stream = _Terminal()
    with RunProgress(3, stream=stream) as progress:
        _rounds(progress, 3)
    assert progress.mode == "bar"
    assert "3/3" in stream.getvalue() and "50.00%" in stream.getvalue()


def test_run_progress_logs_every_n_rounds_elsewhere_and_is_silent_when_quiet():
    stream = io.StringIO()
    with RunProgress(4, every=2, stream=stream) as progress:
        _rounds(progress, 4)
    lines = stream.getvalue().splitlines()
    # The round index as in rounds.parquet (0-based), then how many of the total are done.
    assert [line.split()[1:3] for line in lines] == [["1", "(2/4"], ["3", "(4/4"]]
    quiet = io.StringIO()
    with RunProgress(4, mode="quiet", stream=quiet) as progress:
        _rounds(progress, 4)
    assert quiet.getvalue() == ""


def test_sweep_progress_counts_runs_and_failures():
    class Outcome:
        def __init__(self, status: str) -> None:
            self.status, self.error, self.run_id, self.wall_time_s = status, None, "r", 1.0

    stream = _Terminal()
    with SweepProgress(2, stream=stream) as progress:
        progress.update(Outcome("completed"), "a")
        progress.update(Outcome("failed"), "b")
    assert progress.failed == 1
    assert "2/2" in stream.getvalue() and "failed 1" in stream.getvalue()
