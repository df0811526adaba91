"""Fingerprints of what a run records, to keep the engine's outputs fixed while it gets
faster (issue 27) on every x86-64 CPU (issue 32): tests/test_engine_digest.py compares
them with the fingerprints in ``tests/data/engine_digests.json``, and
benchmarks/async_bench.py checks two trees give the same tables byte for byte.

A run's fingerprint covers the timeline (every row, in time order: round, client, kind
exactly; times, bits and rates to the tolerance of :mod:`tests.fingerprint`), the rounds
(selections, completions, counts, staleness exactly; times and accuracy to tolerance),
the clients' counters and what a strategy observed. The integers and the order of events
are reproducible on any CPU; float values are compared with a stated tolerance, since
numpy's SIMD loops (AVX-512 or not) round transcendental functions differently in the
last bit (a hash of floats written to 12 digits failed on a CPU without AVX-512 when a
value sat at a rounding boundary).

``python -m tests.engine_digest --write`` records the fingerprints of :data:`SCENARIOS`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from netfl.scenario import scenario_from_data
from netfl.selection.base import RoundFeedback
from netfl.selection.random import RandomSelection
from netfl.world import World, build_world
from tests.fingerprint import fingerprint
from tests.fingerprint import mismatches as table_mismatches

RECORDED = Path(__file__).resolve().parent / "data" / "engine_digests.json"


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
    """Random selection that keeps every feedback it observes (fingerprinted with the run)."""

    supports_async = True

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[dict[str, Any]] = []

    def observe(self, feedback: RoundFeedback) -> None:
        seen: dict[str, Any] = {}
        for field in dataclasses.fields(feedback):
            value = getattr(feedback, field.name)
            if isinstance(value, Mapping):  # features, signals
                seen.update({f"{field.name}:{k}": v for k, v in sorted(value.items())})
            else:
                seen[field.name] = value
        self.seen.append(seen)


def _observations(seen: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per observed value: floats in ``value``, everything else as text."""
    rows: list[tuple[int, str, str, float]] = []
    for index, observation in enumerate(seen):
        for key, raw in observation.items():
            items = np.asarray(raw).ravel().tolist() if _listlike(raw) else [raw]
            for position, item in enumerate(items):
                is_float = isinstance(item, float) and not isinstance(item, bool)
                text = "" if is_float else str(item)
                rows.append((index, f"{key}[{position}]", text, item if is_float else math.nan))
    return pd.DataFrame(rows, columns=["observation", "key", "text", "value"])


def _listlike(value: Any) -> bool:
    return isinstance(value, list | tuple | np.ndarray)


def tables(world: World) -> dict[str, pd.DataFrame]:
    """The tables a run's fingerprint covers."""
    rounds = pd.DataFrame(
        {
            name: [_plain(getattr(record, name, None)) for record in world.server.records]
            for name in ROUND_FIELDS
        }
    )
    for name in ("t_start_s", "t_end_s", "accuracy"):
        rounds[name] = rounds[name].astype(float)
    clients = pd.DataFrame(
        {name: np.asarray(v) for name, v in sorted(world.server.client_totals().items())}
    )
    found = {
        "timeline": world.timeline.to_arrow(sort_by_time=True).to_pandas(),
        "rounds": rounds,
        "clients": clients,
    }
    seen = getattr(world.server.strategy, "seen", None)
    if seen is not None:
        found["observed"] = _observations(seen)
    return found


ROUND_FIELDS = (
    "round",
    "t_start_s",
    "t_end_s",
    "selected",
    "completed",
    "n_dropped",
    "n_deadline_miss",
    "staleness",
    "accuracy",
)


def _plain(value: Any) -> Any:
    return np.asarray(value).tolist() if _listlike(value) else value


def fingerprints(world: World) -> dict[str, dict[str, Any]]:
    return {name: fingerprint(table) for name, table in tables(world).items()}


def mismatches(world: World, recorded: dict[str, dict[str, Any]]) -> list[str]:
    """How a finished run differs from its recorded fingerprints (empty: it matches)."""
    found = tables(world)
    if set(found) != set(recorded):
        return [f"tables {sorted(found)} != {sorted(recorded)}"]
    return [f"{name}: {p}" for name in found for p in table_mismatches(found[name], recorded[name])]


def run(data: dict[str, Any]) -> World:
    world = build_world(scenario_from_data(data))
    world.env.run(until=world.env.process(world.server.run()))
    return world


def main() -> None:  # pragma: no cover
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"record them in {RECORDED}")
    args = parser.parse_args()
    found = {name: fingerprints(run(data)) for name, data in SCENARIOS.items()}
    text = json.dumps(found, indent=1, sort_keys=True) + "\n"
    if args.write:
        RECORDED.write_text(text)
    print(text)


if __name__ == "__main__":  # pragma: no cover
    main()
