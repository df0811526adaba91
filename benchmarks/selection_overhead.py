"""Wall-clock cost of the learning-aware strategies' decisions (select + observe).

Drives each strategy with synthetic learning signals for a number of rounds and prints
the mean milliseconds per round spent in the strategy's own calls (``choose_polled``,
``select``, ``observe``); building the synthetic inputs is not counted. Not a test; run
by hand:

    python -m benchmarks.selection_overhead --clients 100 --budget 10 --rounds 300

The strategies' matrix products are small, so numpy's BLAS threads mostly contend with
each other: on a shared machine GPFL and NCCB measured 5-10 times slower with the
default threads than with ``OPENBLAS_NUM_THREADS=1``, which gives steadier figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from netfl.registry import strategies
from netfl.selection.base import PopulationInfo, RoundFeedback, SelectionContext, make_strategy


def _context(r: int, info: PopulationInfo, contexts: np.ndarray, rng) -> SelectionContext:
    candidates = np.arange(info.n_clients)
    n = len(candidates)
    return SelectionContext(
        round=r,
        now_s=float(r),
        candidates=candidates,
        budget=info.budget,
        update_time_s=np.zeros(n),
        upload_time_s=np.zeros(n),
        n_samples=info.n_samples,
        features={"loss": rng.uniform(0.1, 3.0, n), "context": contexts},
    )


def _feedback(r: int, selected: np.ndarray, params: int, rng) -> RoundFeedback:
    k = len(selected)
    times = np.ones(k)
    return RoundFeedback(
        round=r,
        selected=selected,
        completed=np.ones(k, bool),
        download_time_s=times,
        update_time_s=times,
        upload_time_s=times,
        exchange_time_s=3 * times,
        round_time_s=3.0,
        local_loss=rng.uniform(0.1, 3.0, k),
        global_accuracy=min(0.9, 0.1 + r / 500),
        global_loss=2.0 / (1 + r),
        signals={
            "local_loss_std": rng.uniform(0.0, 0.5, k),
            "update_vector": rng.normal(size=(k, params)),
            "global_update": rng.normal(size=params),
        },
    )


def run(name: str, clients: int, budget: int, rounds: int, params: int) -> float:
    rng = np.random.default_rng(0)
    info = PopulationInfo(clients, budget, rng.integers(50, 500, clients), rounds=rounds)
    strategy = make_strategy(strategies().load(name), {})
    strategy.setup(info, np.random.default_rng(1))
    contexts = rng.integers(-20, 20, size=(clients, 16)).astype(float)
    spent_s = 0.0
    for r in range(rounds):
        ctx = _context(r, info, contexts, rng)
        start = time.perf_counter()
        polled = list(strategy.choose_polled(ctx))
        spent_s += time.perf_counter() - start
        if polled and strategy.poll_signal == "update_vector":
            vectors = rng.normal(size=(clients, params))
            ctx = dataclasses.replace(ctx, features={**ctx.features, "update_vector": vectors})
        start = time.perf_counter()
        selected = np.asarray(strategy.select(ctx), dtype=np.int64)
        spent_s += time.perf_counter() - start
        feedback = _feedback(r, selected, params, rng)
        start = time.perf_counter()
        strategy.observe(feedback)
        spent_s += time.perf_counter() - start
    return spent_s / rounds * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--budget", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--params", type=int, default=100_000, help="update-vector size")
    args = parser.parse_args()
    for name in ("random", "ucb_cs", "pow_d", "rpow_d", "oort", "gpfl", "k_linucb", "nccb"):
        ms = run(name, args.clients, args.budget, args.rounds, args.params)
        print(f"{name:10s} {ms:8.2f} ms/round")


if __name__ == "__main__":
    main()
