"""The dense path (netfl/learning/dense.py): logistic regression and MLPs trained with the
forward and backward pass written out take the sequential reference's steps (within the
tolerance the batched backend is held to), and the learner says which path runs."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch
from torch import nn

from netfl.config.learning import LearningConfig
from netfl.learning.dense import DenseTrainer, dense_layers
from netfl.learning.learner import make_trainer
from netfl.learning.models import digits_mlp, logistic_regression, mlp_64_30
from netfl.learning.trainer import LocalSGD, SequentialTrainer
from tests.test_learning_trainer import CPU, SGDS, SIZES, _bn_cnn, _data, _mlp

PROX = [dataclasses.replace(sgd, prox_mu=0.5) for sgd in SGDS]


def _logistic() -> nn.Module:
    torch.manual_seed(2)
    return logistic_regression((1, 8, 8), 3)


def _deep() -> nn.Module:
    """Two hidden layers, the first and the last without bias, ReLU on the output too."""
    torch.manual_seed(3)
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(64, 9, bias=False),
        nn.ReLU(),
        nn.Linear(9, 7),
        nn.ReLU(),
        nn.Linear(7, 3, bias=False),
        nn.ReLU(),
    )


def _dense_and_reference(make, sgd, sizes, steps=None):
    model = make()
    x, y, indices = _data(sizes)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    seeds = [11 + k for k in range(len(sizes))]
    reference = SequentialTrainer(model, CPU).train(state, x, y, indices, seeds, sgd, steps)
    result = DenseTrainer(model, CPU).train(state, x, y, indices, seeds, sgd, steps)
    assert list(result[0]) == list(state)
    for name in state:
        assert result[0][name].shape == reference[0][name].shape
        assert torch.allclose(result[0][name], reference[0][name], atol=1e-5)
    assert np.allclose(result[1], reference[1], atol=1e-5, equal_nan=True)
    assert np.allclose(result[2], reference[2], atol=1e-5, equal_nan=True)
    return state, result


@pytest.mark.parametrize("sgd", SGDS + PROX)
@pytest.mark.parametrize("make", [_mlp, _logistic, _deep])
def test_dense_equals_sequential(make, sgd):
    """Ragged clients (one without data, one smaller than a batch, short last batches):
    weight decay, momentum, local steps and FedProx's proximal term."""
    state, result = _dense_and_reference(make, sgd, SIZES)
    for name in state:  # the client without data keeps the global model exactly
        assert torch.equal(result[0][name][2], state[name])
    assert np.isnan(result[1][2]) and np.isnan(result[2][2])


@pytest.mark.parametrize("sgd", SGDS + PROX)
@pytest.mark.parametrize("make", [_mlp, _logistic])
def test_dense_equals_sequential_with_per_client_steps(make, sgd):
    """Partial work: each client stops after its own number of steps (one at none)."""
    full = sgd.steps_taken(np.array(SIZES))
    steps = [int(s) for s in np.minimum(full, [3, 1, 0, 9, 2])]
    _, result = _dense_and_reference(make, sgd, SIZES, steps)
    assert np.isnan(result[1][2])


def test_a_client_trains_the_same_whoever_trains_beside_it():
    """Clients drop out of the stack as their plans end: a client's update does not
    depend on the others' (the longest plan first, then a narrower stack)."""
    model = _mlp()
    x, y, indices = _data(SIZES)
    state = model.state_dict()
    sgd = PROX[0]
    together = DenseTrainer(model, CPU).train(state, x, y, indices, range(5), sgd)
    alone = DenseTrainer(model, CPU).train(state, x, y, indices[3:4], [3], sgd)
    for name in state:
        assert torch.allclose(together[0][name][3], alone[0][name][0], atol=1e-6)
    assert together[1][3] == pytest.approx(alone[1][0], abs=1e-6)


def test_the_steps_are_torch_optim_sgd_with_the_proximal_term():
    """One client, one step on a batch of 2, by hand: w - lr (g + mu (w - w_t) + wd w)."""
    model = nn.Linear(2, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0]]))
        model.bias.zero_()
    x = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    y = torch.tensor([0, 0])
    sgd = LocalSGD(lr=0.5, epochs=1, batch_size=2, prox_mu=0.2, weight_decay=0.1)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    states, losses, _ = DenseTrainer(nn.Sequential(model), CPU).train(
        {f"0.{k}": v for k, v in state.items()}, x, y, [torch.arange(2)], [0], sgd
    )
    logits = x @ state["weight"].T
    p = torch.softmax(logits, 1)
    g = (p - torch.eye(2)[y]) / 2
    weight = state["weight"] - 0.5 * (g.T @ x + 0.1 * state["weight"])  # w = w_t: no pull
    assert torch.allclose(states["0.weight"][0], weight, atol=1e-6)
    assert torch.allclose(states["0.bias"][0], -0.5 * g.sum(0), atol=1e-6)
    assert losses[0] == pytest.approx(float(-torch.log(p[[0, 1], y]).mean()), abs=1e-6)


@pytest.mark.parametrize(
    ("model", "why"),
    [
        (_bn_cnn(), "its layer 0 is a Conv2d"),
        (nn.Sequential(nn.Linear(4, 3), nn.Dropout(), nn.Linear(3, 2)), "layer 1 is a Dropout"),
        (nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)), "layer 1 is a BatchNorm1d"),
        (nn.Sequential(nn.Linear(4, 3), nn.Tanh()), "layer 1 is a Tanh"),
        (nn.Sequential(nn.ReLU(), nn.Linear(4, 3)), "layer 0 is a ReLU"),
        (nn.Sequential(nn.Linear(4, 3), nn.Flatten()), "layer 1 is a Flatten"),
        (nn.Linear(4, 3), "not an nn.Sequential"),
        (nn.Sequential(nn.Flatten()), "no Linear layer"),
        (nn.Sequential(nn.Linear(4, 3)).double(), "not float32"),
    ],
)
def test_what_the_dense_path_does_not_take_is_named(model, why):
    assert why in dense_layers(model)
    with pytest.raises(ValueError, match="cannot take the dense path"):
        DenseTrainer(model, CPU)


@pytest.mark.parametrize("build", [digits_mlp, logistic_regression, mlp_64_30])
def test_netfls_small_models_take_the_dense_path_on_cpu(build):
    model = build((1, 28, 28), 10)
    assert isinstance(dense_layers(model), list)
    trainer = make_trainer(LearningConfig(), model, CPU)
    assert isinstance(trainer, DenseTrainer) and trainer.path == "dense"
    sequential = make_trainer(LearningConfig(backend="sequential"), model, CPU)
    assert sequential.path == "sequential"


def test_other_models_take_the_batched_paths_and_say_so():
    trainer = make_trainer(LearningConfig(), _bn_cnn(), CPU)
    assert trainer.path == "batched, sequential loop"  # convolutions on CPU
    with_norm = nn.Sequential(nn.Flatten(), nn.Linear(64, 4), nn.BatchNorm1d(4), nn.Linear(4, 3))
    assert make_trainer(LearningConfig(), with_norm, CPU).path == "batched, eager"


def test_a_run_records_its_training_path(tiny, tmp_path):
    from netfl.scenario import scenario_from_data
    from netfl.simulation import simulate

    tiny["fl"]["rounds"] = 1
    run_dir = simulate(scenario_from_data(tiny), tmp_path / "run").run_dir
    assert json.loads((run_dir / "summary.json").read_text())["training_path"] == "dense"
    tiny["learning"]["backend"] = "sequential"
    run_dir = simulate(scenario_from_data(tiny), tmp_path / "seq").run_dir
    assert json.loads((run_dir / "summary.json").read_text())["training_path"] == "sequential"


def test_backend_dense_refuses_a_model_it_cannot_train(tiny, write_scenario, capsys):
    from netfl.cli import main

    tiny["learning"].update(backend="dense", model="fedcs_cifar_cnn")
    path = write_scenario(tiny)
    assert main(["simulate", str(path), "--out", str(path.parent / "run")]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "learning.backend" in error[0]
    assert "dense takes stacks of Linear and ReLU layers" in error[0]
    assert "its layer 0 is a Conv2d" in error[0]
