"""Every count key has a bound that means something, or a cost that does not grow with
it (issue 27 item 1): ``fl.kappa1``, ``fl.kappa2`` and ``cell.antenna_elements`` at
10^12 validated "ok" and then ran for ever (or, for the antenna, ran a nonsense array gain).

The integer keys are found by walking the schema (tests/schema_keys.py): a new one must
either declare its upper bound (shown in docs/scenario.md) or be listed below with why
it needs none.
"""

from __future__ import annotations

from pathlib import Path
from typing import get_origin

import pytest
import yaml

from netfl.config.docs import constraints
from netfl.errors import ScenarioError
from netfl.scenario import scenario_from_data
from tests.fuzz_scenarios import validate_file
from tests.schema_keys import SchemaKey, flatten, schema_keys

#: Integer keys without an upper bound in the schema, and why. "checked": a validation
#: check refuses a value the run cannot carry (tested below at 10^12); "at load": the
#: dataset's partition refuses it when ``simulate`` loads the data (exit 2); "free": the
#: run's cost does not grow with the value.
UNBOUNDED = {
    "seed": ("free", "it only seeds the random streams"),
    "cell.sites": ("checked", "1, 7 or 19"),
    "cell.sectors": ("checked", "1 or 3"),
    "radio.numerology": ("checked", "0 to 3"),
    "radio.uplink.n_rb": ("checked", "at most the band's RBs"),
    "radio.uplink.rb_per_flow": ("checked", "at most the band's RBs"),
    "radio.uplink.tx_power_rbs": ("checked", "at most the band's RBs"),
    "radio.downlink.n_rb": ("checked", "at most the band's RBs"),
    "radio.downlink.rb_per_flow": ("checked", "at most the band's RBs"),
    "radio.downlink.tx_power_rbs": ("checked", "at most the band's RBs"),
    "radio.rate_mapping.block_symbols": ("free", "a parameter of the closed-form thresholds"),
    "devices.groups.0.count": ("checked", "the memory estimate refuses what cannot fit"),
    "traffic.sources.0.rb_per_flow": ("free", "a cap: above the band it is the band"),
    "fl.rounds": ("checked", "the disk estimate refuses a run directory the disk cannot hold"),
    "fl.clients_per_round": ("checked", "at most the population"),
    "fl.concurrency": ("checked", "at most the population"),
    "fl.buffer_size": ("checked", "at most the concurrency"),
    "fl.checkpoint_every": ("free", "a period: a larger one is cheaper"),
    "fl.staleness_hinge_b": ("free", "the knee of a formula"),
    "learning.partition.shards_per_client": ("at load", "shards x devices <= samples"),
    "learning.partition.min_samples": ("at load", "devices x min_samples <= samples"),
    "learning.partition.clusters": ("at load", "at most the devices"),
    "learning.partition.labels_per_cluster": ("at load", "at most the dataset's classes"),
    "learning.batch_size": ("free", "a client's batch is min(batch_size, its samples)"),
    "learning.eval_every_rounds": ("free", "a period: a larger one is cheaper"),
    "learning.max_parallel_clients": ("free", "a cap: above the round's clients it is them"),
    "output.progress_every_rounds": ("free", "a period: a larger one is cheaper"),
    "radio.rate_mapping.ul_srs_period_ms": ("free", "a period: the SRS's share of the symbols"),
    "radio.rate_mapping.packet_payload_bytes": ("free", "a ratio of header to payload"),
    "radio.rate_mapping.packet_header_bytes": ("free", "a ratio of header to payload"),
    "radio.handover.filter_coefficient": ("checked", "one of TS 36.331's filterCoefficient values"),
    "radio.handover.n310": ("checked", "one of TS 36.331's n310 values"),
    "radio.handover.n311": ("checked", "one of TS 36.331's n311 values"),
}


def _integer_keys() -> list[SchemaKey]:
    keys = []
    for key in schema_keys():
        members = flatten(key.field.annotation)
        if int in members and not any(get_origin(m) is list for m in members):
            keys.append(key)
    return keys


def _has_upper_bound(key: SchemaKey) -> bool:
    return any(
        getattr(c, "le", None) is not None or getattr(c, "lt", None) is not None
        for c in constraints(key.field)
    )


INTEGER_KEYS = _integer_keys()


def test_every_count_key_is_bounded_or_says_why_not():
    unbounded = {key.dotted for key in INTEGER_KEYS if not _has_upper_bound(key)}
    assert unbounded == set(UNBOUNDED)


@pytest.fixture
def validate(tmp_path: Path):
    def run(key: SchemaKey, value: object) -> tuple[int, str]:
        path = tmp_path / "scenario.yaml"
        path.write_text(yaml.safe_dump(key.scenario(value)))
        code, err, _ = validate_file(path)
        return code, err

    return run


CHECKED = [k for k in INTEGER_KEYS if UNBOUNDED.get(k.dotted, ("",))[0] == "checked"]


@pytest.mark.parametrize("key", CHECKED, ids=[f"{k.dotted}@{k.context}" for k in CHECKED])
def test_a_checked_count_refuses_ten_to_the_twelve(key, validate):
    code, err = validate(key, 10**12)
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err


AT_LOAD = [k for k in INTEGER_KEYS if UNBOUNDED.get(k.dotted, ("",))[0] == "at load"]


@pytest.mark.parametrize("key", AT_LOAD, ids=[k.dotted for k in AT_LOAD])
def test_a_partition_count_is_refused_when_the_data_is_partitioned(key):
    """What ``simulate`` does when it builds the learner (exit 2, ``learning.partition``)."""
    from netfl.fl.population import build_population
    from netfl.learning.build import prepare_data
    from netfl.rng import Streams

    scenario = scenario_from_data(key.scenario(10**12))
    streams = Streams(scenario.seed)
    population = build_population(scenario.devices, streams)
    assert scenario.learning is not None
    with pytest.raises(ScenarioError, match=r"learning\.partition"):
        prepare_data(scenario.learning, population.n_clients, population.requested_samples, streams)


BOUNDED = [k for k in INTEGER_KEYS if _has_upper_bound(k)]


@pytest.mark.parametrize("key", BOUNDED, ids=[f"{k.dotted}@{k.context}" for k in BOUNDED])
def test_a_bounded_count_refuses_ten_to_the_twelve_naming_the_key(key, validate):
    code, err = validate(key, 10**12)
    assert code == 2, err
    # A dataset's parameters are one mapping: "learning.dataset_params: size_offset: ...".
    parent = ".".join(str(p) for p in key.path[:-1])
    named = f"{key.dotted}: " in err or f"{parent}: {key.name}: " in err
    assert err.count("\n") == 1 and named, err


@pytest.mark.parametrize(
    ("key", "bound"),
    [("fl.kappa1", 1000), ("fl.kappa2", 1000), ("cell.antenna_elements", 32)],
)
def test_the_issues_counts_take_their_bound(key, bound, validate):
    (found,) = [k for k in INTEGER_KEYS if k.dotted == key]
    context = found.context
    if key == "cell.antenna_elements":  # it shapes the sector antenna: 3 sectors
        context = {"cell": {"sectors": 3}}
    found = SchemaKey(found.path, context, found.model, found.field)
    assert validate(found, bound)[0] == 0
    code, err = validate(found, bound + 1)
    assert code == 2 and f"{key}: Input should be less than or equal to {bound}" in err, err
