"""GPFL against eqs. (1)-(8) and Algorithm 1 of Na et al. 2024."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from netfl.scenario import scenario_from_data
from netfl.selection.gpfl import GPFL, adjustment, projection, softmax
from netfl.selection.signals import MissingSignalError
from tests.selection_helpers import ctx, feedback, info, ready, selection_error

NAN = float("nan")


def test_projection_is_the_scalar_projection_of_eq_3():
    updates = np.array([[3.0, 4.0], [1.0, 0.0], [-2.0, 0.0]])
    assert projection(updates, np.array([2.0, 0.0])) == pytest.approx([3.0, 1.0, -2.0])
    assert projection(updates, np.array([0.0, 5.0])) == pytest.approx([4.0, 0.0, 0.0])
    assert projection(updates, np.zeros(2)).tolist() == [0.0, 0.0, 0.0]
    # A row that is not finite (a client that sent nothing) has no projection.
    broken = np.array([[1.0, np.nan], [1.0, 1.0]])
    assert np.isnan(projection(broken, np.array([1.0, 0.0]))).tolist() == [True, False]
    assert np.isnan(projection(broken, np.zeros(2))).tolist() == [True, False]


def test_softmax_of_eq_5():
    c = np.array([0.0, math.log(2.0), math.log(5.0)])
    assert softmax(c) == pytest.approx([1 / 8, 2 / 8, 5 / 8])
    assert softmax(c + 1000.0) == pytest.approx([1 / 8, 2 / 8, 5 / 8])  # stable


def test_reward_adjustment_of_eq_8():
    assert adjustment(0.7, 0.5, 1.0, 2.0) == pytest.approx(2 * math.exp(0.2))
    assert adjustment(0.4, 0.5, 1.0, 2.0) == pytest.approx(2 * math.exp(-0.1))
    assert adjustment(0.5, 0.5, 1.5, 2.0) == pytest.approx(math.exp(-0.5))  # accuracy equal
    assert adjustment(NAN, 0.5, 1.5, 2.0) == pytest.approx(math.exp(-0.5))  # not evaluated
    assert adjustment(NAN, NAN, NAN, 2.0) == 1.0


def _fb(round_, selected, accuracy=NAN, loss=NAN, completed=None, **signals):
    """Feedback carrying the round's global accuracy and loss and the update signals."""
    k = len(selected)
    signals = {key: np.asarray(v, float) for key, v in signals.items()}
    base = feedback(selected, round_=round_, loss=[1.0] * k, completed=completed, signals=signals)
    return dataclasses.replace(base, global_accuracy=accuracy, global_loss=loss)


def _gpfl_ready(strategy, n, budget, rounds):
    return ready(strategy, info(n, budget, rounds=rounds))


def _gpfl() -> GPFL:
    return _gpfl_ready(GPFL(rho=1.0, momentum=0.5), 3, budget=1, rounds=4)


def _initialised() -> GPFL:
    strategy = _gpfl()
    assert strategy.choose_polled(ctx([0, 1, 2], 1)) == [0, 1, 2]
    init = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    assert strategy.select(ctx([0, 1, 2], 1, features={"update_vector": init})) == [2]
    return strategy


def test_initial_poll_projects_every_client_on_the_mean_update():
    strategy = _initialised()
    # Direction = mean update (2/3, 2/3): projections u . (1, 1) / sqrt 2.
    c = np.array([1 / math.sqrt(2), 1 / math.sqrt(2), math.sqrt(2)])
    assert strategy.latest_projection == pytest.approx(c)
    assert strategy.reward_sum == pytest.approx(np.exp(c) / np.exp(c).sum())
    assert strategy.n_observed.tolist() == [1, 1, 1]
    assert strategy.direction == pytest.approx([2 / 3, 2 / 3])
    # Round 0 (t = 1): ln 1 = 0, so the bound is the mean reward and client 2 wins.
    assert strategy.choose_polled(ctx([0, 1, 2], 1, round_=1)) == ()


def test_rounds_follow_eqs_1_to_8_by_hand():
    strategy = _initialised()
    c = np.array([1 / math.sqrt(2), 1 / math.sqrt(2), math.sqrt(2)])
    s0 = np.exp(c) / np.exp(c).sum()
    # Round 0: client 2 sends (0, 2); its projection on (2/3, 2/3) is again sqrt 2.
    strategy.observe(_fb(0, [2], 0.5, 1.0, update_vector=[[0.0, 2.0]], global_update=[0.0, 1.0]))
    # No earlier accuracy or loss: factor 1. d = 0.5 (2/3, 2/3) + (0, 1) = (1/3, 4/3).
    assert strategy.reward_sum == pytest.approx([s0[0], s0[1], 2 * s0[2]])
    assert strategy.direction == pytest.approx([1 / 3, 4 / 3])
    # Round 1 (t = 2): alpha = 1 * 2 / 4, n = 2.
    bonus = [0.5 * math.sqrt(2 * math.log(2) / n) for n in (1, 1, 2)]
    expected = [s0[0] + bonus[0], s0[1] + bonus[1], s0[2] + bonus[2]]
    assert strategy.bounds(2) == pytest.approx(expected)
    assert strategy.select(ctx([0, 1, 2], 1, round_=1)) == [int(np.argmax(expected))]
    # Round 1: client 0 sends (1, -1); projection on (1/3, 4/3) is -3/sqrt(17); the
    # accuracy went 0.5 -> 0.6, so the factor is 2 exp(0.1).
    strategy.observe(_fb(1, [0], 0.6, 0.9, update_vector=[[1.0, -1.0]], global_update=[1.0, 0.0]))
    c1 = np.array([-3 / math.sqrt(17), c[1], c[2]])
    mu0 = np.exp(c1[0]) / np.exp(c1).sum() * 2 * math.exp(0.1)
    assert strategy.reward_sum[0] == pytest.approx(s0[0] + mu0)
    assert strategy.direction == pytest.approx([0.5 / 3 + 1, 2 / 3])
    # Round 2: same accuracy, loss 0.9 -> 0.7: the factor is exp(-0.2).
    strategy.observe(_fb(2, [1], 0.6, 0.7, update_vector=[[0.0, 3.0]], global_update=[0.0, 0.0]))
    d = np.array([0.5 / 3 + 1, 2 / 3])
    c2 = np.array([c1[0], 3 * d[1] / np.linalg.norm(d), c[2]])
    mu1 = np.exp(c2[1]) / np.exp(c2).sum() * math.exp(-0.2)
    assert strategy.reward_sum[1] == pytest.approx(s0[1] + mu1)
    assert strategy.n_observed.tolist() == [2, 2, 2]


def test_unobserved_clients_have_an_infinite_bound_without_initial_poll():
    strategy = _gpfl_ready(GPFL(initial_poll=False), 4, budget=2, rounds=10)
    assert strategy.choose_polled(ctx(range(4), 2)) == ()
    strategy.observe(_fb(0, [0, 1], update_vector=np.eye(2), global_update=[1.0, 1.0]))
    assert sorted(strategy.select(ctx(range(4), 2, round_=1))) == [2, 3]


def test_clients_that_did_not_report_are_not_rewarded():
    strategy = _gpfl_ready(GPFL(initial_poll=False), 2, budget=2, rounds=10)
    strategy.observe(
        _fb(
            0,
            [0, 1],
            completed=[True, False],
            update_vector=[[1.0, 0.0], [0.0, 0.0]],
            global_update=[1.0, 0.0],
        )
    )
    assert strategy.n_observed.tolist() == [1, 0]


def test_a_server_that_ignores_the_poll_gets_a_clear_error():
    strategy = _gpfl()
    strategy.choose_polled(ctx([0, 1, 2], 1))
    with pytest.raises(MissingSignalError, match="update_vector"):
        strategy.select(ctx([0, 1, 2], 1))


def test_parameter_errors_name_the_key(tiny):
    for key, value in (("rho", -1.0), ("momentum", 1.0), ("rounds", 0)):
        error = selection_error(tiny, "gpfl", {key: value})
        assert error.problems[0].key == f"selection.params.{key}"
    tiny["fl"] = {"rounds": None, "time_budget_s": 100.0, "clients_per_round": 3}
    assert selection_error(tiny, "gpfl").problems[0].key == "selection.params.rounds"
    tiny["selection"] = {"name": "gpfl", "params": {"rounds": 50}}
    scenario_from_data(tiny)


def test_projection_uses_the_mean_gradient_not_the_raw_update():
    """Eq. (3) projects gradients: an update of lr x steps x g projects like g, so two
    clients with the same gradient but different step counts get the same c_i."""
    from netfl.selection.gpfl import mean_gradient

    g = np.array([1.0, 2.0, 0.0])
    updates = np.stack([0.05 * 10 * g, 0.05 * 40 * g])  # 10 and 40 local steps, lr 0.05
    scale = np.array([0.05 * 10, 0.05 * 40])
    direction = np.array([0.0, 1.0, 0.0])
    c = projection(mean_gradient(updates, scale), direction)
    assert c == pytest.approx([2.0, 2.0])
    # Without a scale the raw updates are used (and differ by the step count).
    assert projection(mean_gradient(updates, None), direction) == pytest.approx([1.0, 4.0])


def test_learner_reports_lr_times_steps_with_update_vectors():
    from netfl.learning.trainer import LocalSGD

    # E ceil(n / b) steps: 2 x ceil(n / 10) for n = 0, 1, 10, 11, 25; with a fixed step
    # count tau = 30, every client holding data takes 30 steps.
    sgd = LocalSGD(lr=0.1, epochs=2, batch_size=10)
    assert sgd.steps_taken(np.array([0, 1, 10, 11, 25])).tolist() == [0, 2, 2, 4, 6]
    sgd = LocalSGD(lr=0.1, epochs=1, batch_size=10, steps=30)
    assert sgd.steps_taken(np.array([0, 5])).tolist() == [0, 30]


def test_momentum_direction_has_one_unit_across_initialisation_and_rounds():
    # Issue 13: d^0 was the mean of updates / (lr x steps) (gradient units) and later rounds
    # added raw w^t - w^{t-1}: with lr x steps = 0.1 the seed weighed 10x too much. In one
    # unit (raw updates), eq. (1) by hand with gamma = 0.5:
    # d^0 = mean((1, 0), (0, 1), (1, 1)) = (2/3, 2/3); d^1 = 0.5 d^0 + (0, 1) = (1/3, 4/3);
    # d^2 = 0.5 d^1 + (1, 0) = (7/6, 2/3).
    strategy = _gpfl()
    strategy.choose_polled(ctx([0, 1, 2], 1))
    init = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    scale = [0.1, 0.1, 0.1]
    strategy.select(ctx([0, 1, 2], 1, features={"update_vector": init, "update_scale": scale}))
    assert strategy.direction == pytest.approx([2 / 3, 2 / 3])
    strategy.observe(
        _fb(
            0,
            [2],
            0.5,
            1.0,
            update_vector=[[0.0, 0.2]],
            update_scale=[0.1],
            global_update=[0.0, 1.0],
        )
    )
    assert strategy.direction == pytest.approx([1 / 3, 4 / 3])
    strategy.observe(
        _fb(
            1,
            [0],
            0.6,
            0.9,
            update_vector=[[0.1, 0.0]],
            update_scale=[0.1],
            global_update=[1.0, 0.0],
        )
    )
    assert strategy.direction == pytest.approx([7 / 6, 2 / 3])
