"""Fuzz ``netfl validate`` with hostile and mutated scenario files (issue 16, item 1).

``python -m benchmarks.bench_fuzz_validate [--cases 1000]`` draws the cases of
``tests/fuzz_scenarios.py`` (mutated shipped scenarios and random bytes), plus the two
hostile files of the issue (nine levels of nine aliases; 5,000 nested lists), runs each
through ``netfl validate`` in-process and checks exit 0 or 2, one ``error:`` line per
problem and no traceback. Prints the count per exit code and the median and maximum wall
time per file (after one warm-up file that imports what validation imports); fails if any file
takes longer than 1 s.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from tests.fuzz_scenarios import check_outcome, scenario_bytes, validate_file, warm_up
from tests.test_hostile_yaml import billion_laughs

LIMIT_S = 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    args = parser.parse_args()
    codes: Counter[int] = Counter()
    walls: list[float] = []
    folder = Path(tempfile.mkdtemp(prefix="netfl-fuzz-"))
    path = folder / "fuzz.yaml"

    def one(content: bytes) -> None:
        path.write_bytes(content)
        code, err, wall = validate_file(path)
        check_outcome(path, code, err)
        codes[code] += 1
        walls.append(wall)

    warm_up(folder)  # imports the schema, registries, torch: not part of a file's time
    for hostile in (billion_laughs(), "x: " + "[" * 5000 + "]" * 5000):
        one(hostile.encode())
        print(f"hostile file of {len(hostile):,} bytes: exit 2, {walls[-1]:.3f} s")

    @settings(
        max_examples=args.cases,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(content=scenario_bytes())
    def run(content: bytes) -> None:
        one(content)

    run()
    print(f"{len(walls)} files: exit codes {dict(sorted(codes.items()))}")
    print(
        f"wall per file: median {statistics.median(walls) * 1000:.1f} ms,"
        f" max {max(walls) * 1000:.1f} ms"
    )
    if max(walls) > LIMIT_S:
        raise SystemExit(f"a file took {max(walls):.2f} s (limit {LIMIT_S} s)")


if __name__ == "__main__":
    main()
