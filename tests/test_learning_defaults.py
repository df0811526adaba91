"""The new keys of issue 24 at their defaults (fl.partial_work: false, fl.aggregation:
fedavg, learning.prox_mu: 0) change no result: five small scenarios (LTE with background
traffic and jobs, FedCS with binding deadlines, FedBuff, HierFAVG, timing only) give the
timelines and rounds recorded before the keys existed (tests/default_results.py says how
the digests were taken and how to retake them when a change moves results on purpose)."""

from __future__ import annotations

import json

import pytest

from tests.default_results import DIGESTS, SCENARIOS, run_digests

RECORDED = json.loads(DIGESTS.read_text())


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_default_results_are_unchanged(name, tmp_path):
    assert run_digests(name, tmp_path) == RECORDED["digests"][name], (
        "regenerate only if the change is meant to move results: python -m"
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
