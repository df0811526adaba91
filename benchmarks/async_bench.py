"""Asynchronous against synchronous FL for the same number of client updates (issues 15, 27).

Timing-only LTE (``learning: none``, an isolated M.2135 UMi NLOS cell,
``benchmarks/cells.py``, equal sharing),
``--devices`` devices (10,000), ``--concurrency`` clients training at once (100) and
``--updates`` client updates (100,000): synchronous FedAvg with ``concurrency`` clients per
round for ``updates / concurrency`` rounds; FedBuff with ``buffer_size`` 10 for
``updates / 10`` versions; FedAsync for ``updates`` versions. CPU seconds of the whole
build + ``env.run`` (what ``netfl simulate`` adds, writing the tables, is left out), each
run in a fresh process (:mod:`benchmarks.side_by_side`), median of ``--repeat``, and the
ratio to the synchronous run of the same tree.

``--vs TREE`` runs a second checkout (the previous commit: ``git worktree add /tmp/base
HEAD~1``) interleaved with this one, prints the ratio of the two, and checks that both
recorded the same timeline and rounds, byte for byte.

Run: ``python -m benchmarks.async_bench [--devices 10000] [--updates 100000] [--repeat 3]
[--vs TREE]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.cells import ISOLATED_CELL, ISOLATED_RADIO
from benchmarks.side_by_side import HERE, compare
from netfl.selection.base import SelectionContext, Strategy


class FirstCandidates(Strategy):
    """Selects the first candidates (``--strategy first``): the engine's cost without a
    strategy's own (random selection's draw costs about as much as the rest of an
    asynchronous server's per-update work; docs/benchmarks.md)."""

    supports_async = True

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        return ctx.candidates[: ctx.budget].tolist()


STRATEGIES = {
    "random": {"name": "random"},
    "first": {"name": "benchmarks.async_bench:FirstCandidates"},
}


def scenario(
    devices: int,
    concurrency: int,
    updates: int,
    protocol: str,
    request_fraction: float = 1.0,
    strategy: str = "random",
) -> dict[str, Any]:
    fl: dict[str, Any] = {
        "protocol": protocol,
        "model_size_bits": 8e6,
        "request_fraction": request_fraction,
    }
    if protocol == "fedavg":
        fl.update(clients_per_round=concurrency, rounds=updates // concurrency)
    elif protocol == "fedbuff":
        fl.update(concurrency=concurrency, buffer_size=10, rounds=updates // 10)
    else:
        fl.update(concurrency=concurrency, rounds=updates)
    return {
        "name": f"async-bench-{protocol}",
        "seed": 1,
        "cell": {**ISOLATED_CELL, "radius_m": 500},
        "radio": ISOLATED_RADIO,
        "devices": {
            "groups": [
                {
                    "name": "phones",
                    "count": devices,
                    "compute_sps": {"dist": "uniform", "low": 20, "high": 200},
                    "n_samples": 50,
                }
            ]
        },
        "fl": fl,
        "selection": STRATEGIES[strategy],
        "learning": "none",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--devices", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--updates", type=int, default=100_000)
    parser.add_argument("--request-fraction", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--protocols", nargs="+", default=["fedavg", "fedbuff", "fedasync"])
    parser.add_argument("--strategy", choices=sorted(STRATEGIES), default="random")
    parser.add_argument("--vs", type=Path, help="a second checkout, run side by side")
    args = parser.parse_args()
    trees = [HERE] + ([args.vs.resolve()] if args.vs else [])
    print(
        "| protocol | tree | updates | SimPy events / update | CPU s (median) | us / update |"
        " x fedavg | x previous | same tables |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    fedavg: dict[Path, float] = {}
    for protocol in args.protocols:
        data = scenario(
            args.devices,
            args.concurrency,
            args.updates,
            protocol,
            args.request_fraction,
            args.strategy,
        )
        results = compare(trees, data, args.repeat)
        for tree in trees:
            result = results[tree]
            per_update = result["cpu_s"] / max(result["updates"], 1)
            if protocol == "fedavg":
                fedavg[tree] = per_update
            to_fedavg = per_update / fedavg[tree] if tree in fedavg else float("nan")
            previous = results[trees[-1]]["cpu_s"]
            same = results[trees[-1]]["digests"] == result["digests"]
            label = "this" if tree == HERE else str(tree)
            print(
                f"| {protocol} | {label} | {result['updates']:,} |"
                f" {result['events'] / max(result['updates'], 1):.1f} | {result['cpu_s']:.2f} |"
                f" {1e6 * per_update:.0f} | {to_fedavg:.2f} | {result['cpu_s'] / previous:.2f} |"
                f" {'yes' if same else 'NO'} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
