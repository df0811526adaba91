"""Cost of moving devices: 1,000 devices on 57 cells, one simulated hour, 0.1 s updates.

Timing-only FL (``learning: none``, 5 clients a round) on the default network (19 sites x
3 sectors, wrap-around), no background traffic, so that what is measured is the radio
update: ``moving`` has 500 vehicles on two roads (30-60 km/h, wrap-around) and 500
pedestrians in random directions (3 km/h); ``static`` the same devices and rounds with no
mobility (the engine's cost before mobility: nothing is ticked). Prints one JSON line per
run: the wall and CPU time of the run, the updates and the time per update.

Run: ``python -m benchmarks.mobility_bench moving [--hours 1] [--devices 1000]`` (and
``static``); docs/benchmarks.md has the figures and how they scale. ``--vs TREE [--repeat
N]`` runs the same scenario in this checkout and in ``TREE`` (a previous commit's, ``git
worktree add /tmp/base <commit>``), each run in a fresh process, interleaved
(:mod:`benchmarks.side_by_side`): median CPU seconds of build + run, the ratio, and whether
both trees wrote the same timeline and rounds tables byte for byte.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from benchmarks.side_by_side import HERE, compare


def scenario(variant: str, devices: int, hours: float, interval_s: float) -> dict[str, Any]:
    half = devices // 2
    road = {"model": "constant_velocity", "start_m": [0, 0], "two_way": True, "at_edge": "wrap"}
    speed = {"dist": "uniform", "low": 8.33, "high": 16.67}
    groups: list[dict[str, Any]] = [
        {"name": "cars_east", "count": half // 2, "mobility": {**road, "heading_deg": 0}},
        {"name": "cars_ne", "count": half - half // 2, "mobility": {**road, "heading_deg": 60}},
        {"name": "walkers", "count": devices - half, "mobility": {"model": "random_direction"}},
    ]
    for group in groups:
        group |= {"compute_sps": 100, "n_samples": 50}
        mobility = group["mobility"]
        mobility["speed_mps"] = speed if mobility["model"] != "random_direction" else 0.833
        if variant == "static":
            group["mobility"] = {"model": "static"}
    return {
        "name": "mobility-bench",
        "seed": 1,
        "cell": {"device_sites": "all"},
        "radio": {"model": "lte", "update_interval_s": interval_s},
        "devices": {"groups": groups},
        "fl": {
            "rounds": None,
            "time_budget_s": hours * 3600,
            "clients_per_round": 5,
            "model_size_bits": 8e6,
        },
        "selection": {"name": "random"},
        "learning": "none",
        "output": {"trajectory_every_s": None},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("variant", choices=("moving", "static"))
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--devices", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=0.1, help="radio.update_interval_s")
    parser.add_argument("--vs", type=Path, help="a second checkout, run side by side")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs with --vs")
    args = parser.parse_args()
    if args.vs is not None:
        _side_by_side(args)
        return
    from netfl.scenario import scenario_from_data
    from netfl.world import build_world

    data = scenario(args.variant, args.devices, args.hours, args.interval)
    world = build_world(scenario_from_data(data))
    start, start_cpu = time.perf_counter(), time.process_time()
    world.run()  # as netfl simulate runs it
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    update = getattr(world.network, "update", None)
    updates = getattr(update, "updates", 0)
    print(
        json.dumps(
            {
                "variant": args.variant,
                "devices": args.devices,
                "simulated_s": world.env.now,
                "wall_s": round(wall, 3),
                "cpu_s": round(cpu, 3),
                "updates": updates,
                "ms_per_update": round(wall / updates * 1e3, 3) if updates else None,
                "cpu_ms_per_update": round(cpu / updates * 1e3, 3) if updates else None,
            }
        )
    )


def _side_by_side(args: argparse.Namespace) -> None:
    trees = [HERE, args.vs.resolve()]
    data = scenario(args.variant, args.devices, args.hours, args.interval)
    results = compare(trees, data, args.repeat)
    print("| tree | CPU s (median) | runs | s per simulated hour | x previous | same tables |")
    print("|---|---:|---|---:|---:|---|")
    previous = results[trees[-1]]
    for tree in trees:
        r = results[tree]
        same = r["digests"] == previous["digests"]
        print(
            f"| {'this' if tree == HERE else tree} | {r['cpu_s']:.2f} | {r['cpu_runs']} |"
            f" {r['cpu_s'] / args.hours:.0f} | {r['cpu_s'] / previous['cpu_s']:.2f} |"
            f" {'yes' if same else 'NO'} |"
        )


if __name__ == "__main__":
    main()
