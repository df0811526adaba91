"""Where a client update's time goes (issue 27): the profile and the floors behind
``docs/benchmarks.md``'s answers to "asynchronous at the synchronous cost?" and "a million
updates a minute".

``profile PROTOCOL``: cProfile of ``benchmarks.async_bench``'s run (``--updates`` updates,
``--strategy``), the profiled seconds per update summed by module (the profiler's own
overhead included: compare modules and protocols, not absolute times).

``floor``: CPU microseconds per update of ``benchmarks.million_bench``'s run (``--rounds``
rounds) as it is, with the timeline's recording switched off, with ``radio.model: fixed``
(transfers as timeouts), with Python's cyclic garbage collector off (what the reference
cycles each transfer leaves cost), and SimPy's own cost per event (processes waiting on
timeouts), each in a fresh process.

``split PROTOCOL``: wall microseconds per update of ``benchmarks.async_bench``'s run (or
``million``: ``benchmarks.million_bench``'s, ``--updates`` / 1,000 rounds) spent
inside the server's process, inside the clients' processes (download, compute, upload),
and the rest (SimPy's loop, the schedulers' timers, the callbacks at a client's end),
without a profiler (a clock read before and after each step of the two).

Run: ``python -m benchmarks.engine_floor profile fedbuff --strategy first``,
``python -m benchmarks.engine_floor split fedbuff`` or
``python -m benchmarks.engine_floor floor --rounds 30``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import subprocess
import sys
import time
from collections.abc import Generator
from typing import Any

from benchmarks import async_bench, million_bench
from benchmarks.side_by_side import HERE


def profile(protocol: str, updates: int, strategy: str) -> None:
    from tests.engine_digest import run

    data = async_bench.scenario(10_000, 100, updates, protocol, 1.0, strategy)
    run(async_bench.scenario(10_000, 100, 200, protocol, 1.0, strategy))  # imports, caches
    profiler = cProfile.Profile()
    profiler.enable()
    run(data)
    profiler.disable()
    by_module: dict[str, float] = {}
    stats: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    for (path, _, _), (_, _, tottime, _, _) in stats.items():
        module = path.split("site-packages/")[-1].split(f"{HERE}/")[-1]
        if module.startswith(("simpy", "numpy")):
            module = "/".join(module.split("/")[:2])
        by_module[module] = by_module.get(module, 0.0) + tottime
    total = sum(by_module.values())
    print(f"{protocol}, {strategy}: {1e6 * total / updates:.0f} profiled us / update")
    for module, seconds in sorted(by_module.items(), key=lambda kv: -kv[1])[:15]:
        print(f"  {1e6 * seconds / updates:7.1f} us  {module}")


def _timed(steps: Generator[Any, Any, Any], spent: dict[str, float], key: str) -> Any:
    """``yield from steps``, adding the seconds spent inside each of its steps to
    ``spent[key]`` (the wrapper's own cost, two clock reads a step, included)."""
    clock, value, error = time.perf_counter, None, None
    while True:
        start = clock()
        try:
            event = steps.send(value) if error is None else steps.throw(error)
        except StopIteration as stop:
            spent[key] += clock() - start
            return stop.value
        spent[key] += clock() - start
        value, error = None, None
        try:
            value = yield event
        except BaseException as caught:  # an interrupt: passed on to the steps
            error = caught


def split(protocol: str, updates: int) -> None:
    """Seconds per update inside the server's process, inside the clients' processes, and
    the rest (SimPy's loop, the schedulers' timers, the callbacks at a client's end)."""
    import netfl.fl.exchange as exchange
    from netfl.scenario import scenario_from_data
    from netfl.world import build_world

    if protocol == "million":  # million_bench's run, updates // 1,000 rounds
        data = million_bench.scenario(1_000_000, 1000, max(updates // 1000, 1), 0.001)
    else:
        data = async_bench.scenario(10_000, 100, updates, protocol, 1.0, "random")
    world = build_world(scenario_from_data(data))
    spent = {"server": 0.0, "client": 0.0}
    server_run, client = world.server.run, exchange.Exchange._client
    world.server.run = lambda: _timed(server_run(), spent, "server")  # type: ignore[method-assign]
    exchange.Exchange._client = lambda self, out: _timed(client(self, out), spent, "client")  # type: ignore[method-assign]
    start = time.perf_counter()
    world.run()
    total = time.perf_counter() - start
    n = sum(len(r.completed) for r in world.server.records)
    rest = total - spent["server"] - spent["client"]
    print(
        f"{protocol}: {1e6 * total / n:.1f} us / update: server {1e6 * spent['server'] / n:.1f},"
        f" clients {1e6 * spent['client'] / n:.1f}, rest {1e6 * rest / n:.1f}"
    )


def _variant(mode: str, rounds: int) -> dict[str, float]:
    """One run of the million benchmark's scenario in this process (``mode``: as is,
    ``norecord``, ``fixed`` or ``nogc``)."""
    import gc

    import netfl.recorder.timeline as timeline
    from netfl.scenario import scenario_from_data
    from netfl.world import build_world

    data = million_bench.scenario(1_000_000, 1000, rounds, 0.001)
    if mode == "fixed":
        data["radio"] = {"model": "fixed", "rate_ul_bps": 2e6, "rate_dl_bps": 1e7}
    if mode == "norecord":
        timeline.Timeline.record = lambda self, *a, **k: None  # type: ignore[method-assign]
        timeline.Timeline.record_many = lambda self, *a, **k: None  # type: ignore[method-assign]
    world = build_world(scenario_from_data(data))
    if mode == "nogc":
        gc.disable()
    start = time.process_time()
    world.run()  # as ``netfl simulate`` runs it (the GC tuned for the event loop)
    cpu = time.process_time() - start
    updates = sum(len(r.completed) for r in world.server.records)
    return {
        "us_per_update": 1e6 * cpu / updates,
        "events_per_update": next(world.env._eid) / updates,
    }


def _simpy_per_event() -> float:
    import simpy

    env = simpy.Environment()

    def waiting(env: simpy.Environment) -> Any:
        while True:
            yield env.timeout(1.0)

    for _ in range(100):
        env.process(waiting(env))
    start = time.process_time()
    env.run(until=3000)
    return 1e6 * (time.process_time() - start) / next(env._eid)


def floor(rounds: int, repeat: int) -> None:
    for _ in range(repeat):
        for mode in ("as is", "norecord", "fixed", "nogc"):
            done = subprocess.run(
                [sys.executable, "-m", "benchmarks.engine_floor", "variant", mode, str(rounds)],
                cwd=HERE,
                capture_output=True,
                text=True,
                check=True,
            )
            print(mode, done.stdout.strip())
    print(f"bare SimPy: {_simpy_per_event():.2f} us / event")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="what", required=True)
    prof = sub.add_parser("profile")
    prof.add_argument("protocol", choices=["fedavg", "fedbuff", "fedasync"])
    prof.add_argument("--updates", type=int, default=20_000)
    prof.add_argument("--strategy", choices=sorted(async_bench.STRATEGIES), default="random")
    parts = sub.add_parser("split")
    parts.add_argument("protocol", choices=["fedavg", "fedbuff", "fedasync", "million"])
    parts.add_argument("--updates", type=int, default=30_000)
    low = sub.add_parser("floor")
    low.add_argument("--rounds", type=int, default=30)
    low.add_argument("--repeat", type=int, default=2)
    variant = sub.add_parser("variant")
    variant.add_argument("mode")
    variant.add_argument("rounds", type=int)
    args = parser.parse_args()
    if args.what == "profile":
        profile(args.protocol, args.updates, args.strategy)
    elif args.what == "split":
        split(args.protocol, args.updates)
    elif args.what == "floor":
        floor(args.rounds, args.repeat)
    else:
        print(json.dumps(_variant(args.mode, args.rounds)))


if __name__ == "__main__":
    main()
