"""The resource request's timeline rows at a million devices (issue 16 item 9).

Build + ``env.run`` of the scheduler benchmark's scenario (timing-only LTE, equal sharing)
with 1,000,000 devices and 1,000 clients a round, for ``ROUNDS`` rounds, importing netfl
from ``TREE`` (a checkout: compare two side by side by running this once per tree).

Run: ``python -m benchmarks.request_rows_bench [TREE] [ROUNDS]`` (defaults: this checkout,
10 rounds).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def main() -> None:
    tree = sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parents[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    sys.path.insert(0, tree)
    from benchmarks.scheduler_bench import scenario
    from netfl.scenario import scenario_from_data
    from netfl.world import build_world

    start = time.perf_counter()
    world = build_world(scenario_from_data(scenario(1_000_000, 1000, rounds)))
    world.env.run(until=world.env.process(world.server.run()))
    print(f"{tree}: {rounds} rounds in {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
