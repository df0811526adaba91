"""The engine's outputs stay fixed while it gets faster (issue 27): each scenario of
tests/engine_digest.py (synchronous, FedCS, asynchronous and hierarchical protocols;
drops, deadlines, over-selection; a strategy that observes) gives the digest it gave
before the speed work (computed at d8c9d66 with ``python -m tests.engine_digest``)."""

from __future__ import annotations

import pytest

from tests.engine_digest import SCENARIOS, digest, run

BEFORE = {
    "fedavg": "f80ceddd3c1785443c1ef41721712fbbb3d12f86a2272c89e34d27265a0e73ab",
    "fedavg_drops_deadline": "cab7614ac382ffae32f39f9fac2e7649b9c2db592e7f8234333cf38eba29e55a",
    "fedcs": "16212d2190f3e8950be7188430453c8c649576048fa37c581d92997125a013f2",
    "fedasync": "64d3ca3d7ecb51dd621cbb7c87eccfbce78cfb10c030cacb74d6e531b749a5eb",
    "fedbuff_drops_deadline": "aa764b8e4c5dca1e59e09813914d931b9b2432a755e540342a1b4ac87f7bfdc6",
    "fedbuff_observed": "8aee61d8ba12ebc88b1adf910aed851b05b9ea93b75a8cbea110b9eb5cd46788",
    "fedavg_observed": "40b51cb32dc5dc7a1bb98ca687d77b6971db416653183b5d3745519995f938cd",
    "hierarchical": "4fc1fd8258b7d52cb54212163e5d6c33dfb6284073a66aec4fd9c735c00b3ea8",
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_engine_records_what_it_recorded_before(name):
    world = run(SCENARIOS[name])
    if "drops" in name:  # the paths that leave an exchange are in the digest
        assert sum(r.n_dropped for r in world.server.records) > 0
        assert sum(r.n_deadline_miss for r in world.server.records) > 0
    assert digest(world) == BEFORE[name]
