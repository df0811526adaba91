"""Learning signals passed to strategies, and the oracle's expected exchange time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from netfl.fl.signals import LearningSignals
from tests.protocol_helpers import events, group, rbcs_f_table_1, run, scenario


@dataclass
class _Result:
    clients: np.ndarray
    n_samples: np.ndarray
    loss_mean: np.ndarray
    loss_std: np.ndarray
    update_vectors: np.ndarray | None = None


class _Learner:
    """The learner interface of the learning issue: ``want`` and ``client_losses``."""

    n_samples = np.array([10, 30, 60, 100])

    def __init__(self) -> None:
        self.calls: list[tuple[list[int], frozenset[str]]] = []

    def local_update(self, round, clients, want=frozenset()):
        self.calls.append((clients.tolist(), want))
        vectors = np.stack([np.full(3, float(c)) for c in clients]) if want else None
        return _Result(clients, self.n_samples[clients], clients * 1.0, clients * 0.1, vectors)

    def client_losses(self, clients):
        return clients + 0.5


def test_feedback_signals_align_with_the_selection():
    learner = _Learner()
    signals = LearningSignals(learner, frozenset({"update_vector", "local_loss"}))
    arrived = np.array([3, 1])
    result = signals.local_update(0, arrived, signals.wants)
    assert learner.calls == [([3, 1], frozenset({"update_vector"}))]
    out = signals.feedback(result, [1, 2, 3])  # client 2 did not arrive
    assert out["local_loss_std"].tolist()[::2] == pytest.approx([0.1, 0.3])
    assert np.isnan(out["local_loss_std"][1])
    assert out["update_vector"][0].tolist() == [1.0] * 3
    assert np.isnan(out["update_vector"][1]).all()
    # FedAvg's change of the global model: the size-weighted mean of the updates.
    assert out["global_update"].tolist() == pytest.approx([(100 * 3 + 30 * 1) / 130] * 3)


def test_update_vectors_are_asked_only_when_required():
    learner = _Learner()
    signals = LearningSignals(learner, frozenset({"local_loss"}))
    result = signals.local_update(0, np.array([0, 2]), signals.wants)
    assert learner.calls == [([0, 2], frozenset())]
    assert set(signals.feedback(result, [0, 2])) == {"local_loss_std"}


def test_polled_answers_come_from_the_matching_learner_call():
    learner = _Learner()
    signals = LearningSignals(learner, frozenset())
    assert signals.polled(0, np.array([2, 0]), "poll_loss")["loss"].tolist() == [2.5, 0.5]
    answers = signals.polled(0, np.array([1, 3]), "update_vector")
    assert answers["update_vector"].tolist() == [[1.0] * 3, [3.0] * 3]
    assert np.isnan(answers["update_scale"]).all()  # this learner gives no scale


def test_oracle_exchange_time_is_c_theta_for_rbcs_f_table_1():
    """With fl.oracle_exchange_time, each candidate's expected exchange time is reported:
    for Table 1 it is c^T theta* = tau_b / mu + s tau_s + M / (B eta), which the realised
    time equals without noise."""
    data = rbcs_f_table_1()
    for g in data["devices"]["groups"]:
        g["exchange_noise"] = 0.0
    data["fl"].update(rounds=30, oracle_exchange_time=True)
    data["selection"] = {"name": "tests.protocol_helpers:RandomRecorder"}
    world = run(data)
    eta = np.log2(1 + np.array([1000.0, 100.0, 10.0, 1.0]))
    for ctx, feedback in zip(world.strategy.contexts, world.strategy.feedback, strict=True):
        f = ctx.features
        c = ctx.candidates
        theta_c = (
            (c // 10 + 1) / f["mu"] + f["cold_start"] + 20e6 / (f["bandwidth_hz"] * eta[c // 10])
        )
        assert f["expected_exchange_time_s"] == pytest.approx(theta_c)
        chosen = feedback.features["expected_exchange_time_s"]
        assert feedback.exchange_time_s == pytest.approx(chosen)


def test_oracle_expected_update_matches_the_mean_under_background_load():
    load = {"arrival_rate_hz": 0.1, "job_work_s": {"dist": "exponential", "mean": 4.0}}
    data = scenario(
        [group("busy", 10, background=load, cold_start_s=1.0)],
        fl={"rounds": 300, "clients_per_round": 4, "oracle_exchange_time": True},
        selection={"name": "tests.protocol_helpers:RandomRecorder"},
    )
    world = run(data)
    expected = np.concatenate(
        [fb.features["expected_exchange_time_s"] for fb in world.strategy.feedback]
    )
    actual = np.concatenate([fb.exchange_time_s for fb in world.strategy.feedback])
    # download 0.25 s + (cold start) + 2 s / (1 - 0.4) + upload 1 s
    assert set(np.round(expected, 6)) <= {
        round(0.25 + 2 / 0.6 + 1, 6),
        round(1.25 + 2 / 0.6 + 1, 6),
    }
    assert actual.mean() == pytest.approx(expected.mean(), rel=0.05)
    assert len(events(world, "cold_start_end")) > 0


def test_the_learners_own_global_update_is_preferred():
    class WithGlobal(_Learner):
        def global_update(self):
            return np.array([7.0, 7.0, 7.0])

    signals = LearningSignals(WithGlobal(), frozenset({"update_vector"}))
    result = signals.local_update(0, np.array([1]), signals.wants)
    assert signals.feedback(result, [1])["global_update"].tolist() == [7.0] * 3


def test_evaluations_follow_a_schedule_object_and_log_client_losses():
    from netfl.scenario import scenario_from_data
    from netfl.world import build_world

    @dataclass
    class _Evaluation:
        accuracy: float
        loss: float
        client_loss: np.ndarray

    class EveryOther:
        def due(self, round, now_s):
            return round % 2 == 1

    world = build_world(scenario_from_data(scenario([group("a", 3)], fl={"rounds": 4})))
    world.server.eval_schedule = EveryOther()
    world.learner.evaluate = lambda: _Evaluation(0.5, 1.0, np.array([0.1, 0.2, 0.3]))
    world.env.run(until=world.env.process(world.server.run()))
    assert [r.round for r in world.server.records if r.accuracy == 0.5] == [1, 3]
    rows = events(world, "client_loss")
    assert rows["round"].tolist() == [1, 1, 1, 3, 3, 3]
    assert rows["loss"].tolist() == pytest.approx([0.1, 0.2, 0.3] * 2)
