"""Round timing of the FedCS and FedAvg protocols against hand-computed values and formulas."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.errors import ScenarioWarning
from tests.protocol_helpers import (
    events,
    fedcs_round_time,
    group,
    run,
    scenario,
    times_by_client,
)

MODEL_BITS = 4.0e6


def linked(name: str, ul_bps: float, dl_bps: float, n_samples: int, sps: float) -> dict:
    """One client whose rates are exact: log2(1 + 1) = 1, so the upload rate is B."""
    link = {"snr": 1.0, "bandwidth_hz": ul_bps, "rate_dl_bps": dl_bps}
    return group(name, 1, n_samples=n_samples, compute_sps=sps, link=link)


# Hand-computed example (M = 4 Mbit):
#   client  dl rate  ul rate  D    gamma  t_UL  t_UD
#   0       8 Mb/s   2 Mb/s   100  50     2 s   2 s
#   1       4 Mb/s   1 Mb/s   300  100    4 s   3 s
#   2       2 Mb/s   4 Mb/s   50   10     1 s   5 s
# Multicast at the slowest rate: T_d = 4 Mbit / 2 Mb/s = 2 s.
THREE = [
    linked("c0", 2e6, 8e6, 100, 50.0),
    linked("c1", 1e6, 4e6, 300, 100.0),
    linked("c2", 4e6, 2e6, 50, 10.0),
]


def fedcs(order: list[int], **fl) -> dict:
    return scenario(
        THREE,
        fl={
            "protocol": "fedcs",
            "rounds": 1,
            "clients_per_round": 3,
            "model_size_bits": MODEL_BITS,
            **fl,
        },
        selection={"name": "tests.protocol_helpers:Recorder", "params": {"order": order}},
    )


T_UD = {0: 2.0, 1: 3.0, 2: 5.0}
T_UL = {0: 2.0, 1: 4.0, 2: 1.0}


@pytest.mark.parametrize(
    ("order", "uploads", "round_s"),
    [
        # Theta_1 = 0 + 2 + max(0, 2 - 0) = 4; Theta_2 = 4 + 4 + max(0, 3 - 4) = 8;
        # Theta_3 = 8 + 1 + max(0, 5 - 8) = 9; round = T_d + Theta_3 = 11.
        ([0, 1, 2], {0: (4.0, 6.0), 1: (6.0, 10.0), 2: (10.0, 11.0)}, 11.0),
        # Theta = 6, 10, 12 -> round 14.
        ([2, 1, 0], {2: (7.0, 8.0), 1: (8.0, 12.0), 0: (12.0, 14.0)}, 14.0),
    ],
)
def test_fedcs_round_time_matches_the_hand_computed_example(order, uploads, round_s):
    assert fedcs_round_time(2.0, [T_UD[c] for c in order], [T_UL[c] for c in order]) == round_s
    world = run(fedcs(order))
    start = times_by_client(world, "upload_start", 0)
    end = times_by_client(world, "upload_end", 0)
    assert start == pytest.approx({c: t for c, (t, _) in uploads.items()})
    assert end == pytest.approx({c: t for c, (_, t) in uploads.items()})
    record = world.server.records[0]
    assert record.t_end_s - record.t_start_s == pytest.approx(round_s)
    assert record.completed == order


def test_fedcs_step_costs_add_to_the_round():
    """Request, selection and aggregation times precede / follow the formula's span."""
    world = run(fedcs([0, 1, 2], request_time_s=0.5, selection_time_s=0.25, aggregation_time_s=1))
    record = world.server.records[0]
    assert record.t_end_s - record.t_start_s == pytest.approx(0.5 + 0.25 + 11.0 + 1.0)
    assert events(world, "download_start", 0)["t_s"].tolist() == pytest.approx([0.75] * 3)


def test_fedavg_uploads_in_parallel_at_each_clients_own_rate():
    data = fedcs([0, 1, 2], protocol="fedavg")  # unicast by default
    world = run(data)
    # Each client: own download + update + upload: 0.5+2+2, 1+3+4, 2+5+1.
    end = times_by_client(world, "upload_end", 0)
    assert end == pytest.approx({0: 4.5, 1: 8.0, 2: 8.0})
    assert world.server.records[0].t_end_s == pytest.approx(8.0)


def test_deadline_discards_late_uploads_and_logs_them():
    world = run(fedcs([0, 1, 2], deadline_s=10.0))
    record = world.server.records[0]
    assert record.t_end_s == pytest.approx(10.0)
    assert record.completed == [0, 1]
    miss = events(world, "deadline_miss", 0)
    assert miss["client"].tolist() == [2]
    assert miss["t_s"].tolist() == pytest.approx([10.0])
    assert 2 not in times_by_client(world, "upload_end", 0)
    feedback = world.strategy.feedback[0]
    assert feedback.status.tolist() == ["completed", "completed", "deadline_miss"]
    assert feedback.deadline_met.tolist() == [True, True, False]


def test_time_budget_cuts_the_running_round():
    world = run(fedcs([0, 1, 2], rounds=None, time_budget_s=7.0))
    assert len(world.server.records) == 1
    assert world.server.records[0].t_end_s == pytest.approx(7.0)
    assert world.server.records[0].completed == [0]


def test_over_selection_keeps_the_first_m_arrivals():
    fast = [*THREE[:2], linked("c2", 4e6, 2e6, 20, 10.0)]  # c2: 2 + 2 + 1 = 5 s
    data = scenario(
        fast,
        fl={
            "protocol": "fedavg",
            "rounds": 1,
            "clients_per_round": 2,
            "over_selection": 0.5,
            "model_size_bits": MODEL_BITS,
        },
    )
    world = run(data)
    record = world.server.records[0]
    assert record.selected == [0, 1, 2]  # ceil(2 x 1.5) = 3
    assert record.completed == [0, 2]  # arrivals at 4.5 and 5 s
    assert record.t_end_s == pytest.approx(5.0)
    cancel = events(world, "cancel", 0)
    assert cancel["client"].tolist() == [1]
    assert world.strategy.contexts[0].target == 2


def test_a_deadline_shorter_than_any_round_warns():
    with pytest.warns(ScenarioWarning, match="fl.deadline_s: 1 s is shorter"):
        run(fedcs([0, 1, 2], deadline_s=1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScenarioWarning)
        run(fedcs([0, 1, 2], deadline_s=5.0))  # client 0 alone can make it (4.5 s)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0.2e6, 5e6),  # ul rate
            st.floats(0.5e6, 20e6),  # dl rate
            st.integers(10, 500),  # samples
            st.floats(5.0, 200.0),  # samples/s
        ),
        min_size=1,
        max_size=6,
    )
)
def test_fedcs_round_time_equals_the_formula(clients):
    groups = [linked(f"c{i}", *spec) for i, spec in enumerate(clients)]
    data = scenario(
        groups,
        fl={
            "protocol": "fedcs",
            "rounds": 1,
            "clients_per_round": len(clients),
            "model_size_bits": MODEL_BITS,
        },
    )
    world = run(data)
    download = MODEL_BITS / min(dl for _, dl, _, _ in clients)
    update = [n / sps for _, _, n, sps in clients]
    upload = [MODEL_BITS / ul for ul, _, _, _ in clients]
    record = world.server.records[0]
    expected = fedcs_round_time(download, update, upload)
    assert record.t_end_s - record.t_start_s == pytest.approx(expected, rel=1e-9)


def test_the_cli_prints_the_deadline_warning_on_one_line(write_scenario, tmp_path, capsys):
    from netfl.cli import main

    path = write_scenario(fedcs([0, 1, 2], deadline_s=1.0))
    assert main(["simulate", str(path), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "warning: fl.deadline_s: 1 s is shorter than the fastest possible round" in err
