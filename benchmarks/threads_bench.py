"""CPU threads side by side (issue 16 item 10): ``learning.threads: 1`` (the default) against
``null`` (torch's and BLAS's defaults: every core), each run in a fresh process.

Run: ``python -m benchmarks.threads_bench [--scenario quickstart] [--rounds 10] [--repeat 3]``.
It prints the median wall time of ``netfl simulate`` per setting and their ratio. OMP and
BLAS environment variables are cleared for both, so only the key decides.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def one(scenario: str, rounds: int, threads: str) -> float:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    }
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            sys.executable,
            "-m",
            "netfl",
            "simulate",
            scenario,
            "--out",
            f"{tmp}/run",
            "--quiet",
            "--set",
            f"fl.rounds={rounds}",
            "--set",
            f"learning.threads={threads}",
        ]
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, capture_output=True)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenario", default="quickstart")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"1": [], "null": []}
    for _ in range(args.repeat):
        for setting in times:
            times[setting].append(one(args.scenario, args.rounds, setting))
    one_thread, default = statistics.median(times["1"]), statistics.median(times["null"])
    print(f"| learning.threads | wall (s, median of {args.repeat}) |")
    print("|---|---|")
    print(f"| 1 (default) | {one_thread:.1f} |")
    print(f"| null (library defaults) | {default:.1f} |")
    print(f"\nnull / 1: {default / one_thread:.1f}x")


if __name__ == "__main__":
    main()
