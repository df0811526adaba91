"""``netfl validate``'s time, memory and disk estimate against the run it describes.

Estimates a scenario (:func:`netfl.forecast.forecast`, what ``netfl validate`` prints), then
runs it with ``netfl simulate --quiet`` in a child process and prints, side by side, the
rounds, the simulated seconds, the timeline rows (and the background transfers' among
them), the run directory's bytes, the peak resident memory (the child's own
``ru_maxrss``) and the wall and CPU seconds of the whole process, with each ratio
estimate / measured.

Run: ``python -m benchmarks.forecast_check SCENARIO [--set KEY=VALUE ...]``, e.g. issue
34's planning example scaled to what a shared 2-core machine runs in minutes:
``python -m benchmarks.forecast_check compare_selection --set devices.groups.0.count=2000
--set fl.rounds=500 --set fl.time_budget_s=null`` (docs/benchmarks.md, "How long, how
much").
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from netfl.forecast import forecast
from netfl.scenario import load_scenario


def measure(scenario: str, overrides: list[str]) -> dict[str, float]:
    """Run the scenario in a child process: what it recorded and what it took."""
    with tempfile.TemporaryDirectory(prefix="forecast-check-") as folder:
        out = Path(folder) / "run"
        command = [sys.executable, "-m", "netfl", "simulate", scenario, "--quiet"]
        command += [f"--set={item}" for item in overrides] + ["--out", str(out)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, check=True)
        wall_s = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        summary = json.loads((out / "summary.json").read_text())
        kinds = pq.read_table(out / "timeline.parquet", columns=["kind"]).column("kind")
        background = sum(str(k).startswith("background_flow") for k in kinds.to_pylist())
        disk = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    return {
        "rounds": float(summary["rounds"]),
        "sim_time_s": float(summary["sim_time_s"]),
        "rows": float(len(kinds)),
        "background_rows": float(background),
        "disk_bytes": float(disk),
        "peak_bytes": float(after.ru_maxrss * 1024),  # KiB on Linux: the largest child's
        "wall_s": wall_s,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    estimate = forecast(load_scenario(args.scenario, args.overrides))
    wall = estimate.wall.total_s if estimate.wall is not None else float("nan")
    planned = {
        "rounds": float(estimate.rounds),
        "sim_time_s": float(estimate.sim_time_s or float("nan")),
        "rows": float(estimate.memory.timeline_rows),
        "background_rows": float(estimate.rows.background),
        "disk_bytes": float(estimate.disk.total_bytes),
        "peak_bytes": float(estimate.memory.total_bytes),
        "wall_s": wall,
        "cpu_s": wall,
    }
    measured = measure(args.scenario, args.overrides)
    print("| quantity | estimate | measured | estimate / measured |")
    print("|---|---:|---:|---:|")
    for key, value in planned.items():
        real = measured[key]
        ratio = value / real if real else float("nan")
        if key.endswith("_bytes"):
            shown = f"{value / 2**20:,.1f} MiB | {real / 2**20:,.1f} MiB"
        else:
            shown = f"{value:,.1f} | {real:,.1f}"
        print(f"| {key} | {shown} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
