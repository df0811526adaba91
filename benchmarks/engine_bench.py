"""The one radio engine against the two radios it replaced, and the cost of the radio update.

One timing-only FL run (``learning: none``, 1,000 devices, 20 per round, ``--rounds``
rounds, 1 MB models, FTP Model 1 background in both directions) on:

- ``single``: one isolated omni cell (ITU-R M.2135 UMi NLOS, 2.5 GHz, the seed scenarios'
  cell), the background of one cell;
- ``multicell``: 19 sites x 3 sectors with wrap-around (TR 38.901 UMi-SC, the calibration
  antenna, 80% indoor with low-loss O2I, open-loop FPC), the FL devices over every site,
  background in each of the 57 cells;
- ``multicell-update``: the same with the radio update at ``radio.update_interval_s`` 0.1 s
  (the default) instead of off.

Prints one JSON line: the wall and CPU time of ``env.run``, the flows (FL transfers plus
background files) and the time per flow (CPU time is what to compare on a loaded machine).
Every key that differs between the engine and the code before it is written out, so the
same run can be measured on the previous commit with ``--legacy`` (which leaves out the keys
that did not exist: ``device_sites``, ``update_interval_s``). Side by side, interleaving the
two trees (docs/benchmarks.md)::

    for i in 1 2 3 4 5 6 7; do
        (cd OLD && .venv/bin/python /tmp/engine_bench.py single --legacy)
        (cd NEW && .venv/bin/python -m benchmarks.engine_bench single)
    done
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

FTP = {
    "sources": [
        {"kind": "ftp1", "direction": "downlink", "arrival_rate_hz": 0.5},
        {"kind": "ftp1", "direction": "uplink", "arrival_rate_hz": 0.1},
    ]
}
#: The mapping both radios had by default (pinned: the defaults moved with issue 26).
SHANNON = {"kind": "shannon_with_loss", "loss_db": 1.6, "max_spectral_efficiency": 4.8}
SINGLE = {
    "cell": {"sites": 1, "sectors": 1, "indoor_fraction": 0.0, "radius_m": 115.47005383792516},
    "radio": {
        "model": "lte",
        "channel_model": "umi_nlos",
        "carrier_frequency_hz": 2.5e9,
        "downlink": {"tx_power_dbm": 41.0, "noise_figure_db": 7.0},
        "rate_mapping": SHANNON,
    },
}
MULTI = {
    "cell": {
        "inter_site_distance_m": 200,
        "sites": 19,
        "sectors": 3,
        "wrap_around": True,
        "indoor_fraction": 0.8,
        "o2i_model": "low_loss",
        "antenna_elements": 10,
        "antenna_electrical_downtilt_deg": 12,
        "device_sites": "all",
    },
    "radio": {
        "model": "lte",
        "channel_model": "tr38901_umi",
        "carrier_frequency_hz": 3.5e9,
        "uplink_power_control": {"p0_dbm": -80, "alpha": 0.8},
        "downlink": {"tx_power_dbm": 41.0, "noise_figure_db": 7.0},
        "rate_mapping": SHANNON,
        "update_interval_s": None,
    },
}


def scenario(variant: str, rounds: int, legacy: bool) -> dict[str, Any]:
    base = SINGLE if variant == "single" else MULTI
    cell, radio = dict(base["cell"]), dict(base["radio"])
    if variant == "multicell-update":
        radio["update_interval_s"] = 0.1
    if legacy:  # keys the code before the one engine did not have
        cell.pop("device_sites", None)
        radio.pop("update_interval_s", None)
        if variant == "single":
            cell = {"radius_m": cell["radius_m"]}
    return {
        "name": "bench",
        "seed": 1,
        "cell": cell,
        "radio": radio,
        "traffic": FTP,
        "devices": {
            "groups": [{"name": "phones", "count": 1000, "compute_sps": 100, "n_samples": 50}]
        },
        "fl": {"rounds": rounds, "clients_per_round": 20, "model_size_bits": 8e6},
        "selection": {"name": "random"},
        "learning": "none",
    }


def flows(network: Any) -> int:
    cells = getattr(network, "cells", None)
    if cells is not None:  # the one engine
        schedulers = [s for direction in cells.schedulers.values() for s in direction]
    elif hasattr(network, "schedulers"):  # the multi-cell model before it
        schedulers = [s for group in network.schedulers.values() for s in group]
    else:  # the single cell before it
        schedulers = [network.uplink, network.downlink]
    return sum(s._next_id for s in schedulers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("variant", choices=("single", "multicell", "multicell-update"))
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--legacy", action="store_true", help="the code before the engine")
    args = parser.parse_args()
    from netfl.scenario import scenario_from_data
    from netfl.world import build_world

    world = build_world(scenario_from_data(scenario(args.variant, args.rounds, args.legacy)))
    start, start_cpu = time.perf_counter(), time.process_time()
    run = getattr(world, "run", None)  # as netfl simulate runs it (absent before issue 27)
    if run is not None:
        run()
    else:
        world.env.run(until=world.env.process(world.server.run()))
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    n = flows(world.network)
    print(
        json.dumps(
            {
                "variant": args.variant,
                "wall_s": wall,
                "cpu_s": cpu,
                "flows": n,
                "us_per_flow": wall / n * 1e6,
                "cpu_us_per_flow": cpu / n * 1e6,
            }
        )
    )


if __name__ == "__main__":
    main()
