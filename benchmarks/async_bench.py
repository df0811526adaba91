"""Asynchronous against synchronous FL for the same number of client updates (issue 15).

Timing-only LTE (``learning: none``, the default M.2135 UMi NLOS cell, equal sharing),
``--devices`` devices (10,000), ``--concurrency`` clients training at once (100) and
``--updates`` client updates (100,000): synchronous FedAvg with ``concurrency`` clients per
round for ``updates / concurrency`` rounds; FedBuff with ``buffer_size`` 10 for
``updates / 10`` versions; FedAsync for ``updates`` versions. Wall time of the whole build
+ ``env.run`` (what ``netfl simulate`` adds, writing the tables, is left out), median of
``--repeat``, and the ratio to the synchronous run measured in the same process.

Run: ``python -m benchmarks.async_bench [--devices 10000] [--updates 100000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from netfl.scenario import scenario_from_data
from netfl.world import build_world


def scenario(devices: int, concurrency: int, updates: int, protocol: str) -> dict[str, Any]:
    fl: dict[str, Any] = {"protocol": protocol, "model_size_bits": 8e6}
    if protocol == "fedavg":
        fl.update(clients_per_round=concurrency, rounds=updates // concurrency)
    elif protocol == "fedbuff":
        fl.update(concurrency=concurrency, buffer_size=10, rounds=updates // 10)
    else:
        fl.update(concurrency=concurrency, rounds=updates)
    return {
        "name": f"async-bench-{protocol}",
        "seed": 1,
        "cell": {"radius_m": 500},
        "devices": {
            "groups": [
                {
                    "name": "phones",
                    "count": devices,
                    "compute_sps": {"dist": "uniform", "low": 20, "high": 200},
                    "n_samples": 50,
                }
            ]
        },
        "fl": fl,
        "selection": {"name": "random"},
        "learning": "none",
    }


def run(data: dict[str, Any]) -> tuple[float, int]:
    start = time.perf_counter()
    world = build_world(scenario_from_data(data))
    world.env.run(until=world.env.process(world.server.run()))
    updates = sum(len(r.completed) for r in world.server.records)
    return time.perf_counter() - start, updates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--devices", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--updates", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--protocols", nargs="+", default=["fedavg", "fedbuff", "fedasync"])
    args = parser.parse_args()
    times: dict[str, float] = {}
    for protocol in args.protocols:
        data = scenario(args.devices, args.concurrency, args.updates, protocol)
        runs = [run(data) for _ in range(args.repeat)]
        times[protocol] = statistics.median(t for t, _ in runs)
        per_update_us = 1e6 * times[protocol] / runs[0][1]
        ratio = times[protocol] / times["fedavg"] if "fedavg" in times else float("nan")
        print(
            f"{protocol:9s} {runs[0][1]:7d} updates  {times[protocol]:7.2f} s"
            f"  ({per_update_us:5.0f} us/update)  x{ratio:.2f} of fedavg",
            flush=True,
        )


if __name__ == "__main__":
    main()
