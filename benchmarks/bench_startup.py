"""Start-up benchmark (issue 16, item 4): wall time of short commands, fresh processes.

``python -m benchmarks.bench_startup [--repo PATH ...] [--repeat 15]`` runs each command
``--repeat`` times in a new ``python -m netfl`` process from each repository root (so that
root's code is imported) and prints the median and minimum wall seconds and the median CPU
seconds (user + system; less disturbed by other load on a shared machine) as a Markdown
table, repositories side by side, runs interleaved. Compare the previous code with a
worktree of it, e.g. ``git worktree add /tmp/netfl-before <commit>``. What a command
imports is listed by ``python -X importtime -m netfl validate quickstart 2> imports.txt``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = [
    ["--help"],
    ["validate", "quickstart"],
    ["validate", "mab_cs_paper", "--set", "learning=none"],
    ["list", "strategies"],
]


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wall_s(repo: Path, args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one ``python -m netfl ARGS`` run in ``repo``."""
    cpu = _cpu_s()
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "netfl", *args],
        cwd=repo,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - start, _cpu_s() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", action="append", type=Path, help="repository root(s)")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    repos = args.repo or [Path.cwd()]
    print("| command | " + " | ".join(f"{r}: wall s, median (min); CPU s" for r in repos) + " |")
    print("|---|" + "---|" * len(repos))
    for command in COMMANDS:
        cells = []
        for repo in repos:
            wall_s(repo, command)  # warm the file cache
        times: dict[Path, list[tuple[float, float]]] = {repo: [] for repo in repos}
        for _ in range(args.repeat):
            for repo in repos:  # interleaved, so load changes hit both alike
                times[repo].append(wall_s(repo, command))
        for repo in repos:
            walls = [wall for wall, _ in times[repo]]
            cpu = statistics.median(cpu for _, cpu in times[repo])
            cells.append(f"{statistics.median(walls):.3f} ({min(walls):.3f}); {cpu:.3f}")
        print(f"| `netfl {' '.join(command)}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
