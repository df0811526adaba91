"""netfl against Flower 1.42's simulation engine on one FedAvg workload, whole process
(issue 32, item 6).

The workload: scikit-learn's digits, 297 images held out, the other 1,500 split IID over
100 clients, 10 clients a round, the MLP 64-64-10, one local epoch of batches of 32 at
lr 0.1, the global model evaluated on the held-out images every round, 100 rounds.
netfl runs ``benchmarks/flower/netfl_digits.yaml`` (a fixed-rate radio, instant
distribution) with ``netfl simulate``; Flower runs ``benchmarks/flower/flower_digits.py``
(``run_simulation`` on Ray). Each run is a fresh process, timed from its start to its
exit (imports, data, start-up, the rounds, the writes); the two alternate (netfl,
Flower, netfl, ...) so a change of the machine's load hits both, and the ratio is taken
pair by pair. Wall seconds, and CPU seconds (user + system of the process and the
children it waited for; Ray's daemons are not among them, so Flower's CPU is a lower
bound).

Flower is an optional benchmark dependency, best in its own virtual environment::

    python -m venv /tmp/flwr && /tmp/flwr/bin/pip install "flwr[simulation]==1.42.*" \\
        torch==2.13.0 scikit-learn
    python -m benchmarks.flower_vs_netfl --flower-python /tmp/flwr/bin/python --pairs 5

Without ``--flower-python`` (or where Flower does not import) only netfl is measured.
A second ``--netfl-tree`` (a checkout, e.g. main's) adds netfl's "before" column, run in
the same alternation.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of one process from start to exit (its waited-for children
    included); raises if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def netfl_command(tree: Path, out: Path, rounds: int) -> tuple[list[str], dict[str, str]]:
    scenario = HERE / "flower" / "netfl_digits.yaml"
    command = [sys.executable, "-m", "netfl", "simulate", str(scenario), "--quiet", "--force"]
    command += ["--out", str(out), "--set", f"fl.rounds={rounds}"]
    return command, {**os.environ, "PYTHONPATH": str(tree)}


def flower_command(python: str, rounds: int) -> list[str]:
    return [python, str(HERE / "flower" / "flower_digits.py"), "--rounds", str(rounds)]


def flower_works(python: str | None) -> bool:
    if python is None:
        return False
    probe = subprocess.run([python, "-c", "import flwr, sklearn, torch"], capture_output=True)
    return probe.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5, help="alternations (default 5)")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--flower-python", default=None, help="a Python with flwr 1.42")
    parser.add_argument("--netfl-tree", type=Path, action="append", default=None,
                        help="netfl checkout(s) to run (default: this one)")  # fmt: skip
    args = parser.parse_args()
    trees = args.netfl_tree or [ROOT]
    with_flower = flower_works(args.flower_python)
    if not with_flower:
        print("# Flower not measured: no --flower-python with flwr, sklearn and torch")
    times: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.pairs):
            for index, tree in enumerate(trees):
                command, env = netfl_command(tree, Path(folder) / f"run{index}", args.rounds)
                times.setdefault(f"netfl ({tree})", []).append(timed(command, env))
            if with_flower:
                command = flower_command(args.flower_python, args.rounds)
                times.setdefault("Flower 1.42", []).append(timed(command))
            print({k: [round(w, 2) for w, _ in v] for k, v in times.items()}, flush=True)
    print(
        f"\n{args.rounds} rounds, {args.pairs} runs each, alternating; seconds, median (min-max)\n"
    )
    print("| what | wall s | CPU s |")
    print("|---|---|---|")
    for name, runs in times.items():
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        print(
            f"| {name} | {statistics.median(walls):.2f} ({min(walls):.2f}-{max(walls):.2f})"
            f" | {statistics.median(cpus):.2f} |"
        )
    if with_flower:
        flower = times["Flower 1.42"]
        for name, runs in times.items():
            if name != "Flower 1.42":
                ratios = [f[0] / n[0] for f, n in zip(flower, runs, strict=True)]
                median = statistics.median(ratios)
                spread = f"{min(ratios):.1f}-{max(ratios):.1f}"
                print(f"\nFlower / {name}, wall, pair by pair: median {median:.1f}x ({spread})")


if __name__ == "__main__":
    main()
