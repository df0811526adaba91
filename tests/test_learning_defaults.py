"""The new keys of issue 24 at their defaults (fl.partial_work: false, fl.aggregation:
fedavg, learning.prox_mu: 0) change no result: five small scenarios (LTE with background
traffic and jobs, FedCS with binding deadlines, FedBuff, HierFAVG, timing only), trained on
the CPU, give the timelines and rounds recorded in tests/data/default_results.json, on any
x86-64 CPU (tests/default_results.py says what a fingerprint pins, to which tolerance, and
how to retake them when a change moves results on purpose)."""

from __future__ import annotations

import json

import pytest

from tests.default_results import DIGESTS, SCENARIOS, run_tables
from tests.fingerprint import mismatches

RECORDED = json.loads(DIGESTS.read_text())["fingerprints"]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_default_results_are_unchanged(name, tmp_path):
    for table, frame in run_tables(name, tmp_path).items():
        assert mismatches(frame, RECORDED[name][table]) == [], (
            f"{table}: regenerate only if the change is meant to move results: python -m"
            " tests.default_results --write"
        )


def test_explicit_defaults_are_the_defaults(tmp_path):
    """Writing the keys out at their defaults is the same scenario."""
    from netfl.scenario import scenario_from_data

    data = SCENARIOS["tiny"]()
    plain = scenario_from_data(data)
    data["fl"].update(partial_work=False, aggregation={"name": "fedavg", "params": {}})
    data["learning"]["prox_mu"] = 0.0
    assert scenario_from_data(data) == plain
