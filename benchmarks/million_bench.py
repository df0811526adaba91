"""A million client updates, synchronous (issue 27): 1,000,000 devices, 1,000 clients a
round, 1,000 rounds, timing-only LTE (``learning: none``, an isolated M.2135 UMi NLOS
cell, ``benchmarks/cells.py``, equal sharing, 8 Mbit model), ``fl.request_fraction``
0.001 (the 1,000 asked are the round's candidates: the population costs its build, not a
request of a million a round).

CPU seconds of build + ``env.run``, each run in a fresh process
(:mod:`benchmarks.side_by_side`), median of ``--repeat``; ``--vs TREE`` runs a previous
checkout interleaved and checks both recorded the same tables byte for byte. The SimPy
events per update and the timeline rows are printed with the times.

Run: ``python -m benchmarks.million_bench [--rounds 1000] [--repeat 3] [--vs TREE]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchmarks import scheduler_bench
from benchmarks.side_by_side import HERE, compare


def scenario(devices: int, per_round: int, rounds: int, request_fraction: float) -> dict[str, Any]:
    """The scheduler benchmark's run (``benchmarks/scheduler_bench.py``) asking a fraction."""
    data = scheduler_bench.scenario(devices, per_round, rounds)
    data["name"] = "million-bench"
    data["fl"]["request_fraction"] = request_fraction
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--devices", type=int, default=1_000_000)
    parser.add_argument("--per-round", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--request-fraction", type=float, default=0.001)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--vs", type=Path, help="a second checkout, run side by side")
    args = parser.parse_args()
    trees = [HERE] + ([args.vs.resolve()] if args.vs else [])
    data = scenario(args.devices, args.per_round, args.rounds, args.request_fraction)
    results = compare(trees, data, args.repeat)
    print(
        "| tree | updates | timeline rows | SimPy events / update | CPU s (median) | runs |"
        " us / update | x previous | same tables |"
    )
    print("|---|---:|---:|---:|---:|---|---:|---:|---|")
    previous = results[trees[-1]]
    for tree in trees:
        r = results[tree]
        same = r["digests"] == previous["digests"]
        per_update_us = 1e6 * r["cpu_s"] / max(r["updates"], 1)
        print(
            f"| {'this' if tree == HERE else tree} | {r['updates']:,} | {r['rows']:,} |"
            f" {r['events'] / max(r['updates'], 1):.1f} | {r['cpu_s']:.1f} | {r['cpu_runs']} |"
            f" {per_update_us:.0f} | {r['cpu_s'] / previous['cpu_s']:.2f} |"
            f" {'yes' if same else 'NO'} |"
        )


if __name__ == "__main__":
    main()
