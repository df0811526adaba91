"""Multi-cell radio cost per transfer, side by side with the single cell (issue 14).

Timing-only FL (``learning: none``): 1,000 devices, 20 per round, 100 rounds, FTP model 1
background traffic (downlink 0.5 files/s, uplink 0.1 files/s per cell, 0.5 MB files).

- ``single``: one omni cell (ITU-R M.2135 UMi NLOS as in the seed scenarios) with the
  background of one cell;
- ``multicell``: 19 sites x 3 sectors with wrap-around (TR 38.901 UMi-SC, the calibration
  antenna, 80% indoor, open-loop FPC), background in each of the 57 cells.

The cost of a run grows with flow events, so the figure of merit is the wall time of
``env.run`` per flow (FL downloads and uploads plus background files), medians of
``--repeat`` interleaved runs, and their ratio (the target: at most 3x).

Run: ``python -m benchmarks.multicell_bench [--repeat 3] [--rounds 100]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from netfl.radio.scheduler import FluidScheduler
from netfl.scenario import scenario_from_data
from netfl.world import build_world

BASE: dict[str, Any] = {
    "name": "bench",
    "seed": 1,
    "devices": {"groups": [{"name": "phones", "count": 1000, "compute_sps": 100, "n_samples": 50}]},
    "fl": {"rounds": 100, "clients_per_round": 20, "model_size_bits": 8e6},
    "selection": {"name": "random"},
    "learning": "none",
    "traffic": {
        "sources": [
            {"kind": "ftp1", "direction": "downlink", "arrival_rate_hz": 0.5},
            {"kind": "ftp1", "direction": "uplink", "arrival_rate_hz": 0.1},
        ]
    },
}
SINGLE = {"cell": {"inter_site_distance_m": 200}, "radio": {"model": "lte"}}
MULTI = {
    "cell": {
        "inter_site_distance_m": 200,
        "sites": 19,
        "sectors": 3,
        "wrap_around": True,
        "indoor_fraction": 0.8,
        "antenna_elements": 10,
        "antenna_electrical_downtilt_deg": 12,
    },
    "radio": {
        "model": "lte",
        "channel_model": "tr38901_umi",
        "carrier_frequency_hz": 3.5e9,
        "uplink": {"p0_dbm": -80, "alpha": 0.8},
    },
}


def _schedulers(network: Any) -> list[FluidScheduler]:
    cells = getattr(network, "cells", None)
    if cells is not None:  # the one radio engine
        return [s for direction in cells.schedulers.values() for s in direction]
    if hasattr(network, "schedulers"):  # the multi-cell model before it
        return [s for cells in network.schedulers.values() for s in cells]
    return [network.uplink, network.downlink]


def run_once(variant: dict[str, Any], rounds: int) -> tuple[float, int]:
    data = {**BASE, **variant, "fl": {**BASE["fl"], "rounds": rounds}}
    world = build_world(scenario_from_data(data))
    start = time.perf_counter()
    world.env.run(until=world.env.process(world.server.run()))
    wall = time.perf_counter() - start
    flows = sum(s._next_id for s in _schedulers(world.network))
    return wall, flows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    results: dict[str, list[tuple[float, int]]] = {"single": [], "multicell": []}
    for _ in range(args.repeat):
        for name, variant in (("single", SINGLE), ("multicell", MULTI)):
            results[name].append(run_once(variant, args.rounds))
    per_flow = {}
    print("| radio | flows | wall (s, median) | per flow (us, median) |")
    print("|---|---|---|---|")
    for name, rows in results.items():
        wall = statistics.median(w for w, _ in rows)
        flows = rows[0][1]
        per_flow[name] = statistics.median(w / f * 1e6 for w, f in rows)
        print(f"| {name} | {flows} | {wall:.2f} | {per_flow[name]:.1f} |")
    print(f"\nratio per flow, multicell / single: {per_flow['multicell'] / per_flow['single']:.2f}")


if __name__ == "__main__":
    main()
