"""Issue 24's performance goals, measured side by side on compare_selection's loaded LTE network.

- ``partial``: partial work must not make a round cost more than 1.3x the same round
  without it, per trained client step (clients that would have been dropped now train, so
  a round trains more steps): wall seconds of the run divided by the local SGD steps of the
  updates aggregated, with ``fl.partial_work`` on and off, run in turn (A B A B ...) so
  that the paired ratios see the same machine.
- ``optimizers``: a server optimizer must cost less than 5% of a round's wall time: the
  seconds spent in the aggregation rule (``Aggregator.aggregate``, timed inside the run)
  over the run's wall seconds, for each rule; and the whole run's wall time against
  FedAvg's, paired.

Two settings (``--setting``): ``lte``, compare_selection's loaded cell with a 20 s
deadline (the late clients are mostly late on the radio), and ``stragglers``, the
quickstart's phones with a 6 s deadline (compute stragglers). Run on one core, e.g.
``OMP_NUM_THREADS=1 taskset -c 0 python -m benchmarks.learning_rules_bench partial
--setting stragglers --repeats 5``; prints Markdown tables (the numbers in
``docs/benchmarks.md`` come from it).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from netfl.scenario import load_scenario
from netfl.simulation import simulate

RULES = ("fedavg", "fednova", "fedavgm", "fedadagrad", "fedadam", "fedyogi")


#: The settings measured: compare_selection's loaded LTE network with a 20 s deadline (most
#: late clients are late on the radio), and the quickstart's compute-heterogeneous phones
#: with a 6 s deadline (a fifth of the selected clients are compute stragglers).
SETTINGS = {
    "lte": ("compare_selection", ["fl.deadline_s=20", "selection={name: random}"]),
    "stragglers": ("quickstart", ["fl.deadline_s=6"]),
}


def scenario(rounds: int, setting: str = "lte", **sets: Any) -> Any:
    """The setting's scenario with a fixed number of rounds."""
    name, base = SETTINGS[setting]
    overrides = [
        f"fl.rounds={rounds}",
        "fl.time_budget_s=null",
        *base,
        *(f"{key}={value}" for key, value in sets.items()),
    ]
    return load_scenario(name, overrides)


@contextmanager
def timed(cls: type, name: str, spent: list[tuple[float, float]]) -> Iterator[None]:
    """Add the (wall, CPU) seconds spent in ``cls.name`` to ``spent``."""
    original: Callable[..., Any] = getattr(cls, name)

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        start, cpu = time.perf_counter(), time.process_time()
        try:
            return original(self, *args, **kwargs)
        finally:
            spent.append((time.perf_counter() - start, time.process_time() - cpu))

    setattr(cls, name, wrapper)
    try:
        yield
    finally:
        setattr(cls, name, original)


def one_run(sc: Any) -> dict[str, float]:
    """Run ``sc``: wall and CPU seconds, trained client steps and the time inside the rule."""
    from netfl.learning.aggregation.aggregator import Aggregator

    spent: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as tmp, timed(Aggregator, "aggregate", spent):
        start, cpu = time.perf_counter(), time.process_time()
        result = simulate(sc, Path(tmp) / "run")
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        rounds = pd.read_parquet(result.run_dir / "rounds.parquet")
        clients = pd.read_parquet(result.run_dir / "clients.parquet")
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "steps": float(trained_steps(sc, rounds, clients)),
        "rule_s": float(sum(s for s, _ in spent)),
        "rule_cpu_s": float(sum(c for _, c in spent)),
        "rounds": float(len(rounds)),
    }


def trained_steps(sc: Any, rounds: pd.DataFrame, clients: pd.DataFrame) -> int:
    """Local SGD steps of the aggregated updates (the full plan without partial work)."""
    if "steps_done" in rounds:
        total = 0
        for selected, completed, done in zip(
            rounds["selected"], rounds["completed"], rounds["steps_done"], strict=True
        ):
            kept = set(np.asarray(completed).tolist())
            total += sum(int(s) for c, s in zip(selected, done, strict=True) if c in kept)
        return total
    n = clients.set_index("client")["n_samples"]
    learning = sc.learning
    per_client = learning.local_epochs * np.ceil(n / learning.batch_size)
    return int(sum(per_client[np.asarray(c)].sum() for c in rounds["completed"]))


def partial(repeats: int, rounds: int, setting: str) -> None:
    one_run(scenario(rounds, setting))  # warm-up: imports, dataset, first allocations
    rows = []
    for _ in range(repeats):
        off = one_run(scenario(rounds, setting, **{"fl.partial_work": "false"}))
        on = one_run(scenario(rounds, setting, **{"fl.partial_work": "true"}))
        rows.append((off, on))
    per_step = [(on["wall_s"] / on["steps"]) / (off["wall_s"] / off["steps"]) for off, on in rows]
    per_round = [
        (on["wall_s"] / on["rounds"]) / (off["wall_s"] / off["rounds"]) for off, on in rows
    ]
    print(f"{setting}: {SETTINGS[setting]}, {rounds} rounds, {repeats} pairs\n")
    print("| partial work | wall s (median) | trained client steps | ms per step (median) |")
    print("|---|---|---|---|")
    for index, name in enumerate(("off", "on")):
        runs = [pair[index] for pair in rows]
        wall = statistics.median(r["wall_s"] for r in runs)
        steps = statistics.median(r["steps"] for r in runs)
        ms = statistics.median(1e3 * r["wall_s"] / r["steps"] for r in runs)
        print(f"| {name} | {wall:.2f} | {steps:.0f} | {ms:.3f} |")
    print(
        f"\nper trained client step, on / off: median {statistics.median(per_step):.3f}"
        f" (pairs: {', '.join(f'{r:.3f}' for r in per_step)}); per round:"
        f" median {statistics.median(per_round):.3f}"
    )


def optimizers(repeats: int, rounds: int, setting: str) -> None:
    one_run(scenario(rounds, setting))  # warm-up
    results: dict[str, list[dict[str, float]]] = {rule: [] for rule in RULES}
    for _ in range(repeats):
        for rule in RULES:
            sc = scenario(rounds, setting, **{"fl.aggregation.name": rule})
            results[rule].append(one_run(sc))
    print(f"{setting}: {SETTINGS[setting]}, {rounds} rounds, {repeats} runs each\n")
    print(
        "| rule | run CPU s | in the rule, CPU ms a round | share of the run's CPU"
        " | share of its wall time | run CPU / FedAvg's |"
    )
    print("|---|---|---|---|---|---|")
    base = results["fedavg"]
    for rule in RULES:
        runs = results[rule]
        cpu = statistics.median(r["cpu_s"] for r in runs)
        per_round = statistics.median(1e3 * r["rule_cpu_s"] / r["rounds"] for r in runs)
        share = statistics.median(r["rule_cpu_s"] / r["cpu_s"] for r in runs)
        wall_share = statistics.median(r["rule_s"] / r["wall_s"] for r in runs)
        ratio = statistics.median(r["cpu_s"] / b["cpu_s"] for r, b in zip(runs, base, strict=True))
        print(
            f"| {rule} | {cpu:.2f} | {per_round:.3f} | {share:.2%} | {wall_share:.2%}"
            f" | {ratio:.3f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=["partial", "optimizers"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--setting", choices=list(SETTINGS), default="lte")
    args = parser.parse_args()
    run = {"partial": partial, "optimizers": optimizers}[args.case]
    run(args.repeats, args.rounds, args.setting)


if __name__ == "__main__":
    main()
