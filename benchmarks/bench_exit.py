"""Process exit after ``netfl simulate`` has printed its run directory (issue 16, item 11).

Side by side, interleaved, in fresh processes: the old entry (``sys.exit(main())``, the
interpreter's full teardown) and today's (``netfl.cli.entry``: ``os._exit`` after the run
directory is written and stdout/stderr are flushed). Prints the median seconds from the
start to the run directory's line and from that line to the process's end.

Usage::

    OMP_NUM_THREADS=1 python -m benchmarks.bench_exit --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time

ENTRIES = {
    "sys.exit(main())": "import sys; from netfl.cli import main; sys.exit(main())",
    "entry() (os._exit)": "from netfl.cli import entry; entry()",
}


def once(code: str, scenario: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-c", code, "simulate", scenario, "--quiet", "--out", tmp]
        start = time.perf_counter()
        process = subprocess.Popen([*command, "--force"], stdout=subprocess.PIPE, text=True)
        assert process.stdout is not None
        process.stdout.readline()
        printed = time.perf_counter()
        process.wait()
        return printed - start, time.perf_counter() - printed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="quickstart")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in ENTRIES}
    for _ in range(args.repeats):
        for name, code in ENTRIES.items():
            times[name].append(once(code, args.scenario))
    print("| entry | start to run dir (s) | exit after it (s) |")
    print("|---|---|---|")
    for name, pairs in times.items():
        run = statistics.median(p[0] for p in pairs)
        exit_s = statistics.median(p[1] for p in pairs)
        print(f"| {name} | {run:.2f} | {exit_s:.2f} |")


if __name__ == "__main__":
    main()
