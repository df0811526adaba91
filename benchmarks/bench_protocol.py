"""Protocol benchmark: simulated FL rounds per wall second with training switched off.

Run on one core, e.g. ``taskset -c 0 python -m benchmarks.bench_protocol``. The headline
case is the target: 10,000 clients, 100 per round, 1,000 rounds in under 60 s. Prints
Markdown tables (the numbers in ``docs/benchmarks.md`` come from it). CPU seconds are
reported besides wall seconds because they are less disturbed by other load.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from netfl.scenario import scenario_from_data
from netfl.simulation import write_results
from netfl.world import build_world

#: Every device feature at once: background load, on/off availability, cold start,
#: MAB-CS fluctuation, per-round CPU ratio, exchange noise.
DEVICE_FEATURES: dict[str, Any] = {
    "background": {"arrival_rate_hz": 0.05, "job_work_s": {"dist": "exponential", "mean": 5}},
    "availability": {"kind": "markov", "mean_on_s": 3600, "mean_off_s": 600},
    "cold_start_s": {"dist": "uniform", "low": 0.5, "high": 2.0},
    "compute_fluctuation_eta": 1.5,
    "available_cpu_ratio": {"dist": "uniform", "low": 0.5, "high": 2.0},
    "exchange_noise": 0.5,
}


def bench_scenario(
    n_clients: int,
    rounds: int,
    per_round: int,
    protocol: str,
    request_fraction: float,
    features: bool = False,
) -> dict[str, Any]:
    """A timing-only scenario: radio placeholder rates, heterogeneous devices."""
    group: dict[str, Any] = {
        "name": "phones",
        "count": n_clients,
        "compute_sps": {"dist": "uniform", "low": 10, "high": 100},
        "n_samples": {"dist": "uniform", "low": 100, "high": 1000},
        **(DEVICE_FEATURES if features else {}),
    }
    return {
        "name": "bench",
        "seed": 1,
        "radio": {
            "model": "fixed",
            "rate_ul_bps": {"dist": "uniform", "low": 1.0e6, "high": 5.0e6},
            "rate_dl_bps": {"dist": "uniform", "low": 5.0e6, "high": 20.0e6},
        },
        "devices": {"groups": [group]},
        "fl": {
            "protocol": protocol,
            "rounds": rounds,
            "clients_per_round": per_round,
            "request_fraction": request_fraction,
            "model_size_bits": 1.0e7,
        },
        "selection": {"name": "random"},
        "learning": "none",
    }


def measure(
    n_clients: int,
    rounds: int,
    per_round: int = 100,
    protocol: str = "fedavg",
    request_fraction: float = 0.1,
    features: bool = False,
) -> dict[str, Any]:
    """Build, run and write once; wall and CPU seconds of the simulation itself."""
    data = bench_scenario(n_clients, rounds, per_round, protocol, request_fraction, features)
    started = time.perf_counter()
    world = build_world(scenario_from_data(data))
    build = time.perf_counter() - started
    server = world.env.process(world.server.run())
    wall, cpu = time.perf_counter(), time.process_time()
    world.env.run(until=server)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        write_results(world, Path(out), {})
    write = time.perf_counter() - started
    # SimPy numbers the events it schedules; the next number is how many there were.
    simpy_events = next(world.env._eid)
    return {
        "clients": n_clients,
        "rounds": rounds,
        "per_round": per_round,
        "protocol": protocol + (" + devices" if features else ""),
        "C": request_fraction,
        "events": len(world.timeline),
        "simpy_events": simpy_events,
        "build_s": build,
        "sim_s": wall,
        "cpu_s": cpu,
        "write_s": write,
        "events_per_s": len(world.timeline) / cpu,
        "simpy_per_s": simpy_events / cpu,
    }


CASES: dict[str, list[dict[str, Any]]] = {
    "headline": [
        {"n_clients": 10_000, "rounds": 1000, "protocol": "fedavg"},
        {"n_clients": 10_000, "rounds": 1000, "protocol": "fedcs"},
    ],
    "devices": [
        {"n_clients": 10_000, "rounds": 1000, "protocol": p, "features": True}
        for p in ("fedavg", "fedcs")
    ],
    "clients": [{"n_clients": n, "rounds": 200} for n in (1_000, 10_000, 100_000)],
    "rounds": [{"n_clients": 10_000, "rounds": r} for r in (250, 500, 1000, 2000)],
    "per_round": [{"n_clients": 10_000, "rounds": 200, "per_round": m} for m in (10, 100, 1000)],
    "request": [
        {"n_clients": 10_000, "rounds": 200, "request_fraction": c} for c in (0.01, 0.1, 1.0)
    ],
}


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| clients | rounds | per round | protocol | C | timeline rows | SimPy events |"
        " build (s) | run, wall (s) | run, CPU (s) | write (s) | rows / CPU s |"
        " SimPy events / CPU s |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['clients']:,} | {r['rounds']:,} | {r['per_round']:,} | {r['protocol']} |"
            f" {r['C']:g} |"
            f" {r['events']:,} | {r['simpy_events']:,} | {r['build_s']:.1f} |"
            f" {r['sim_s']:.1f} | {r['cpu_s']:.1f} | {r['write_s']:.1f} |"
            f" {r['events_per_s']:,.0f} | {r['simpy_per_s']:,.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help=f"some of: {', '.join(CASES)} (default: all)")
    args = parser.parse_args()
    for name in args.cases or list(CASES):
        rows = [measure(**case) for case in CASES[name]]
        print(f"\n### {name}\n\n{table(rows)}", flush=True)


if __name__ == "__main__":
    main()
