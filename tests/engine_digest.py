"""Digests of what a run records, to keep the engine's outputs fixed while it gets faster
(issue 27): tests/test_engine_digest.py compares them with digests committed from the
engine before its speed work (d8c9d66), and benchmarks/async_bench.py checks two trees
give the same tables byte for byte.

A digest hashes the timeline (every row: time, round, client, kind, values), the rounds
(times, selections, completions, staleness, counts) and the clients' counters, with
floats written to 12 significant digits: the same run gives the same digest on any
platform whose libm agrees to 12 digits, and any change of an event's time, order, kind
or client changes it.

Run ``python -m tests.engine_digest`` to print the digests of :data:`SCENARIOS`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from netfl.scenario import scenario_from_data
from netfl.selection.base import RoundFeedback
from netfl.selection.random import RandomSelection
from netfl.world import World, build_world


def _devices(count: int, **extra: Any) -> dict[str, Any]:
    group = {
        "name": "phones",
        "count": count,
        "compute_sps": {"dist": "uniform", "low": 20, "high": 200},
        "n_samples": 50,
        **extra,
    }
    return {"groups": [group]}


#: Fixed rates per device: the radio engine (its own work, its own tests) out of the
#: digests, so that they pin the FL engine's events: protocols, exchanges, timeline.
FIXED_RADIO = {
    "model": "fixed",
    "rate_ul_bps": {"dist": "uniform", "low": 1e6, "high": 5e6},
    "rate_dl_bps": {"dist": "uniform", "low": 5e6, "high": 20e6},
}
#: One LTE cell (shared resource blocks, the scheduler's events among the FL engine's):
#: a change of the radio that moves its results changes this digest too (recompute it
#: with ``python -m tests.engine_digest`` and say why).
LTE_CELL = {"sites": 1, "sectors": 1, "radius_m": 300, "indoor_fraction": 0.0}
LTE_RADIO = {
    "model": "lte",
    "channel_model": "umi_nlos",
    "carrier_frequency_hz": 2.5e9,
    # The fixed power per RB the digests were taken with (issue 33's power control has its
    # own tests: tests/test_power_control.py).
    "uplink_power_control": {"mode": "fixed_per_rb"},
}


def _scenario(fl: dict[str, Any], **sections: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "digest",
        "seed": 7,
        "radio": FIXED_RADIO,
        "devices": _devices(300),
        "fl": {"model_size_bits": 4e6, **fl},
        "selection": {"name": "random"},
        "learning": "none",
    }
    data.update(sections)
    return data


#: Availability that drops clients mid-exchange (Markov on/off), so leaving, deadline
#: misses and their counters are in the digest.
_MARKOV = {"kind": "markov", "mean_on_s": 40.0, "mean_off_s": 10.0}

SCENARIOS: dict[str, dict[str, Any]] = {
    "fedavg": _scenario({"rounds": 40, "clients_per_round": 20, "request_fraction": 0.5}),
    "fedavg_drops_deadline": _scenario(
        {"rounds": 30, "clients_per_round": 15, "deadline_s": 4.0, "over_selection": 0.3},
        devices=_devices(300, availability=_MARKOV),
    ),
    "fedcs": _scenario(
        {"protocol": "fedcs", "rounds": 20, "clients_per_round": 10, "deadline_s": 120.0},
        selection={"name": "fedcs"},
    ),
    "fedasync": _scenario(
        {"protocol": "fedasync", "rounds": 600, "concurrency": 20, "request_fraction": 0.5}
    ),
    "fedasync_lte": _scenario(
        {"protocol": "fedasync", "rounds": 400, "concurrency": 20, "request_fraction": 0.5},
        cell=LTE_CELL,
        radio=LTE_RADIO,
    ),
    "fedavg_lte": _scenario(
        {"rounds": 20, "clients_per_round": 20, "request_fraction": 0.5},
        cell=LTE_CELL,
        radio=LTE_RADIO,
    ),
    "fedbuff_drops_deadline": _scenario(
        {
            "protocol": "fedbuff",
            "rounds": 80,
            "concurrency": 20,
            "buffer_size": 5,
            "deadline_s": 2.0,
        },
        devices=_devices(300, availability=_MARKOV),
    ),
    "fedbuff_observed": _scenario(
        {"protocol": "fedbuff", "rounds": 60, "concurrency": 10, "buffer_size": 4},
        selection={"name": "tests.engine_digest:ObservingRandom"},
    ),
    "fedavg_observed": _scenario(
        {"rounds": 10, "clients_per_round": 10, "deadline_s": 4.0},
        selection={"name": "tests.engine_digest:ObservingRandom"},
        devices=_devices(300, availability=_MARKOV),
    ),
    "hierarchical": _scenario(
        {"protocol": "hierarchical", "rounds": 6, "clients_per_round": 10, "kappa2": 3}
    ),
}


class ObservingRandom(RandomSelection):
    """Random selection that keeps every feedback it observes (digested with the run)."""

    supports_async = True

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def observe(self, feedback: RoundFeedback) -> None:
        seen = {}
        for field in dataclasses.fields(feedback):
            value = getattr(feedback, field.name)
            if isinstance(value, Mapping):  # features, signals
                seen.update({f"{field.name}:{k}": v for k, v in sorted(value.items())})
            else:
                seen[field.name] = value
        self.seen.append(";".join(f"{k}={_number(v)}" for k, v in seen.items()))


def _number(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, float | np.floating):
        return "nan" if math.isnan(value) else f"{float(value):.12g}"
    if isinstance(value, list | tuple | np.ndarray):
        return "[" + ",".join(_number(v) for v in value) + "]"
    return str(value)


def digest(world: World) -> str:
    """The digest of a finished run's timeline, rounds and client counters."""
    sha = hashlib.sha256()
    table = world.timeline.to_arrow(sort_by_time=True)
    for name in table.column_names:
        for value in table.column(name).to_pylist():
            sha.update(_number(value).encode())
            sha.update(b",")
        sha.update(b";")
    for record in world.server.records:
        for name in (
            "round",
            "t_start_s",
            "t_end_s",
            "selected",
            "completed",
            "n_dropped",
            "n_deadline_miss",
            "staleness",
            "accuracy",
        ):
            sha.update(f"{name}={_number(getattr(record, name, None))};".encode())
    for name, values in sorted(world.server.client_totals().items()):
        sha.update(f"{name}={_number(np.asarray(values).tolist())};".encode())
    for seen in getattr(world.server.strategy, "seen", []):
        sha.update(seen.encode())
    return sha.hexdigest()


def run(data: dict[str, Any]) -> World:
    world = build_world(scenario_from_data(data))
    world.env.run(until=world.env.process(world.server.run()))
    return world


if __name__ == "__main__":  # pragma: no cover
    for name, data in SCENARIOS.items():
        print(f'    "{name}": "{digest(run(data))}",')
