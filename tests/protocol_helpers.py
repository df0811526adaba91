"""Helpers for the device and protocol tests: scenarios built in code, recording strategies."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from netfl.scenario import scenario_from_data
from netfl.selection.base import RoundFeedback, SelectionContext, Strategy
from netfl.world import World, build_world


class Recorder(Strategy):
    """Selects the first ``budget`` candidates in the given ``order`` (default: id order)
    and keeps every context and feedback it receives."""

    def __init__(self, order: list[int] | None = None) -> None:
        self.order = order
        self.contexts: list[SelectionContext] = []
        self.feedback: list[RoundFeedback] = []

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        self.contexts.append(ctx)
        candidates = ctx.candidates.tolist()
        ranked = [c for c in (self.order or candidates) if c in candidates]
        return ranked[: ctx.budget]

    def observe(self, feedback: RoundFeedback) -> None:
        self.feedback.append(feedback)


class Poller(Recorder):
    """Polls the first ``d`` candidates (``choose_polled``, the server's poll contract),
    then selects like ``Recorder``. Timing-only: it declares the poll signal for the
    poll's cost and does not need learning to run."""

    requires = frozenset({"poll_loss"})

    @classmethod
    def scenario_problems(cls, scenario: Any) -> list[Any]:
        return []

    def __init__(self, d: int = 2) -> None:
        super().__init__()
        self.d = d
        self.polled: list[list[int]] = []

    def choose_polled(self, ctx: SelectionContext) -> Sequence[int]:
        clients = ctx.candidates[: self.d].tolist()
        self.polled.append(clients)
        return clients


class UpdatePoller(Poller):
    """Polls for update vectors (GPFL's first round)."""

    requires = frozenset({"update_vector"})


def group(name: str, count: int, **values: Any) -> dict[str, Any]:
    """A device group with constant capability and size unless given."""
    return {"name": name, "count": count, "compute_sps": 50.0, "n_samples": 100, **values}


def scenario(groups: list[dict[str, Any]], **sections: Any) -> dict[str, Any]:
    """A timing-only scenario (learning none) with the given groups; ``sections`` merge in."""
    data: dict[str, Any] = {
        "name": "protocol",
        "seed": 5,
        "radio": {"model": "fixed", "rate_ul_bps": 1.0e6, "rate_dl_bps": 4.0e6},
        "devices": {"groups": groups},
        "fl": {"rounds": 3, "clients_per_round": 2, "model_size_bits": 1.0e6},
        "selection": {"name": "tests.protocol_helpers:Recorder"},
        "learning": "none",
    }
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return copy.deepcopy(data)


def run(data: dict[str, Any], overrides: Sequence[str] = ()) -> World:
    """Build and run a scenario in memory (no run directory)."""
    world = build_world(scenario_from_data(data, overrides=overrides))
    # Until the server is done: background traffic would never run out of events.
    world.env.run(until=world.env.process(world.server.run()))
    return world


def timeline(world: World) -> pd.DataFrame:
    table = world.timeline.to_arrow().to_pandas()
    table["kind"] = table["kind"].astype(str)
    return table.sort_values("t_s", kind="stable").reset_index(drop=True)


def events(world: World, kind: str, round_: int | None = None) -> pd.DataFrame:
    table = timeline(world)
    rows = table[table["kind"] == kind]
    return rows if round_ is None else rows[rows["round"] == round_]


def times_by_client(world: World, kind: str, round_: int) -> dict[int, float]:
    rows = events(world, kind, round_)
    return dict(zip(rows["client"].tolist(), rows["t_s"].tolist(), strict=True))


def fedcs_round_time(
    download_s: float, update_s: Sequence[float], upload_s: Sequence[float]
) -> float:
    """T_d + Theta_|S| with Theta_j = Theta_{j-1} + t_UL + max(0, t_UD - Theta_{j-1})
    (Yoshida et al. 2020 eqs. (1)-(2); Theta counted from the end of distribution)."""
    theta = 0.0
    for t_ud, t_ul in zip(update_s, upload_s, strict=True):
        theta = theta + t_ul + max(0.0, t_ud - theta)
    return download_s + theta


def as_array(values: Sequence[float]) -> np.ndarray:
    return np.asarray(values, dtype=float)


class RandomRecorder(Recorder):
    """Uniform random selection (from the strategy's stream) that records like ``Recorder``."""

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        self.contexts.append(ctx)
        k = min(ctx.budget, len(ctx.candidates))
        return self.rng.choice(ctx.candidates, size=k, replace=False).tolist()


def rbcs_f_table_1() -> dict:
    """The RBCS-F Table 1 example of docs/protocol.md, as a mapping."""
    text = (Path(__file__).parents[1] / "docs" / "protocol.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", text, re.S)
    assert block is not None
    return yaml.safe_load(block.group(1))
