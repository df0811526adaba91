"""Memory estimates at validation (issue 16, item 2)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from netfl.cli import main
from netfl.resources import (
    BASE_BYTES,
    TIMELINE_PART_ROWS,
    MemoryEstimate,
    estimate_memory,
    format_bytes,
    memory_problems,
)
from netfl.scenario import load_scenario
from netfl.trace import streaming

TIMING = ["learning=none", "fl.model_size_bits=1e6"]


def test_a_population_that_cannot_fit_is_refused_at_validate(capsys) -> None:
    code = main(["validate", "quickstart", "--set", "devices.groups.0.count=100000000000"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith(
        "error: --set devices.groups.0.count=100000000000: devices.groups.0.count: the run"
        " needs about "
    )
    assert "population 40.9 TiB" in err and "more than this machine's" in err


def test_validate_print_shows_the_estimate(capsys) -> None:
    assert main(["validate", "quickstart", "--print"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    estimate = estimate_memory(load_scenario("quickstart"))
    assert first == f"# Estimated memory: {estimate.describe()}"


def test_timeline_rows_match_a_run(tmp_path: Path) -> None:
    overrides = [
        *TIMING,
        "devices.groups.0.count=200",
        "fl.rounds=6",
        "fl.clients_per_round=10",
        "fl.request_fraction=0.5",
    ]
    out = tmp_path / "run"
    assert (
        main(
            [
                "simulate",
                "quickstart",
                "--quiet",
                "--out",
                str(out),
                *[arg for o in overrides for arg in ("--set", o)],
            ]
        )
        == 0
    )
    rows = len(pd.read_parquet(out / "timeline.parquet"))
    assert estimate_memory(load_scenario("quickstart", overrides)).timeline_rows == rows


def test_estimate_is_within_a_factor_two_of_the_measured_peaks() -> None:
    # Issue 16's runs, 10,000 devices, 100 per round, 1,000 rounds, learning none, with the
    # timeline streamed: 369 MiB peak resident with request_fraction 1 (20.7 million rows)
    # and 339 MiB with 0.1 (2.7 million); benchmarks/bench_streaming.py, docs/benchmarks.md.
    for fraction, measured in ((1, 369 * 2**20), (0.1, 339 * 2**20)):
        scenario = load_scenario(
            "quickstart",
            [
                *TIMING,
                "devices.groups.0.count=10000",
                "fl.clients_per_round=100",
                "fl.rounds=1000",
                f"fl.request_fraction={fraction}",
            ],
        )
        assert measured / 2 < estimate_memory(scenario).total_bytes < measured * 2


def test_a_streamed_timeline_is_estimated_at_one_part_whatever_the_rounds() -> None:
    assert TIMELINE_PART_ROWS == streaming.PART_ROWS

    def estimate(rounds: int) -> MemoryEstimate:
        scenario = load_scenario(
            "quickstart",
            [
                *TIMING,
                "devices.groups.0.count=10000",
                "fl.clients_per_round=10",
                "fl.request_fraction=1",
                f"fl.rounds={rounds}",
            ],
        )
        return estimate_memory(scenario)

    per_round = 2 * 10_000 + 7 * 10 + 4  # everyone asked, 10 selected
    short, long, longer = estimate(10), estimate(1_000), estimate(10_000)
    assert short.timeline_rows == short.timeline_rows_held == 10 * per_round + 1
    assert "held at a time" not in short.describe()
    assert long.timeline_rows == 1_000 * per_round + 1
    assert long.timeline_rows_held == TIMELINE_PART_ROWS - 1 + per_round + 1
    assert longer.timeline_bytes == long.timeline_bytes < long.timeline_rows * 150
    assert f"{long.timeline_rows:,} rows, {long.timeline_rows_held:,} held at a time" in (
        long.describe()
    )


def test_warns_above_available_and_refuses_above_physical() -> None:
    scenario = load_scenario("quickstart")
    total = estimate_memory(scenario).total_bytes
    assert total > BASE_BYTES
    assert memory_problems(scenario, (total * 4, total * 4)) == ([], [])
    problems, notes = memory_problems(scenario, (total * 4, total // 2))
    assert problems == [] and len(notes) == 1
    assert notes[0].startswith("fl.rounds: the run needs about")  # the largest term
    assert f"more than the {format_bytes(total // 2)} of memory available now" in notes[0]
    problems, _ = memory_problems(scenario, (total - 1, None))
    assert len(problems) == 1 and "more than this machine's" in problems[0].message


@pytest.mark.parametrize(("n_bytes", "text"), [(512, "512 B"), (3 * 2**30, "3.0 GiB")])
def test_format_bytes(n_bytes: int, text: str) -> None:
    assert format_bytes(n_bytes) == text
