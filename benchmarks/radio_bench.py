"""Radio benchmark: how fast the fluid RB scheduler simulates transfers (not a timed test).

Three measurements, printed as the markdown of ``docs/benchmarks.md`` (section "Radio"):

1. **Uploads per wall second**: 1,000 clients in an LTE cell (M.2135 UMi NLOS, 10 MHz each
   way, equal sharing) with FTP Model 1 background traffic in both directions (logged in
   the timeline); an FL-like load offers uploads of 8 Mbit in waves of ``--wave``
   concurrent clients. Counts completed uploads, and flows (uploads plus background
   files), per wall-clock second of ``env.run``.
2. **Overhead of the radio layer**: the same 100-client, 100-round timing-only scenario run
   through ``netfl.simulate`` with ``radio.model: fixed``, ``radio.model: lte`` and lte with
   the RB log; the median wall time of the whole call (build + run + write) over
   ``--repeat`` interleaved runs.
3. **The network alone**: 4,000 transfers (bursts of 10 downloads, then 10 uploads) straight
   on each network, without the FL server; the fastest of ``--repeat`` runs.

Run: ``python -m benchmarks.radio_bench [--repeat 5] [--uploads 20000]``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import simpy

from benchmarks.cells import ISOLATED_CELL, ISOLATED_RADIO
from netfl.radio.build import build_radio
from netfl.radio.cellular import CellularNetwork
from netfl.recorder.timeline import Timeline
from netfl.rng import Streams
from netfl.scenario import scenario_from_data
from netfl.simulation import simulate

MODEL_BITS = 8e6


def cell_scenario(n_clients: int, ftp_rate_hz: float) -> dict[str, Any]:
    ftp = [
        {"kind": "ftp1", "direction": d, "arrival_rate_hz": ftp_rate_hz, "file_size_bits": 4e6}
        for d in ("uplink", "downlink")
    ]
    return {
        "name": "radio-bench",
        "seed": 1,
        "cell": {**ISOLATED_CELL, "radius_m": 250.0},
        "radio": {**ISOLATED_RADIO, "uplink": {"tx_power_dbm": 23.0}},
        "traffic": {"sources": ftp, "record_flows": True},
        "devices": {"groups": [{"count": n_clients, "n_samples": 100}]},
        "fl": {"rounds": 1, "clients_per_round": 10, "model_size_bits": MODEL_BITS},
        "learning": None,
    }


def uploads_per_second(n_clients: int, n_uploads: int, wave: int, ftp_rate_hz: float) -> dict:
    scenario = scenario_from_data(cell_scenario(n_clients, ftp_rate_hz))
    env = simpy.Environment()
    build = build_radio(scenario, env, Streams(scenario.seed), Timeline(), n_clients)
    network = build.network
    assert isinstance(network, CellularNetwork)
    done = [0]

    def waves() -> Generator[simpy.Event, Any, None]:
        client = 0
        while done[0] < n_uploads:
            procs = []
            for _ in range(wave):
                procs.append(network.upload(env, client % n_clients, MODEL_BITS))
                client += 1
            yield env.all_of(procs)
            done[0] += wave

    start = time.perf_counter()
    env.run(until=env.process(waves()))
    wall = time.perf_counter() - start
    background = sum(len(s.transfer_times_s) for s in build.traffic)
    return {
        "uploads": done[0],
        "background_files": background,
        "sim_s": env.now,
        "wall_s": wall,
        "uploads_per_s": done[0] / wall,
        "flows_per_s": (done[0] + background) / wall,
    }


def network_only_seconds(model: str, repeat: int) -> float:
    """Fastest of ``repeat`` runs of 4,000 transfers (bursts of 10 downloads, then 10
    uploads) straight on the network, without the FL server: the radio's cost per transfer."""
    scenario = scenario_from_data(
        {
            "cell": ISOLATED_CELL,
            "radio": ISOLATED_RADIO if model == "lte" else {"model": model},
            "devices": {"groups": [{"count": 100, "n_samples": 5}]},
            "fl": {"model_size_bits": MODEL_BITS},
            "learning": None,
        }
    )

    def bursts(env: simpy.Environment, network: Any) -> Generator[simpy.Event, Any, None]:
        for r in range(200):
            clients = range(r % 90, r % 90 + 10)
            yield env.all_of([network.download(env, c, MODEL_BITS) for c in clients])
            yield env.all_of([network.upload(env, c, MODEL_BITS) for c in clients])

    best = math.inf
    for _ in range(repeat):
        env = simpy.Environment()
        network = build_radio(scenario, env, Streams(0), Timeline(), 100).network
        start = time.perf_counter()
        env.run(until=env.process(bursts(env, network)))
        best = min(best, time.perf_counter() - start)
    return best


#: The radio settings compared on the FL run: name -> ``radio`` section.
RADIOS: dict[str, dict[str, Any]] = {
    "fixed": {"model": "fixed"},
    "lte": ISOLATED_RADIO,
    "lte, RB log on": {**ISOLATED_RADIO, "record_rb_allocations": True},
}


def fl_run_seconds(radio: dict[str, Any], repeat: int) -> list[float]:
    data: dict[str, Any] = {
        "name": "bench",
        "seed": 3,
        "cell": ISOLATED_CELL,
        "radio": radio,
        "devices": {"groups": [{"count": 100, "n_samples": 500}]},
        "fl": {"rounds": 100, "clients_per_round": 10, "model_size_bits": MODEL_BITS},
        "learning": None,
    }
    scenario = scenario_from_data(data)
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeat):
            start = time.perf_counter()
            simulate(scenario, Path(tmp) / f"run{i}")
            times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--uploads", type=int, default=20_000)
    parser.add_argument("--wave", type=int, default=20)
    parser.add_argument("--ftp-rate-hz", type=float, default=2.0)
    args = parser.parse_args()
    up = uploads_per_second(1000, args.uploads, args.wave, args.ftp_rate_hz)
    print(
        "| clients | uploads | background files | simulated s | wall s | uploads/wall s |"
        " flows/wall s |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| 1000 | {up['uploads']} | {up['background_files']} | {up['sim_s']:.0f} |"
        f" {up['wall_s']:.2f} | {up['uploads_per_s']:.0f} | {up['flows_per_s']:.0f} |"
    )
    runs: dict[str, list[float]] = {name: [] for name in RADIOS}
    for _ in range(args.repeat):  # interleaved, so load changes hit all alike
        for name, times in runs.items():
            times += fl_run_seconds(RADIOS[name], 1)
    print()
    print("| 100 clients, 100 rounds, learning none | median wall s | min wall s | overhead |")
    print("|---|---|---|---|")
    base = statistics.median(runs["fixed"])
    for name, times in runs.items():
        median = statistics.median(times)
        print(
            f"| {name} | {median:.3f} | {min(times):.3f} | {100 * (median - base) / base:+.0f}% |"
        )
    bare = {m: network_only_seconds(m, args.repeat) for m in ("fixed", "lte")}
    print()
    print("| 4,000 transfers on the network alone | min wall s | per transfer |")
    print("|---|---|---|")
    for model, seconds in bare.items():
        print(f"| radio.model: {model} | {seconds:.4f} | {1e6 * seconds / 4000:.1f} µs |")


if __name__ == "__main__":
    main()
