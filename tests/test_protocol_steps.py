"""Protocol steps: resource request, polls, cold start, feedback, phases, energy."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from netfl.rng import Streams
from netfl.selection.base import SelectionContext
from tests.phases import client_phases
from tests.protocol_helpers import (
    Recorder,
    events,
    group,
    rbcs_f_table_1,
    run,
    scenario,
    timeline,
)


def test_request_clients_are_a_fresh_uniform_sample_from_the_request_stream():
    data = scenario(
        [group("a", 50)],
        fl={"rounds": 400, "request_fraction": 0.2, "model_size_bits": 1.0e3},
    )
    world = run(data)
    asked = events(world, "request")
    stream = Streams(data["seed"]).get("fl.request")
    per_round = [sorted(asked[asked["round"] == r]["client"]) for r in range(400)]
    for clients in per_round:
        assert clients == sorted(stream.choice(50, size=10, replace=False).tolist())
    assert sum(a == b for a, b in itertools.pairwise(per_round)) == 0
    counts = np.bincount(asked["client"], minlength=50)
    assert stats.chisquare(counts).pvalue > 1e-3  # uniform over the population


def test_first_time_clients_report_zero_times_then_their_last_observation():
    world = run(scenario([group("a", 4)], fl={"rounds": 3, "clients_per_round": 2}))
    first, second = world.strategy.contexts[:2]
    assert first.update_time_s.tolist() == [0, 0, 0, 0]
    assert first.upload_time_s.tolist() == [0, 0, 0, 0]
    feedback = world.strategy.feedback[0]
    # Clients 0 and 1 took part: 2 s update, 1 s upload; 2 and 3 still report 0.
    assert second.update_time_s.tolist() == pytest.approx([2.0, 2.0, 0.0, 0.0])
    assert second.upload_time_s.tolist() == pytest.approx([1.0, 1.0, 0.0, 0.0])
    assert feedback.update_time_s.tolist() == pytest.approx([2.0, 2.0])
    # Exchange time: from the distribution's start to the upload's end (0.25 + 2 + 1).
    assert feedback.exchange_time_s.tolist() == pytest.approx([3.25, 3.25])


class Alternating(Recorder):
    """Selects clients 0 and 1 in even rounds, 1 and 2 in odd rounds."""

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        self.contexts.append(ctx)
        return [0, 1] if ctx.round % 2 == 0 else [1, 2]


def test_cold_start_is_paid_by_devices_not_selected_in_the_previous_round():
    data = scenario(
        [group("a", 3, cold_start_s=3.0)],
        fl={"rounds": 4},
        selection={"name": "tests.test_protocol_steps:Alternating"},
    )
    world = run(data)
    cold = events(world, "cold_start_end")
    paid = {r: sorted(cold[cold["round"] == r]["client"]) for r in range(4)}
    assert paid == {0: [0, 1], 1: [2], 2: [0], 3: [2]}
    assert cold["duration_s"].tolist() == pytest.approx([3.0] * 5)
    flags = [ctx.features["cold_start"].tolist() for ctx in world.strategy.contexts]
    assert flags == [[1, 1, 1], [0, 0, 1], [1, 0, 0], [0, 0, 1]]
    assert world.strategy.feedback[1].cold_start_s.tolist() == [0.0, 3.0]


def test_mab_cs_fluctuation_draws_the_capability_each_round():
    data = scenario(
        [group("a", 10, compute_sps=64.0, compute_fluctuation_eta=1.5)],
        fl={"rounds": 200, "clients_per_round": 10, "model_size_bits": 1.0e3},
    )
    compute = events(run(data), "compute_end")
    capability = 100 / compute["duration_s"].to_numpy()
    sigma = 64.0**0.75  # sigma^2 = mean^eta (002 eq. (8) setting)
    assert capability.min() >= 64.0 - sigma - 1e-9
    assert capability.max() <= 64.0 + sigma + 1e-9
    assert capability.std() > 0.3 * sigma
    # Truncated to [mean - sigma, mean + sigma]: the std is sigma x that of a standard
    # normal truncated to [-1, 1], sqrt(1 - 2 phi(1) / (Phi(1) - Phi(-1))) = 0.5396.
    assert capability.std() == pytest.approx(sigma * stats.truncnorm(-1, 1).std(), rel=0.05)
    # The truncation is symmetric: the mean capability is the configured mean.
    assert capability.mean() == pytest.approx(64.0, rel=0.02)


def test_poll_costs_time_and_bits_before_selection():
    data = scenario(
        [group("a", 4)],
        fl={"rounds": 1, "clients_per_round": 2, "loss_eval_epochs": 0.5},
        selection={"name": "tests.protocol_helpers:Poller", "params": {"d": 2}},
    )
    world = run(data)
    table = timeline(world)
    poll = table[table["kind"].str.startswith("poll_")]
    assert sorted(set(poll["client"])) == [0, 1]
    down = poll[poll["kind"] == "poll_download_end"]
    assert down["duration_s"].tolist() == pytest.approx([0.25, 0.25])  # 1 Mbit at 4 Mb/s
    assert down["bits"].tolist() == [1.0e6, 1.0e6]
    comp = poll[poll["kind"] == "poll_compute_end"]
    assert comp["duration_s"].tolist() == pytest.approx([1.0, 1.0])  # 0.5 x 100 / 50
    up = poll[poll["kind"] == "poll_upload_end"]
    assert up["bits"].tolist() == [32.0, 32.0]  # one number
    done = 0.25 + 1.0 + 32 / 1e6
    assert up["t_s"].tolist() == pytest.approx([done, done])
    select = table[table["kind"] == "select"]
    assert select["t_s"].tolist() == pytest.approx([done, done])
    ctx = world.strategy.contexts[0]
    assert ctx.now_s == pytest.approx(done)
    assert ctx.features["polled"].tolist() == [1, 1, 0, 0]
    assert np.isnan(ctx.features["loss"]).all()  # learning none: no loss to report
    # The polled clients were warmed up by the poll: the update starts right away.
    phases = client_phases(table)
    update = phases[phases["exchange"] == "update"]
    assert update["start_s"].tolist() == pytest.approx([done, done])


def test_an_update_vector_poll_costs_a_local_update_and_a_model_upload():
    data = scenario(
        [group("a", 4)],
        fl={"rounds": 1, "clients_per_round": 2},
        selection={"name": "tests.protocol_helpers:UpdatePoller", "params": {"d": 3}},
    )
    world = run(data)
    table = timeline(world)
    comp = table[table["kind"] == "poll_compute_end"]
    assert comp["duration_s"].tolist() == pytest.approx([2.0] * 3)  # the local update
    up = table[table["kind"] == "poll_upload_end"]
    assert up["bits"].tolist() == [1.0e6] * 3
    assert up["t_s"].tolist() == pytest.approx([3.25] * 3)  # 0.25 + 2 + 1
    vectors = world.strategy.contexts[0].features["update_vector"]
    assert vectors.shape[0] == 4 and np.isnan(vectors).all()  # no model: NaN


def test_poll_answers_come_from_the_learner():
    data = scenario(
        [group("a", 4)],
        fl={"rounds": 1, "clients_per_round": 2},
        selection={"name": "tests.protocol_helpers:Poller", "params": {"d": 3}},
    )
    from netfl.scenario import scenario_from_data
    from netfl.world import build_world

    world = build_world(scenario_from_data(data))
    asked = []

    def client_losses(clients):
        asked.append(clients.tolist())
        return clients * 0.5

    world.learner.client_losses = client_losses  # type: ignore[attr-defined]
    world.env.run(until=world.env.process(world.server.run()))
    assert asked == [[0, 1, 2]]
    assert world.strategy.contexts[0].features["loss"].tolist()[:3] == [0.0, 0.5, 1.0]
    assert np.isnan(world.strategy.contexts[0].features["loss"][3])


class Shuffled(Recorder):
    """A random subset in random order, so devices turn cold and uploads wait."""

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        self.contexts.append(ctx)
        return self.rng.permutation(ctx.candidates)[: ctx.budget].tolist()


def test_phases_reconstructed_from_the_timeline_equal_what_the_server_saw():
    fifo = {
        "arrival_rate_hz": 0.2,
        "job_work_s": {"dist": "exponential", "mean": 2.0},
        "discipline": "fifo",
    }
    data = scenario(
        [group("a", 6, background=fifo, cold_start_s={"dist": "uniform", "low": 0, "high": 2})],
        fl={"protocol": "fedcs", "rounds": 30, "clients_per_round": 3},
        selection={"name": "tests.test_protocol_steps:Shuffled"},
    )
    world = run(data)
    phases = client_phases(timeline(world)).set_index(["round", "client"])
    checked = {"queue_wait_s": 0, "upload_wait_s": 0, "cold_start_s": 0}
    for feedback in world.strategy.feedback:
        for i, client in enumerate(feedback.selected.tolist()):
            row = phases.loc[(feedback.round, client)]
            assert row["status"] == feedback.status[i]
            assert row["download_s"] == pytest.approx(feedback.download_time_s[i])
            for name, column in (
                ("cold_start_s", feedback.cold_start_s),
                ("queue_wait_s", feedback.queue_wait_s),
                ("compute_s", feedback.compute_time_s),
                ("upload_wait_s", feedback.upload_wait_s),
                ("upload_s", feedback.upload_time_s),
            ):
                assert row[name] == pytest.approx(column[i], abs=1e-9)
                checked[name] = checked.get(name, 0) + (column[i] > 0)
            update = row["cold_start_s"] + row["queue_wait_s"] + row["compute_s"]
            assert update == pytest.approx(feedback.update_time_s[i])
    assert all(count > 5 for count in checked.values()), checked  # every phase occurred


def _rbcs_f_context(world, feedback):
    """tau* = c^T theta* with c = [1/mu, s, M/B], theta* = [tau_b, tau_s, 1/eta]."""
    ctx = feedback.features
    clients = feedback.selected
    tau_b = np.array([1.0, 2.0, 3.0, 4.0])[clients // 10]
    eta = np.log2(1 + np.array([1000.0, 100.0, 10.0, 1.0]))[clients // 10]
    c = np.stack([1 / ctx["mu"], ctx["cold_start"], 20e6 / ctx["bandwidth_hz"]], axis=1)
    theta = np.stack([tau_b, np.ones(len(clients)), 1 / eta], axis=1)
    return np.sum(c * theta, axis=1)


@pytest.mark.parametrize("noise", [0.0, 1.0])
def test_rbcs_f_table_1_exchange_time_is_eq_14(noise):
    data = rbcs_f_table_1()
    for g in data["devices"]["groups"]:
        g["exchange_noise"] = noise
    data["fl"]["rounds"] = 150
    data["selection"] = {"name": "tests.protocol_helpers:RandomRecorder"}
    world = run(data)
    ratios = []
    for feedback in world.strategy.feedback:
        expected = _rbcs_f_context(world, feedback)
        ratios.append(feedback.exchange_time_s / expected)
    ratio = np.concatenate(ratios)
    if noise == 0:
        assert ratio == pytest.approx(1.0, rel=1e-9)
    else:  # tau = c^T theta + eps, eps ~ U(-c^T theta, c^T theta): tau / c^T theta ~ U(0, 2)
        assert stats.kstest(ratio, stats.uniform(0, 2).cdf).pvalue > 1e-3
    asked = events(world, "request")
    answered = events(world, "response")
    assert len(answered) / len(asked) == pytest.approx(0.8, abs=0.02)


def test_energy_is_power_times_airtime_and_busy_time():
    data = scenario(
        [group("a", 4, energy={"tx_power_w": 0.2, "compute_power_w": 1.5}), group("b", 2)],
        fl={"rounds": 5, "clients_per_round": 3},
        selection={"name": "random"},
    )
    world = run(data)
    table = timeline(world)
    metered = table["client"].between(0, 3)
    upload = table[metered & (table["kind"] == "upload_end")]["duration_s"].sum()
    compute = table[metered & (table["kind"] == "compute_end")]["duration_s"].sum()
    totals = world.server.client_totals()
    assert np.nansum(totals["energy_tx_j"]) == pytest.approx(0.2 * upload)
    assert np.nansum(totals["energy_compute_j"]) == pytest.approx(1.5 * compute)
    assert np.isnan(totals["energy_tx_j"][4:]).all()
    per_round = sum(r.energy_tx_j + r.energy_compute_j for r in world.server.records)
    assert per_round == pytest.approx(0.2 * upload + 1.5 * compute)


def test_feedback_carries_the_selected_clients_features():
    world = run(
        scenario(
            [group("a", 5, available_cpu_ratio={"dist": "uniform", "low": 0.5, "high": 2})],
            fl={"rounds": 3},
        )
    )
    for ctx, feedback in zip(world.strategy.contexts, world.strategy.feedback, strict=True):
        rows = [ctx.candidates.tolist().index(c) for c in feedback.selected]
        assert feedback.features["mu"].tolist() == ctx.features["mu"][rows].tolist()
        # Update time = work / (capability x mu): 100 / (50 mu).
        assert feedback.update_time_s == pytest.approx(2.0 / feedback.features["mu"])


def test_runs_with_every_device_feature_are_deterministic():
    data = scenario(
        [
            group(
                "a",
                12,
                availability={"kind": "markov", "mean_on_s": 30, "mean_off_s": 10},
                background={"arrival_rate_hz": 0.1, "job_work_s": 2.0},
                compute_fluctuation_eta=1.0,
                cold_start_s=0.5,
                exchange_noise=0.3,
            )
        ],
        fl={"protocol": "fedcs", "rounds": 20, "clients_per_round": 3, "deadline_s": 12.0},
    )
    first = timeline(run(data))
    second = timeline(run(data))
    pd.testing.assert_frame_equal(first, second)


def test_resource_reports_cost_uplink_time_and_bits():
    data = scenario(
        [group("a", 4, energy={"tx_power_w": 0.5, "compute_power_w": 0.0})],
        fl={"rounds": 1, "request_time_s": 0.5, "request_response_bits": 1.0e5},
    )
    world = run(data)
    responses = events(world, "response")
    assert responses["t_s"].tolist() == pytest.approx([0.6] * 4)  # 0.5 + 1e5 / 1e6
    assert responses["bits"].tolist() == [1.0e5] * 4
    assert events(world, "download_start")["t_s"].tolist() == pytest.approx([0.6, 0.6])
    tx = world.server.client_totals()["energy_tx_j"]
    # Each client reported (0.1 s on air); the two selected also uploaded the model (1 s).
    assert tx.tolist() == pytest.approx([0.55, 0.55, 0.05, 0.05])


def test_resource_reports_cut_at_the_time_budget_still_cost_their_airtime():
    """Reports of 1e5 bits take 0.1 s at 1 Mb/s; T_final = 0.04 s cuts them: 0.5 W x 0.04 s."""
    data = scenario(
        [group("a", 4, energy={"tx_power_w": 0.5, "compute_power_w": 0.0})],
        fl={"rounds": None, "time_budget_s": 0.04, "request_response_bits": 1.0e5},
    )
    world = run(data)
    assert events(world, "response").empty
    assert world.strategy.contexts[0].candidates.tolist() == []
    tx = world.server.client_totals()["energy_tx_j"]
    assert tx.tolist() == pytest.approx([0.5 * 0.04] * 4)
    assert world.server.records[0].energy_tx_j == pytest.approx(4 * 0.5 * 0.04)


class PollsOutsiders(Recorder):
    def choose_polled(self, ctx):
        return [self.info.n_clients - 1, self.info.n_clients - 1]


class SelectsFractions(Recorder):
    def select(self, ctx):
        return [float(c) + 0.5 for c in ctx.candidates[:1]]


class PollsUndeclared(Recorder):
    # polls without declaring in requires what the polled clients compute
    def choose_polled(self, ctx):
        return ctx.candidates[:1].tolist()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("PollsOutsiders", "polled"),
        ("PollsUndeclared", "declares no poll signal in requires"),
        ("SelectsFractions", "not integer client ids"),
    ],
)
def test_a_bad_poll_breaks_the_contract(name, message):
    from netfl.fl.server import StrategyContractError

    data = scenario([group("a", 4)], selection={"name": f"tests.test_protocol_steps:{name}"})
    with pytest.raises(StrategyContractError, match=message):
        run(data)


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ({"poll_signal": "poll_loss"}, "declare what polled clients compute in requires"),
        ({"requires": frozenset({"poll_loss", "update_vector"})}, "polls for one signal"),
    ],
)
def test_requires_is_the_one_declaration_of_a_poll(attributes, message):
    # issue 13: requires and poll_signal overlapped; poll_signal is now derived from requires
    with pytest.raises(TypeError, match=message):
        type("Declares", (Recorder,), attributes)


def test_poll_signal_is_derived_from_requires():
    derived = type("Polls", (Recorder,), {"requires": frozenset({"update_vector", "local_loss"})})
    assert derived.poll_signal == "update_vector"
    assert Recorder.poll_signal is None


def test_groups_can_be_placed_at_their_own_distances(write_scenario, tmp_path):
    import pandas as pd

    from netfl.cli import main

    near = group("near", 5, distance_m={"dist": "uniform", "low": 20, "high": 50})
    far = group("far", 5, distance_m=400.0)
    path = write_scenario(scenario([near, far, group("anywhere", 5)], fl={"rounds": 1}))
    assert main(["simulate", str(path), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    clients = pd.read_parquet(tmp_path / "run" / "clients.parquet")
    distance = clients.set_index("group")["distance_m"]
    assert distance["near"].between(20, 50).all()
    assert distance["far"].to_numpy() == pytest.approx([400.0] * 5)
    assert distance["anywhere"].between(10, 500).all()
    assert {"n_dropped", "energy_tx_j", "cold_start_s"} <= set(clients.columns)
