"""Aggregation rules against values computed by hand from the papers' equations.

The round: w_t = (1, 2); client 1 sends (2, 2) with n = 1, client 2 sends (0, 4) with
n = 3, so p = (1/4, 3/4), Delta_1 = (1, 0), Delta_2 = (-1, 2) and FedAvg's update
Delta_t = (-1/2, 3/2).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from netfl.learning.aggregation.aggregator import Aggregator
from netfl.learning.aggregation.base import ClientUpdates
from netfl.learning.aggregation.fedadagrad import fedadagrad
from netfl.learning.aggregation.fedadam import fedadam
from netfl.learning.aggregation.fedavg import fedavg, federated_averaging
from netfl.learning.aggregation.fedavgm import fedavgm
from netfl.learning.aggregation.fednova import fednova
from netfl.learning.aggregation.fedyogi import fedyogi

W_T = {"w": torch.tensor([1.0, 2.0], dtype=torch.float64)}
CLIENTS = {"w": torch.tensor([[2.0, 2.0], [0.0, 4.0]], dtype=torch.float64)}
N = torch.tensor([1.0, 3.0])


def updates(norms=None, current=W_T, stacked=CLIENTS, weights=N) -> ClientUpdates:
    return ClientUpdates(current, stacked, weights, None if norms is None else torch.tensor(norms))


def one_client(current: dict, delta: list[float]) -> ClientUpdates:
    """A round whose only client moved the model by ``delta``."""
    moved = current["w"] + torch.tensor(delta, dtype=torch.float64)
    return ClientUpdates(current, {"w": moved.unsqueeze(0)}, torch.ones(1))


def test_fedavg_is_the_weighted_mean():
    params, state = federated_averaging(updates(), {})
    assert params["w"].tolist() == [0.5, 3.5] and state == {}


def test_fednova_normalises_by_the_local_paths():
    """Wang et al. 2020 Sec. 4 with ||a|| = (2, 4): tau_eff = 1/4 2 + 3/4 4 = 3.5;
    sum p Delta / ||a|| = (1/8 - 3/16, 3/8) = (-1/16, 3/8); x 3.5 = (-0.21875, 1.3125)."""
    params, _ = fednova(updates([2.0, 4.0]), {})
    assert params["w"].tolist() == [1 - 0.21875, 2 + 1.3125]


def test_fednova_with_equal_local_work_is_fedavg():
    params, _ = fednova(updates([7.0, 7.0]), {})
    assert torch.allclose(params["w"], torch.tensor([0.5, 3.5], dtype=torch.float64))


def test_fedavgm_is_server_momentum():
    """Hsu et al. 2019, eta = 1, beta = 0.5: v_1 = Delta_t = (-0.5, 1.5), w = (0.5, 3.5);
    then a round with Delta = (0.5, 0): v_2 = 0.5 v_1 + Delta = (0.25, 0.75), w = (0.75, 4.25).
    With eta = 0.1 the first step is (-0.05, 0.15)."""
    params, state = fedavgm(updates(), {}, eta=1.0, beta=0.5)
    assert params["w"].tolist() == [0.5, 3.5]
    params, state = fedavgm(one_client(params, [0.5, 0.0]), state, eta=1.0, beta=0.5)
    assert params["w"].tolist() == [0.75, 4.25]
    assert state["v"]["w"].tolist() == [0.25, 0.75]
    params, _ = fedavgm(updates(), {}, eta=0.1, beta=0.5)
    assert torch.allclose(params["w"], torch.tensor([0.95, 2.15], dtype=torch.float64))


def test_fedavgm_without_momentum_and_unit_rate_is_fedavg():
    params, _ = fedavgm(updates(), {}, eta=1.0, beta=0.0)
    assert params["w"].tolist() == [0.5, 3.5]


# Reddi et al. 2021, Alg. 2, eta = 0.1, beta1 = 0.9, beta2 = 0.99, tau = 0.01, two rounds:
# Delta_1 = (-0.5, 1.5) (the round above), then one client moving by Delta_2 = (0.01, -0.02).
# By hand, per coordinate: m_1 = 0.1 Delta_1 = (-0.05, 0.15); m_2 = 0.9 m_1 + 0.1 Delta_2 =
# (-0.044, 0.133); v_(-1) = tau^2 = 1e-4;
#   Adam:    v_1 = 0.99e-4 + 0.01 (0.25, 2.25) = (0.002599, 0.022599),
#            v_2 = 0.99 v_1 + 0.01 (1e-4, 4e-4) = (0.00257401, 0.02237701);
#   Yogi:    v_1 = 1e-4 + 0.01 (0.25, 2.25) = (0.0026, 0.0226) (Delta^2 > v: grows),
#            v_2 = v_1 - 0.01 (1e-4, 4e-4) = (0.002599, 0.022596) (Delta^2 < v: shrinks);
#   Adagrad: v_1 = 1e-4 + (0.25, 2.25) = (0.2501, 2.2501), v_2 = v_1 + (1e-4, 4e-4);
# and w <- w + 0.1 m / (sqrt(v) + 0.01) each round, e.g. Adam's first step in the first
# coordinate: 0.1 (-0.05) / (sqrt(0.002599) + 0.01) = -0.0819936.
REDDI = {
    fedadam: [
        ([0.9180064257980722, 2.093557249964272], [0.002599, 0.022599]),
        ([0.8455601990801254, 2.176896080968831], [0.00257401, 0.02237701]),
    ],
    fedyogi: [
        ([0.9180196097281443, 2.093555309189153], [0.0026, 0.0226]),
        ([0.8458652644304478, 2.1765145672761763], [0.002599, 0.022596]),
    ],
    fedadagrad: [
        ([0.99019800019996, 2.0099335555530864], [0.2501, 2.2501]),
        ([0.9815739305315458, 2.018740530554656], [0.2502, 2.2505]),
    ],
}


@pytest.mark.parametrize("rule", list(REDDI), ids=lambda r: r.__name__)
def test_server_optimizers_follow_reddi_et_al_algorithm_2(rule):
    params = {"eta": 0.1, "beta1": 0.9, "tau": 0.01}
    if rule is not fedadagrad:
        params["beta2"] = 0.99
    (w_1, v_1), (w_2, v_2) = REDDI[rule]
    out, state = rule(updates(), {}, **params)
    assert np.allclose(out["w"].tolist(), w_1, rtol=0, atol=1e-12)
    assert np.allclose(state["v"]["w"].tolist(), v_1, rtol=0, atol=1e-12)
    out, state = rule(one_client(out, [0.01, -0.02]), state, **params)
    assert np.allclose(out["w"].tolist(), w_2, rtol=0, atol=1e-12)
    assert np.allclose(state["v"]["w"].tolist(), v_2, rtol=0, atol=1e-12)
    assert np.allclose(state["m"]["w"].tolist(), [-0.044, 0.133], atol=1e-12)


@pytest.mark.parametrize(
    "rule", [fedavgm, fedadagrad, fedadam, fedyogi, fednova], ids=lambda r: r.__name__
)
def test_rules_are_pure(rule):
    """A rule changes neither its inputs nor the state it was given."""
    inputs = updates([2.0, 4.0])
    before = copy.deepcopy((dict(inputs.current), dict(inputs.stacked), inputs.weights))
    _, state = rule(inputs, {})
    kept = copy.deepcopy(state)
    rule(inputs, state)
    assert torch.equal(inputs.current["w"], before[0]["w"])
    assert torch.equal(inputs.stacked["w"], before[1]["w"])
    for group, tensors in kept.items():
        for name, tensor in tensors.items():
            assert torch.equal(state[group][name], tensor)


def test_the_aggregator_moves_parameters_and_averages_buffers():
    """A rule moves the parameters (seen as one flat vector, put back in their shapes);
    batch-norm statistics and counters are FedAvg's (the counter rounded down); under fedavg
    the whole state is fedavg's, bit for bit."""
    current = {
        "w": torch.tensor([1.0, 2.0]),
        "mean": torch.zeros(2),
        "b": torch.tensor([[1.0], [2.0]]),
        "count": torch.tensor(4),
    }
    stacked = {
        "w": torch.tensor([[2.0, 2.0], [0.0, 4.0]]),
        "mean": torch.tensor([[4.0, 0.0], [0.0, 4.0]]),
        "b": torch.tensor([[[2.0], [2.0]], [[0.0], [4.0]]]),
        "count": torch.tensor([5, 6]),
    }
    plain = Aggregator(param_names=["w", "b"]).aggregate(current, stacked, N)
    reference = fedavg(stacked, N)
    assert plain is not None and reference is not None
    for name in stacked:
        assert torch.equal(plain[name], reference[name])
    momentum = Aggregator(fedavgm, {"eta": 0.1, "beta": 0.5}, ["w", "b"])
    moved = momentum.aggregate(current, stacked, N)
    assert moved is not None and list(moved) == list(current)
    assert torch.allclose(moved["w"], torch.tensor([0.95, 2.15]))
    assert torch.allclose(moved["b"], torch.tensor([[0.95], [2.15]]))
    assert moved["mean"].tolist() == [1.0, 3.0] and int(moved["count"]) == 5
    assert momentum.state["v"]["parameters"].tolist() == [-0.5, 1.5, -0.5, 1.5]
    assert momentum.aggregate(current, stacked, torch.zeros(2)) is None


def test_the_aggregator_takes_an_asynchronous_update_as_delta_t():
    """FedBuff's buffer applied (``proposed``) is Delta_t for a server optimizer."""
    current = {"w": torch.tensor([1.0, 2.0])}
    proposed = {"w": torch.tensor([0.5, 3.5])}
    stepped = Aggregator(fedavgm, {"eta": 0.1, "beta": 0.0}, ["w"]).apply(current, proposed)
    assert torch.allclose(stepped["w"], torch.tensor([0.95, 2.15]))
    assert Aggregator(param_names=["w"]).apply(current, proposed) is proposed


@pytest.mark.parametrize(
    "rule", ["fedavg", "fednova", "fedavgm", "fedadagrad", "fedadam", "fedyogi"]
)
def test_every_rule_runs_end_to_end(rule, tiny, write_scenario, tmp_path):
    """`netfl simulate` with each rule (and partial work, FedProx's term): the model moves
    and every round is evaluated."""
    from netfl.cli import main
    from netfl.trace.run import load_run

    tiny["fl"].update(aggregation={"name": rule}, deadline_s=3.0, partial_work=True)
    tiny["learning"]["prox_mu"] = 0.1
    out = tmp_path / "run"
    assert main(["simulate", str(write_scenario(tiny)), "--out", str(out), "--quiet"]) == 0
    accuracy = load_run(out).rounds["accuracy"]
    assert accuracy.notna().all() and accuracy.nunique() > 1
