"""What the radio update changes, and what it costs, on ``scenarios/multicell.yaml``.

Runs the scenario timing-only (``learning: none``, its 1 MB model, 180 samples a device:
the digits share of 1,797 samples over its clients) for ``--seeds`` seeds
under several ``radio.update_interval_s``: ``0`` (every link in flight recomputed at every
change of the interference: the exact fluid model), the default ``0.1``, ``1`` and
``null`` (the multi-cell model before the update: a transfer keeps the SINR it started
with). For each it prints the FL uploads' duration percentiles, the mean round time, the
updates and rate changes, and the CPU time of the run (median over the seeds); and, against
the exact run of the same seed, the relative difference of the upload-duration percentiles
(common random numbers: the same drop, traffic and selection streams).

Run: ``python -m benchmarks.radio_update [--seeds 3] [--budget 600]`` (docs/radio.md,
"The radio update"; docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from netfl.scenario import load_scenario
from netfl.world import build_world

INTERVALS: tuple[float | None, ...] = (0.0, 0.1, 1.0, None)
PERCENTILES = (5, 50, 95)


def run(seed: int, interval: float | None, budget_s: float) -> dict[str, Any]:
    scenario = load_scenario(
        "multicell",
        [
            "learning=none",
            "devices.groups.0.n_samples=180",
            f"seed={seed}",
            f"fl.time_budget_s={budget_s}",
            f"radio.update_interval_s={'null' if interval is None else interval}",
        ],
    )
    world = build_world(scenario)
    start = time.process_time()
    world.run()
    cpu_s = time.process_time() - start
    table = world.timeline.to_arrow().to_pandas()
    records = [r for r in world.server.records if np.isfinite(r.t_end_s)]
    update = getattr(world.network, "update", None)
    uploads, downloads = _durations(table, "upload"), _durations(table, "download")
    return {
        "uploads": len(uploads),
        "upload_s": {p: float(np.percentile(uploads, p)) for p in PERCENTILES},
        "download_s": {p: float(np.percentile(downloads, p)) for p in PERCENTILES},
        "round_s": float(np.mean([r.t_end_s - r.t_start_s for r in records])),
        "updates": getattr(update, "updates", 0),
        "rates_changed": getattr(update, "rates_changed", 0),
        "cpu_s": cpu_s,
    }


def _durations(table: Any, phase: str) -> np.ndarray:
    """Each FL transfer's duration, start to end (``phase``: upload or download)."""
    starts = table[table["kind"] == f"{phase}_start"].set_index(["round", "client"])["t_s"]
    ends = table[table["kind"] == f"{phase}_end"].set_index(["round", "client"])["t_s"]
    return np.asarray((ends - starts.reindex(ends.index)).dropna().to_numpy())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=float, default=600.0, help="simulated seconds a run")
    args = parser.parse_args()
    results: dict[float | None, list[dict[str, Any]]] = {i: [] for i in INTERVALS}
    for seed in range(1, args.seeds + 1):
        for interval in INTERVALS:
            results[interval].append(run(seed, interval, args.budget))
    print(
        "| update_interval_s | uploads | upload p5 / p50 / p95 (s) | vs exact"
        " | download p5 / p50 / p95 (s) | vs exact"
        " | mean round (s) | updates | rate changes | run CPU (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for interval, rows in results.items():
        cells = []
        for key in ("upload_s", "download_s"):
            value = {p: np.mean([r[key][p] for r in rows]) for p in PERCENTILES}
            diff = {
                p: np.mean(
                    [r[key][p] / e[key][p] - 1 for r, e in zip(rows, results[0.0], strict=True)]
                )
                for p in PERCENTILES
            }
            cells.append(" / ".join(f"{value[p]:.3f}" for p in PERCENTILES))
            cells.append(" / ".join(f"{diff[p]:+.0%}" for p in PERCENTILES))
        name = "null" if interval is None else f"{interval:g}"
        print(
            f"| {name} | {np.mean([r['uploads'] for r in rows]):.0f} | "
            + " | ".join(cells)
            + f" | {np.mean([r['round_s'] for r in rows]):.2f}"
            f" | {np.mean([r['updates'] for r in rows]):.0f}"
            f" | {np.mean([r['rates_changed'] for r in rows]):.0f}"
            f" | {np.median([r['cpu_s'] for r in rows]):.2f} |"
        )


if __name__ == "__main__":
    main()
