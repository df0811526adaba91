"""How long and how much: a run's rounds, simulated time, timeline rows, memory, disk and
wall time, estimated from its scenario before anything is built (``netfl validate``).

- **Rounds**: ``fl.rounds``, or as many as fit in ``fl.time_budget_s`` at the expected
  round duration (:mod:`netfl.forecast.rounds`: the protocol's steps, the devices'
  compute, the radio's cost of a transfer at the cells' operating point), whichever comes
  first.
- **Rows** (:mod:`netfl.forecast.rows`): the protocol's per round
  (:func:`netfl.resources.rows_per_round`), the background transfers' (two a file, over
  the simulated time, in every cell), the moving devices' positions, and the strategy's
  scores (``strategy.parquet``).
- **Memory and disk**: :func:`netfl.resources.estimate_memory` and
  :func:`~netfl.resources.estimate_disk` over those rows and rounds.
- **Wall time** (:mod:`netfl.forecast.cost`): start-up, the training's samples and
  rounds, the events, and writing, at costs measured on the development machine
  (docs/benchmarks.md, "How long, how much").

Nothing is cached across scenarios; the radio's operating point is solved once a
scenario (:mod:`netfl.radio.background_load`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from netfl.config import Scenario
from netfl.forecast.cost import WallTime, model_bits, wall_time
from netfl.forecast.rounds import RoundTime, round_time
from netfl.forecast.rows import Rows, rows_of
from netfl.resources import DiskEstimate, MemoryEstimate, estimate_disk, estimate_memory

__all__ = ["Forecast", "forecast"]


@dataclass(frozen=True)
class Forecast:
    """What a run will take (:func:`forecast`)."""

    rounds: float
    round: RoundTime | None
    sim_time_s: float | None
    budget_limited: bool
    rows: Rows
    memory: MemoryEstimate
    disk: DiskEstimate
    wall: WallTime | None

    def lines(self) -> list[str]:
        """What ``netfl validate`` prints: time, memory and disk, one line each."""
        rounds = f"{self.rounds:,.0f} rounds"
        if self.budget_limited:
            rounds = f"about {rounds} in the time budget"
        per = ""
        if self.round is not None:
            per = f" ({self.round.round_s:,.1f} s a round)"
        simulated = ""
        if self.sim_time_s is not None:
            simulated = f", {self.sim_time_s:,.0f} s simulated{per}"
        wall = "wall time not estimated (a plug-in model)"
        if self.wall is not None:
            wall = f"about {_duration(self.wall.total_s)} of wall time ({self.wall.describe()})"
        return [
            f"time: {rounds}{simulated}; {wall}",
            f"memory: {self.memory.describe()}",
            f"disk: {self.disk.describe()}",
        ]


def forecast(scenario: Scenario) -> Forecast:
    """The :class:`Forecast` of ``scenario``."""
    fl = scenario.fl
    bits = model_bits(scenario)
    needs_time = fl.rounds is None or _rows_follow_time(scenario)
    timing = round_time(scenario, bits) if needs_time else None
    rounds = float(fl.rounds) if fl.rounds is not None else math.inf
    sim_time_s = None
    budget_limited = False
    if timing is not None:
        sim_time_s = rounds * timing.round_s
        if fl.time_budget_s is not None and sim_time_s >= fl.time_budget_s:
            budget_limited = True
            # A synchronous round running at the budget is cut there and recorded.
            in_budget = fl.time_budget_s / max(timing.round_s, 1e-9)
            rounds = min(rounds, math.ceil(in_budget) if not fl.is_async else in_budget)
            sim_time_s = float(fl.time_budget_s)
    if math.isinf(rounds):
        rounds = 1.0  # not estimable: one round (the data sizes are unknown)
    rows = rows_of(scenario, rounds, sim_time_s)
    memory = estimate_memory(
        scenario,
        rounds=rounds,
        extra_rows=rows.extra,
        model_bits=bits,
        strategy_rows=rows.strategy,
    )
    disk = estimate_disk(
        scenario,
        rounds=rounds,
        extra_rows=rows.extra,
        strategy_rows=rows.strategy,
    )
    wall = wall_time(scenario, rounds, timing, rows)
    return Forecast(rounds, timing, sim_time_s, budget_limited, rows, memory, disk, wall)


def _rows_follow_time(scenario: Scenario) -> bool:
    """Whether the run's rows grow with its simulated time, not only its rounds
    (background transfers, moving devices' positions)."""
    moving = any(g.mobility.model != "static" for g in scenario.devices.groups)
    recorded = scenario.traffic.record_flows and bool(scenario.traffic.sources)
    return moving or recorded


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:,.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:,.0f} min"
    return f"{seconds / 3600:,.1f} h"
