"""The RB scheduler at scale: processor sharing (O(log n) per event) against the general
O(n) pass, side by side (issue 16 item 9).

Timing-only LTE (``learning: none``, an isolated M.2135 UMi NLOS cell, equal sharing),
``--devices`` devices (100,000 by default), ``--per-round`` clients per round, ``--rounds``
rounds (30). The issue's 1,000,000 devices with ``request_fraction: 1`` hold a timeline the
memory estimate at validation refuses on a 23 GiB machine (until the timeline streams).
``before`` runs the same scenario with the scheduler netfl had before the processor-sharing
path (``tests/scheduler_oracle.py``, patched in); ``after`` with today's. Wall time of the
whole build + ``env.run``, median of ``--repeat``.

Run: ``python -m benchmarks.scheduler_bench [--devices 100000] [--per-round 1000 100]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import netfl.radio.cells as radio_cells
from benchmarks.cells import ISOLATED_CELL, ISOLATED_RADIO
from netfl.radio.scheduler import FluidScheduler
from netfl.scenario import scenario_from_data
from netfl.world import build_world


def scenario(devices: int, per_round: int, rounds: int) -> dict[str, Any]:
    return {
        "name": "scheduler-bench",
        "seed": 1,
        "cell": {**ISOLATED_CELL, "radius_m": 500},
        "radio": ISOLATED_RADIO,
        "devices": {
            "groups": [{"name": "phones", "count": devices, "compute_sps": 100, "n_samples": 50}]
        },
        "fl": {"rounds": rounds, "clients_per_round": per_round, "model_size_bits": 8e6},
        "selection": {"name": "random"},
        "learning": "none",
    }


def run(data: dict[str, Any], scheduler: type) -> float:
    radio_cells.FluidScheduler = scheduler  # type: ignore[misc]
    try:
        start = time.perf_counter()
        world = build_world(scenario_from_data(data))
        world.env.run(until=world.env.process(world.server.run()))
        return time.perf_counter() - start
    finally:
        radio_cells.FluidScheduler = FluidScheduler  # type: ignore[misc]


def main() -> None:
    from tests.scheduler_oracle import FluidScheduler as Before

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--devices", type=int, default=100_000)
    parser.add_argument("--per-round", type=int, nargs="+", default=[1000, 100])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    print("| clients per round | before: general pass (s) | after: processor sharing (s) | ratio |")
    print("|---|---|---|---|")
    for per_round in args.per_round:
        data = scenario(args.devices, per_round, args.rounds)
        before = statistics.median(run(data, Before) for _ in range(args.repeat))
        after = statistics.median(run(data, FluidScheduler) for _ in range(args.repeat))
        print(f"| {per_round} | {before:.1f} | {after:.1f} | {before / after:.1f}x |")


if __name__ == "__main__":
    main()
