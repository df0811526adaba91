"""FedCS, Extended FedCS and FedCS(3): T_inc (eqs. (1)-(2) of 002), Algorithm 1, deadlines."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.scenario import scenario_from_data
from netfl.selection.check import check_strategy
from netfl.selection.fedcs import FedCS
from netfl.selection.fedcs_deadline import FedCSDeadline
from netfl.selection.fedcs_extended import FedCSExtended
from netfl.selection.observations import MissingFeatureError
from netfl.selection.tinc import greedy_schedule, observed_increments, t_inc
from tests.protocol_helpers import group, run, scenario
from tests.selection_helpers import ctx, feedback, info, ready, selection_error

# Three clients (t^UD, t^UL): A = (2, 3), B = (5, 1), C = (1, 4). By eq. (1) from the empty
# schedule: T_inc(A) = 3 + 2 + 3 = 8, T_inc(B) = 1 + 5 + 1 = 7, T_inc(C) = 4 + 1 + 4 = 9,
# so B first (t = 7, T^d = 1); then t - T^d = 6: T_inc(A) = 2 + 0 + 3 = 5 and
# T_inc(C) = 3 + 0 + 4 = 7, so A (t = 12, T^d = 3); then T_inc(C) = 1 + 0 + 4 = 5 (t = 17).
# The same as the timeline: distribution ends at max t^UL = 4, updates end at 9 (B), 6 (A),
# 5 (C), uploads in order B [9, 10], A [10, 13], C [13, 17].
UPDATE = np.array([2.0, 5.0, 1.0])
UPLOAD = np.array([3.0, 1.0, 4.0])


def test_t_inc_from_the_empty_schedule():
    assert t_inc(UPDATE, UPLOAD, 0.0, 0.0).tolist() == [8.0, 7.0, 9.0]
    assert t_inc(UPDATE[[0, 2]], UPLOAD[[0, 2]], 7.0, 1.0).tolist() == [5.0, 7.0]


def test_algorithm_1_on_three_clients():
    schedule = greedy_schedule(UPDATE, UPLOAD, budget=3)
    assert schedule.order.tolist() == [1, 0, 2]
    assert schedule.increments_s.tolist() == [7.0, 5.0, 5.0]
    assert schedule.round_time_s == 17.0
    assert greedy_schedule(UPDATE, UPLOAD, budget=2).order.tolist() == [1, 0]


def test_deadline_form_stops_before_the_deadline():
    assert greedy_schedule(UPDATE, UPLOAD, 3, deadline_s=12.5).order.tolist() == [1, 0]
    assert greedy_schedule(UPDATE, UPLOAD, 3, deadline_s=17.0).order.tolist() == [1, 0, 2]
    assert greedy_schedule(UPDATE, UPLOAD, 3, deadline_s=6.0).order.tolist() == []


def _timeline_end(update: list[float], upload: list[float]) -> float:
    """Round end by direct simulation: distribution, parallel updates, sequential uploads."""
    distribution = max(upload, default=0.0)
    end = distribution
    for ud, ul in zip(update, upload, strict=True):
        end = max(end, distribution + ud) + ul
    return end


times = st.lists(
    st.tuples(st.floats(0, 100, allow_nan=False), st.floats(0, 100, allow_nan=False)),
    min_size=1,
    max_size=8,
)


@given(times)
@settings(max_examples=200, deadline=None)
def test_summed_increments_equal_the_simulated_round(pairs):
    update = [p[0] for p in pairs]
    upload = [p[1] for p in pairs]
    total = observed_increments(np.array(update), np.array(upload)).sum()
    assert total == pytest.approx(_timeline_end(update, upload), rel=1e-9, abs=1e-9)


@given(times, st.floats(0.5, 300), st.integers(1, 8))
@settings(max_examples=200, deadline=None)
def test_deadline_schedule_fits_and_is_maximal(pairs, deadline, budget):
    update = np.array([p[0] for p in pairs])
    upload = np.array([p[1] for p in pairs])
    schedule = greedy_schedule(update, upload, budget, deadline_s=deadline)
    order = schedule.order.tolist()
    assert len(order) <= budget
    assert _timeline_end(update[order].tolist(), upload[order].tolist()) <= deadline + 1e-9
    rest = sorted(set(range(len(pairs))) - set(order))
    if len(order) < budget and rest:
        # No remaining client can be appended without missing the deadline.
        for k in rest:
            trial = [*order, k]
            end = _timeline_end(update[trial].tolist(), upload[trial].tolist())
            assert end > deadline - 1e-9


def test_fedcs_selects_in_schedule_order_by_id():
    strategy = ready(FedCS(), info(20, budget=2))
    chosen = strategy.select(ctx([4, 9, 13], 2, update=UPDATE, upload=UPLOAD))
    assert chosen == [9, 4]
    assert strategy.scores() == {"t_inc": {9: 7.0, 4: 5.0}}


def test_fedcs_deadline_form_reads_the_round_deadline():
    strategy = ready(FedCS(form="deadline"), info(20, budget=3))
    chosen = strategy.select(ctx([4, 9, 13], 3, update=UPDATE, upload=UPLOAD, deadline_s=12.5))
    assert chosen == [9, 4]
    # The parameter overrides the scenario's deadline.
    strategy = ready(FedCS(form="deadline", deadline_s=20.0), info(20, budget=3))
    assert strategy.select(ctx([4, 9, 13], 3, update=UPDATE, upload=UPLOAD, deadline_s=1.0)) == [
        9,
        4,
        13,
    ]


def test_first_timers_report_zero_and_go_first():
    strategy = ready(FedCS(), info(10, budget=2))
    chosen = strategy.select(ctx([1, 2, 3], 2, update=[0.0, 4.0, 0.0], upload=[0.0, 1.0, 0.0]))
    assert sorted(chosen) == [1, 3]


def test_deadline_variants_pass_the_conformance_check():
    check_strategy(lambda: FedCS(form="deadline", deadline_s=25.0))
    check_strategy(lambda: FedCSExtended(form="deadline", deadline_s=25.0))
    check_strategy(lambda: FedCSDeadline(deadline_s=20.0))


def test_extended_averages_the_last_five_observations():
    strategy = ready(FedCSExtended(), info(4, budget=1))
    for r, value in enumerate([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]):
        strategy.observe(feedback([0], round_=r, update=[value], upload=[10 * value]))
    # A round where client 0 did not report leaves its average alone.
    strategy.observe(feedback([0], round_=7, completed=[False]))
    update, upload = strategy.estimates(ctx([0, 1], 1, update=[7.0, 0.5], upload=[70.0, 0.25]))
    assert update.tolist() == [5.0, 0.5]  # mean of 3..7; client 1 never observed: reported
    assert upload.tolist() == [50.0, 0.25]


def test_extended_window_parameter():
    strategy = ready(FedCSExtended(window=2), info(2, budget=1))
    for r, value in enumerate([1.0, 2.0, 9.0]):
        strategy.observe(feedback([1], round_=r, update=[value], upload=[value]))
    update, _ = strategy.estimates(ctx([1], 1, update=[9.0], upload=[9.0]))
    assert update.tolist() == [5.5]


def test_fedcs_deadline_takes_the_fastest_within_the_deadline():
    strategy = ready(FedCSDeadline(deadline_s=3.0), info(10, budget=3))
    expected = [2.5, 3.5, 1.0, 2.9, 0.5]
    chosen = strategy.select(
        ctx([0, 2, 4, 6, 8], 3, features={"expected_exchange_time_s": expected})
    )
    assert chosen == [8, 4, 0]  # 0.5, 1.0, 2.5 (2.9 also fits but the budget is 3)
    strategy = ready(FedCSDeadline(deadline_s=3.0), info(10, budget=8))
    chosen = strategy.select(
        ctx([0, 2, 4, 6, 8], 8, features={"expected_exchange_time_s": expected})
    )
    assert chosen == [8, 4, 0, 6]


def test_fedcs_deadline_without_the_oracle_feature_says_what_is_missing():
    strategy = ready(FedCSDeadline(deadline_s=3.0), info(10, budget=3))
    with pytest.raises(MissingFeatureError, match="expected_exchange_time_s"):
        strategy.select(ctx([0, 1], 3, features={"mu": [1.0, 1.0]}))


@pytest.mark.parametrize(
    ("selection", "key"),
    [
        ({"name": "fedcs", "params": {"form": "deadline"}}, "selection.params.form"),
        ({"name": "fedcs_extended", "params": {"form": "deadline"}}, "selection.params.form"),
        ({"name": "fedcs_deadline"}, "selection.params.deadline_s"),
    ],
)
def test_deadline_forms_need_a_deadline(tiny, selection, key):
    error = selection_error(tiny, selection["name"], selection.get("params"))
    assert error.problems[0].key == key
    assert "needs a round deadline" in str(error)
    tiny["fl"]["deadline_s"] = 30.0
    scenario_from_data(tiny)


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"form": "sometimes"}, "selection.params.form"),
        ({"deadline_s": -1}, "selection.params.deadline_s"),
        ({"window": 0}, "selection.params.window"),
        ({"windows": 3}, "selection.params.windows"),
    ],
)
def test_bad_fedcs_params_name_the_key(tiny, params, key):
    assert selection_error(tiny, "fedcs_extended", params).problems[0].key == key


# -- issue 13: a straggler that missed the deadline must not keep reporting 0 s ----------
def _stall_scenario(strategy: str) -> dict:
    """Six fast clients (100 samples/s) and one very slow one (0.5 samples/s), 50 samples
    each, a fixed radio (5 Mbit/s up, 20 down), a 1 Mbit model, FedCS with a 30 s deadline:
    the slow client needs 100 s for its update, so it can never complete."""
    return scenario(
        [
            group("fast", 6, compute_sps=100.0, n_samples=50),
            group("slow", 1, compute_sps=0.5, n_samples=50),
        ],
        radio={"model": "fixed", "rate_ul_bps": 5.0e6, "rate_dl_bps": 20.0e6},
        fl={
            "protocol": "fedcs",
            "rounds": 12,
            "clients_per_round": 3,
            "deadline_s": 30.0,
            "model_size_bits": 1.0e6,
        },
        selection={"name": strategy},
    )


@pytest.mark.parametrize("strategy", ["fedcs", "fedcs_extended"])
def test_a_deadline_straggler_does_not_stall_fedcs(strategy):
    world = run(_stall_scenario(strategy))
    completed = [len(r.completed) for r in world.server.records]
    # Before the fix every round from the third on completed 0 updates: the slow client
    # and the two fast ones it displaced kept reporting 0 s and were picked first.
    assert np.mean(completed[3:12]) >= 2.5, completed
    slow = 6
    assert world.server.reported.update_s[slow] >= 25.0  # ~30 s deadline minus the download
    assert world.server.reported.misses[slow] >= 1
