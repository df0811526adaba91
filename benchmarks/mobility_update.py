"""The cost of one mobility update: 1,000 devices on 19 sites x 3 sectors (57 cells).

What a radio update does when devices move, piece by piece, each timed as the median over
``--repeat`` runs of the mean of ``--calls`` calls (one core; ``OMP_NUM_THREADS=1``):

- each mobility model advancing all 1,000 devices by 0.1 s (:mod:`netfl.mobility`);
- the correlated shadowing and LOS state of every (device, site) link
  (:mod:`netfl.radio.shadowing`, 1,000 x 19);
- the handover state machine (:mod:`netfl.radio.handover`: 1,000 devices measuring 8 of 57
  cells every 200 ms, searching all 57 every 0.8 s; its cost per update averages them);
- for scale, the engine's propagation from scratch for the same devices
  (:func:`netfl.radio.propagation.link_gains`, TR 38.901 UMi, wrap-around), which a moving
  run must recompute at every update, with the two states above replacing its draws.

The last line multiplies the per-update cost by the 36,000 updates of one simulated hour at
``radio.update_interval_s: 0.1`` (issue 23's budget: under 60 s for that hour).

Run: ``OMP_NUM_THREADS=1 python -m benchmarks.mobility_update [--repeat 5] [--calls 100]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
from pydantic import TypeAdapter

from netfl.config.mobility import HandoverConfig, MobilityConfig
from netfl.map.layout import hex_layout
from netfl.mobility.build import build_mobility
from netfl.mobility.trajectory import TrajectoryModel
from netfl.radio.calibration import PRESETS
from netfl.radio.handover import HandoverState
from netfl.radio.propagation import Environment, drop_heights, link_gains
from netfl.radio.shadowing import CorrelatedLosState, CorrelatedShadowing

DEVICES, DT_S, UPDATES_PER_HOUR = 1_000, 0.1, 36_000
MODELS = {
    "random_direction": {"model": "random_direction", "speed_mps": 1.4},
    "random_waypoint": {"model": "random_waypoint", "speed_mps": 1.4, "pause_s": 10},
    "gauss_markov": {"model": "gauss_markov", "mean_speed_mps": 13.9},
    "constant_velocity": {"model": "constant_velocity", "speed_mps": 13.9, "heading_deg": 20},
}


def per_call_ms(call: Callable[[], object], repeat: int, calls: int) -> float:
    means = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        means.append((time.perf_counter() - start) / calls)
    return statistics.median(means) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    preset = PRESETS["tr38901_umi"]
    layout = hex_layout(19, 3, preset.inter_site_distance_m, wrap_around=True)
    rng = np.random.default_rng(1)
    xy = layout.drop_uniform(DEVICES, preset.min_distance_m, rng)
    costs: dict[str, float] = {}
    config = TypeAdapter(MobilityConfig)
    for name, spec in MODELS.items():
        model = build_mobility(config.validate_python(spec), layout, xy, np.random.default_rng(2))
        costs[f"mobility: {name}"] = per_call_ms(
            lambda m=model: m.advance(DT_S), args.repeat, args.calls
        )
    # One hour of 1 s samples per device (a SUMO trace's usual step), timed from arrays.
    samples = np.arange(0.0, 3600.0, 1.0)
    walk = np.outer(samples, [1.0, 0.5])
    trajectory = TrajectoryModel([samples] * DEVICES, [xy[i] + walk for i in range(DEVICES)])
    costs["mobility: trajectory (1 s samples)"] = per_call_ms(
        lambda: trajectory.advance(DT_S), args.repeat, args.calls
    )
    sites = layout.n_sites
    moved = np.full(DEVICES, 1.4 * DT_S)
    shadowing = CorrelatedShadowing(np.full((DEVICES, sites), 7.82), 13.0, rng)
    costs["shadowing (1,000 x 19)"] = per_call_ms(
        lambda: shadowing.advance(moved), args.repeat, args.calls
    )
    los = CorrelatedLosState(rng.random((DEVICES, sites)), 50.0, rng)
    p_los = rng.random((DEVICES, sites))
    costs["LOS state (1,000 x 19)"] = per_call_ms(
        lambda: los.advance(moved, p_los), args.repeat, args.calls
    )
    rsrp = -80.0 - 20.0 * rng.random((DEVICES, layout.n_cells))
    handover = HandoverState(DEVICES, rsrp.argmax(axis=1), HandoverConfig(), layout.n_cells)
    clock = [0.0]

    def step() -> None:  # measurements every 2nd update, a cell search every 8th
        clock[0] += DT_S
        noisy = rsrp + rng.normal(0.0, 1.0, rsrp.shape)
        handover.step(clock[0], noisy, np.full(DEVICES, 5.0))

    noise_ms = per_call_ms(lambda: rsrp + rng.normal(0.0, 1.0, rsrp.shape), 3, args.calls)
    costs["handover (1,000 x 8 of 57)"] = per_call_ms(step, args.repeat, args.calls) - noise_ms
    env = Environment(
        preset.model, preset.frequency_hz, preset.bs_height_m, preset.antenna, "mixed", 0.5
    )
    heights = drop_heights(DEVICES, 0.8, rng)
    gains_ms = per_call_ms(
        lambda: link_gains(layout, xy, heights, env, rng, rng, rng), args.repeat, 10
    )
    print("| per update, 1,000 devices | ms |")
    print("|---|---|")
    for name, ms in costs.items():
        print(f"| {name} | {ms:.3f} |")
    print(f"| engine: link_gains from scratch (1,000 x 57) | {gains_ms:.2f} |")
    ours = costs["mobility: random_direction"] + sum(
        ms for name, ms in costs.items() if not name.startswith("mobility")
    )
    print(
        f"\nmobility (random direction) + shadowing + LOS + handover: {ours:.2f} ms per update,"
        f" {ours * UPDATES_PER_HOUR / 1e3:.0f} s per simulated hour at {DT_S} s updates;"
        f" with link_gains: {(ours + gains_ms) * UPDATES_PER_HOUR / 1e3:.0f} s"
    )


if __name__ == "__main__":
    main()
