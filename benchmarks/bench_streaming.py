"""Peak memory and wall time of a long timing-only run: the streamed timeline (issue 16, item 3).

Issue 16's run: 10,000 devices, ``request_fraction: 1`` (every device asked every round),
100 clients per round, 1,000 rounds, ``learning: none`` (quickstart's cell otherwise):
about 20 million timeline rows. Each repeat runs ``python -m netfl simulate`` in a fresh
process from every source tree given (this one, and with ``--before`` an older checkout,
e.g. ``git worktree add /tmp/base aa030c1``), interleaved, and reads the child's peak
resident memory (``ru_maxrss`` from ``os.wait4``) and its wall time from start to exit.
Prints the medians, the ratios to the first tree, and the rows of each run's timeline
and strategy scores (``--strategy rbcs_f`` keeps three scores of every client a round).

Usage::

    OMP_NUM_THREADS=1 python -m benchmarks.bench_streaming --before /tmp/base --repeats 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parents[1]


def overrides(
    devices: int, rounds: int, per_round: int, fraction: float, strategy: str
) -> list[str]:
    return [
        f"selection.name={strategy}",
        "learning=none",
        "fl.model_size_bits=1e6",
        f"devices.groups.0.count={devices}",
        f"fl.clients_per_round={per_round}",
        f"fl.rounds={rounds}",
        f"fl.request_fraction={fraction}",
    ]


def once(tree: Path, sets: list[str]) -> tuple[float, float, int]:
    """(peak resident MiB, wall s, timeline and score rows) of a run from source ``tree``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        args = [a for s in sets for a in ("--set", s)]
        command = [sys.executable, "-m", "netfl", "simulate", "quickstart", *args]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(tree)}
        start = time.perf_counter()
        process = subprocess.Popen(
            [*command, "--out", str(out), "--quiet"], cwd=tree, env=env, stdout=subprocess.DEVNULL
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall_s = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            raise SystemExit(f"{tree}: the run failed (exit {process.returncode})")
        rows = pq.ParquetFile(out / "timeline.parquet").metadata.num_rows
        rows += pq.ParquetFile(out / "strategy.parquet").metadata.num_rows
        return usage.ru_maxrss / 1024, wall_s, rows  # ru_maxrss: KiB on Linux


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="an older source tree to compare with")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--devices", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=1_000)
    parser.add_argument("--per-round", type=int, default=100)
    parser.add_argument("--request-fraction", type=float, default=1.0)
    parser.add_argument("--strategy", default="random", help="selection.name")
    args = parser.parse_args(argv)
    trees = {"before": args.before, "after": HERE} if args.before else {"after": HERE}
    sets = overrides(
        args.devices, args.rounds, args.per_round, args.request_fraction, args.strategy
    )
    runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in trees}
    for _ in range(args.repeats):
        for name, tree in trees.items():
            runs[name].append(once(tree.resolve(), sets))
            rss, wall, rows = runs[name][-1]
            print(f"{name}: {rss:.0f} MiB, {wall:.2f} s, {rows} rows", file=sys.stderr)
    first = next(iter(runs))
    base_rss = statistics.median(r[0] for r in runs[first])
    base_wall = statistics.median(r[1] for r in runs[first])
    print(
        "| tree | peak resident (MiB) | wall (s) | RSS ratio | wall ratio | timeline + score rows |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name, results in runs.items():
        rss = statistics.median(r[0] for r in results)
        wall = statistics.median(r[1] for r in results)
        rows = results[0][2]
        print(
            f"| {name} | {rss:,.0f} | {wall:.2f} | {rss / base_rss:.2f} | {wall / base_wall:.2f}"
            f" | {rows:,} |"
        )


if __name__ == "__main__":
    main()
