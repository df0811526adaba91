"""Handover rates against the fluid-flow reference: how far shadowing, hysteresis and the
measurement period move them.

Devices in random directions (legs of 60 s on average, no pauses) on the default network
(19 sites x 3 sectors, wrap-around, TR 36.873 3D-UMi, ISD 200 m) with the default handover
(a3-Offset 0, hysteresis 3 dB, TTT 256 ms, fc4) and shadowing: vehicles at 50 km/h and
pedestrians at 5 m/s (the cases of issue 33), timing-only FL. For each it prints the
handovers per device-hour, the metres between two handovers, the ratio to the fluid-flow
rate of the sector boundaries (Thomas, Gilbert & Mazziotto 1988: 8 / (sqrt(3) pi R) per
metre for three sectors, :func:`netfl.map.geometry.fluid_flow_crossings_per_m`) and the
share of ping-pongs.

Run: ``python -m benchmarks.handover_rates [--devices 200] [--minutes 10] [--seeds 1 2]
[--vs TREE]`` (``--vs``: the same runs with netfl imported from another checkout, for
the rates before a change).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
CASES = {"vehicles 50 km/h": 50 / 3.6, "pedestrians 5 m/s": 5.0}


def scenario(speed_mps: float, devices: int, minutes: float, seed: int) -> dict[str, Any]:
    walk = {"model": "random_direction", "speed_mps": speed_mps, "travel_s": 60, "pause_s": 0}
    return {
        "name": "handover-rates",
        "seed": seed,
        "cell": {"device_sites": "all"},
        "radio": {"model": "lte"},
        "devices": {
            "groups": [
                {
                    "name": "moving",
                    "count": devices,
                    "mobility": walk,
                    "compute_sps": 100,
                    "n_samples": 50,
                }
            ]
        },
        "fl": {
            "rounds": None,
            "time_budget_s": minutes * 60,
            "clients_per_round": 2,
            "model_size_bits": 1e6,
        },
        "selection": {"name": "random"},
        "learning": "none",
        "output": {"trajectory_every_s": None},
    }


def measure(data: dict[str, Any]) -> dict[str, float]:
    """Handovers, ping-pongs and device-metres of one run (in this process)."""
    from netfl.scenario import scenario_from_data
    from netfl.world import build_world

    world = build_world(scenario_from_data(data))
    world.run()
    table = world.timeline.to_arrow().to_pandas()
    handovers = table[table["kind"] == "handover"]
    speed = data["devices"]["groups"][0]["mobility"]["speed_mps"]
    count = data["devices"]["groups"][0]["count"]
    return {
        "handovers": float(len(handovers)),
        "ping_pongs": float(handovers["ping_pong"].fillna(False).astype(bool).sum()),
        "metres": speed * count * world.env.now,
        "device_hours": count * world.env.now / 3600,
    }


def rates(tree: Path | None, devices: int, minutes: float, seeds: list[int]) -> dict[str, Any]:
    """Every case's totals over the seeds, measured with netfl from ``tree``."""
    out = {}
    for name, speed in CASES.items():
        totals = {"handovers": 0.0, "ping_pongs": 0.0, "metres": 0.0, "device_hours": 0.0}
        for seed in seeds:
            data = scenario(speed, devices, minutes, seed)
            if tree is None:
                result = measure(data)
            else:
                command = [sys.executable, "-m", "benchmarks.handover_rates", "--child", str(tree)]
                done = subprocess.run(
                    command, input=json.dumps(data), cwd=HERE, capture_output=True, text=True
                )
                if done.returncode:
                    raise RuntimeError(done.stderr[-2000:])
                result = json.loads(done.stdout.splitlines()[-1])
            for key in totals:
                totals[key] += result[key]
        out[name] = totals
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--devices", type=int, default=200)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--vs", type=Path, help="a second checkout, measured the same way")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        sys.path.insert(0, str(args.child))
        print(json.dumps(measure(json.loads(sys.stdin.read()))))
        return
    from netfl.map.geometry import fluid_flow_crossings_per_m
    from netfl.scenario import scenario_from_data

    cell = scenario_from_data(scenario(1.0, args.devices, 1.0, 1)).cell
    per_m = fluid_flow_crossings_per_m(cell.radius_m, cell.sectors)
    trees: list[tuple[str, Path | None]] = [("this", None)]
    if args.vs is not None:
        trees.append((str(args.vs), args.vs.resolve()))
    print("| tree | devices | per device-hour | m per handover | x fluid flow | ping-pongs |")
    print("|---|---|---:|---:|---:|---:|")
    for label, tree in trees:
        for name, t in rates(tree, args.devices, args.minutes, args.seeds).items():
            reference = t["metres"] * per_m
            print(
                f"| {label} | {name} | {t['handovers'] / t['device_hours']:.0f} |"
                f" {t['metres'] / t['handovers']:.0f} | {t['handovers'] / reference:.2f} |"
                f" {100 * t['ping_pongs'] / t['handovers']:.1f}% |"
            )
    print(f"\nfluid flow: one sector boundary every {1 / per_m:.0f} m (R = {cell.radius_m:.1f} m)")


if __name__ == "__main__":
    main()
