"""Run one measurement in a fresh process that imports netfl from a given checkout, so two
trees (this one and a previous commit's, ``git worktree add /tmp/base <commit>``) are
measured side by side, interleaved, on the same machine (issue 27).

A child (:func:`child_main`) builds and runs a scenario given as JSON, then prints one
JSON line: CPU and wall seconds of build + ``env.run``, the SimPy events scheduled, the
client updates, and the SHA-256 of the timeline and rounds tables it wrote (Parquet,
written the same way by both trees), so the driver can check the two trees recorded the
same run byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]


def measure(tree: Path, scenario: dict[str, Any], profile: Path | None = None) -> dict[str, Any]:
    """One child run of ``scenario`` with netfl imported from ``tree``."""
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "scenario.json"
        spec.write_text(json.dumps(scenario))
        command = [sys.executable, "-m", "benchmarks.side_by_side", str(tree), str(spec)]
        if profile is not None:
            command.append(str(profile))
        done = subprocess.run(command, cwd=HERE, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(
    trees: Sequence[Path], scenario: dict[str, Any], repeat: int
) -> dict[Path, dict[str, Any]]:
    """``repeat`` interleaved runs of each tree (A B A B ...): medians of the CPU and wall
    seconds, and the tables' digests (which must agree between trees)."""
    runs: dict[Path, list[dict[str, Any]]] = {tree: [] for tree in trees}
    for _ in range(repeat):
        for tree in trees:
            runs[tree].append(measure(tree, scenario))
    out = {}
    for tree, results in runs.items():
        first = results[0]
        out[tree] = {
            **first,
            "cpu_s": statistics.median(r["cpu_s"] for r in results),
            "wall_s": statistics.median(r["wall_s"] for r in results),
            "cpu_runs": [round(r["cpu_s"], 2) for r in results],
        }
    return out


def child_main(argv: Sequence[str]) -> None:
    tree, spec = Path(argv[0]), Path(argv[1])
    profile = Path(argv[2]) if len(argv) > 2 else None
    sys.path.insert(0, str(tree))
    import pyarrow.parquet as pq

    from netfl.recorder.tables import rounds_table
    from netfl.scenario import scenario_from_data
    from netfl.world import build_world

    data = json.loads(spec.read_text())
    profiler = None
    if profile is not None:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    cpu, wall = time.process_time(), time.perf_counter()
    world = build_world(scenario_from_data(data))
    if hasattr(world, "run"):  # the tree's own way of running (World.run: tuned GC)
        world.run()
    else:
        world.env.run(until=world.env.process(world.server.run()))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(str(profile))
    digests = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, table in (
            ("timeline", world.timeline.to_arrow(sort_by_time=True)),
            ("rounds", rounds_table(world.server.records)),
        ):
            path = Path(folder) / f"{name}.parquet"
            pq.write_table(table, path, compression="zstd")
            digests[name] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    print(
        json.dumps(
            {
                "netfl": str(Path(sys.modules["netfl"].__file__ or "").parent),
                "cpu_s": cpu,
                "wall_s": wall,
                "events": next(world.env._eid),  # SimPy's event ids: events scheduled
                "updates": sum(len(r.completed) for r in world.server.records),
                "rows": len(world.timeline),
                "digests": digests,
            }
        )
    )


if __name__ == "__main__":
    child_main(sys.argv[1:])
