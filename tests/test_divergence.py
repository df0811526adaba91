"""Divergence is never silent (issue 34, part 3): a run whose model or loss becomes
non-finite stops at that round with ``status: diverged``; ``netfl validate`` warns where the
settings are unstable by construction, and refuses values past any stable setting."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.cli import main
from netfl.learning.aggregation.base import ClientUpdates
from netfl.learning.aggregation.fedadagrad import fedadagrad
from netfl.learning.aggregation.fedavgm import fedavgm
from netfl.learning.divergence import nonfinite_tensor
from netfl.learning.stability import stability_warnings
from netfl.scenario import scenario_from_data
from netfl.trace.report import write_comparison
from tests.conftest import TINY

#: The proximal step lr x mu = 0.1 x 1000 = 100 amplifies w - w_t 99-fold a step: past
#: float32's range within the 15 to 30 steps of five local epochs.
UNSTABLE = {"lr": 0.1, "prox_mu": 1000.0, "local_epochs": 5}


def _scenario(**learning) -> dict:
    data = json.loads(json.dumps(TINY))
    data["fl"] = {"rounds": 3, "clients_per_round": 2}
    data["learning"] = {**data["learning"], "device": "cpu", **learning}
    return data


def _simulate(tmp_path, data, capsys, name="run") -> tuple[int, str, dict, pd.DataFrame]:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    out = tmp_path / name
    code = main(["simulate", str(path), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    return code, err, summary, pd.read_parquet(out / "rounds.parquet")


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if not line.startswith("warning: ")]


@pytest.mark.parametrize("backend", ["batched", "sequential"])
def test_a_diverging_run_stops_at_that_round(tmp_path, capsys, backend):
    code, err, summary, rounds = _simulate(tmp_path, _scenario(backend=backend, **UNSTABLE), capsys)
    assert code == 1
    assert summary["status"] == "diverged"
    r = summary["diverged_round"]
    lines = _error_lines(err)
    assert len(lines) == 1
    assert lines[0].startswith(f"error: the run diverged at round {r}: client ")
    assert "'s local training loss is " in lines[0] and str(tmp_path / "run") in lines[0]
    assert summary["divergence"] in lines[0]
    # Every round until then is recorded; the diverged one ended, not evaluated (a
    # diverged model's accuracy is noise), and none after it ran.
    assert rounds["round"].tolist() == list(range(r + 1)) and summary["rounds"] == r + 1
    assert rounds["t_end_s"].notna().all()
    assert rounds["accuracy"].notna().tolist() == [True] * r + [False]
    assert "learning.prox_mu: learning.lr x prox_mu = 100" in err  # validate's warning


@pytest.mark.parametrize(
    ("fl", "rule"),
    [
        ({}, "fednova"),
        ({}, "fedavgm"),
        ({}, "fedadagrad"),
        ({}, "fedadam"),
        ({}, "fedyogi"),
        ({"protocol": "fedbuff", "concurrency": 2}, "fedavg"),
        ({"protocol": "fedasync", "concurrency": 2}, "fedyogi"),
        ({"protocol": "hierarchical", "kappa2": 1}, "fednova"),
    ],
)
def test_every_rule_and_protocol_stops_a_diverging_run(tmp_path, capsys, fl, rule):
    data = _scenario(**UNSTABLE)
    data["fl"].update(fl, aggregation={"name": rule})
    if fl.get("protocol") == "hierarchical":  # edges are cells: a radio with a layout
        data["radio"] = {"model": "lte"}
    code, err, summary, _ = _simulate(tmp_path, data, capsys)
    assert (code, summary["status"]) == (1, "diverged")
    assert summary["diverged_round"] == summary["rounds"] - 1
    assert len(_error_lines(err)) == 1


def test_a_non_finite_model_stops_the_run(tmp_path, capsys, monkeypatch):
    """The global model itself (not a training loss) turning NaN after round 1."""
    from netfl.learning.aggregation import aggregator

    real = aggregator.fedavg
    calls = []

    def poisoned(stacked, weights):
        calls.append(1)
        out = real(stacked, weights)
        return out if len(calls) < 2 else {k: v * math.nan for k, v in out.items()}

    monkeypatch.setattr(aggregator, "fedavg", poisoned)
    code, err, summary, rounds = _simulate(tmp_path, _scenario(), capsys)
    assert code == 1 and summary["status"] == "diverged" and summary["diverged_round"] == 1
    assert summary["divergence"].startswith("the global model's ")
    assert "holds NaN or infinite values" in _error_lines(err)[0]
    assert rounds["accuracy"].notna().tolist() == [True, False]


def test_nonfinite_tensor_names_the_first_bad_tensor():
    state = {"a.weight": torch.zeros(3), "steps": torch.tensor([1]), "b.bias": torch.ones(2)}
    assert nonfinite_tensor(state) is None
    state["b.bias"][1] = math.inf
    assert nonfinite_tensor(state) == "the global model's b.bias holds NaN or infinite values"


def test_values_past_any_stable_setting_are_refused_naming_the_key(capsys):
    for override, key in [
        ("learning.prox_mu=1e308", "learning.prox_mu"),
        ("learning.lr=1e308", "learning.lr"),
        ("learning.weight_decay=1e308", "learning.weight_decay"),
        ("fl.aggregation.params.eta=1e308", "fl.aggregation.params.eta"),
    ]:
        args = ["validate", "quickstart", "--set", override]
        if key.startswith("fl.aggregation"):
            args += ["--set", "fl.aggregation.name=fedyogi"]
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{key}: Input should be less than or equal to 1000" in err
    assert main(["validate", "async_compare", "--set", "fl.server_lr=1e308"]) == 2
    assert "fl.server_lr: Input should be less than or equal to 1000" in capsys.readouterr().err


# -- the stability conditions (netfl/learning/stability.py) ------------------------------


BASE = scenario_from_data(_scenario())


def _warnings(data: dict) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scenario = scenario_from_data(data)
    from_validation = [str(w.message) for w in caught]
    from_function = [f"{k}: {m}" for k, m in stability_warnings(scenario, _params(scenario))]
    assert [m for m in from_validation if m in from_function] == from_function
    return from_function


def _params(scenario) -> dict | None:
    from netfl.learning.aggregation.base import validate_params
    from netfl.registry import aggregations

    config = scenario.fl.aggregation
    if config.name not in ("fedavgm", "fedadagrad", "fedadam", "fedyogi"):
        return None
    return validate_params(aggregations().load(config.name), config.params)


@pytest.mark.parametrize(
    ("learning", "warned"),
    [
        ({"lr": 0.1, "prox_mu": 19.9}, False),
        ({"lr": 0.1, "prox_mu": 20.0}, True),
        ({"lr": 0.1, "prox_mu": 10.0, "weight_decay": 10.0}, True),
        ({"lr": 0.1, "weight_decay": 25.0}, True),
        ({"lr": 0.1, "prox_mu": 29.9, "momentum": 0.5}, False),  # limit 2 (1 + 0.5) = 3
        ({"lr": 0.1, "prox_mu": 30.0, "momentum": 0.4}, True),
    ],
)
def test_the_local_step_warning_is_the_heavy_ball_condition(learning, warned):
    found = _warnings(_scenario(**learning))
    assert bool(found) == warned
    if warned:
        key = "learning.prox_mu" if learning.get("prox_mu", 0) else "learning.weight_decay"
        assert found[0].startswith(f"{key}: learning.lr x ")


@given(
    lr_curvature=st.floats(0.05, 6.0),
    momentum=st.sampled_from([0.0, 0.5, 0.9]),
)
@settings(max_examples=12, deadline=None)
def test_torch_sgd_on_the_proximal_term_diverges_exactly_where_validate_warns(
    lr_curvature, momentum
):
    """torch.optim.SGD on (lambda / 2) w^2 alone (the proximal term and weight decay): the
    iterate shrinks below the limit 2 (1 + momentum) and grows above it."""
    limit = 2.0 * (1.0 + momentum)
    if abs(lr_curvature - limit) < 0.2:  # too close to tell in 150 steps
        return
    w = torch.ones(1, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=lr_curvature, momentum=momentum)
    for _ in range(150):
        w.grad = w.detach().clone()  # the gradient of w^2 / 2
        optimizer.step()
    final = w.detach()
    grows = not bool(torch.isfinite(final).all()) or float(final.abs()) > 1.0
    learning = BASE.learning.model_copy(
        update={"lr": lr_curvature / 10.0, "prox_mu": 10.0, "momentum": momentum}
    )
    assert grows == bool(stability_warnings(BASE.model_copy(update={"learning": learning})))


@pytest.mark.parametrize(("eta", "beta"), [(3.7, 0.9), (3.8, 0.9), (1.9, 0.0), (2.0, 0.0)])
def test_fedavgm_warning_is_where_server_momentum_stops_converging(eta, beta):
    """FedAvgM (netfl's own rule) on updates that reach the optimum, Delta = -(w - w*):
    w converges below eta = 2 (1 + beta) and not from there on, as validate says."""
    w = torch.ones(1)
    state: dict = {}
    for _ in range(600):
        updates = ClientUpdates({"p": w}, {"p": torch.zeros(1, 1)}, torch.ones(1))
        new, state = fedavgm(updates, state, eta=eta, beta=beta)
        w = new["p"]
    converges = float(w.abs()) < 1e-3
    data = _scenario()
    data["fl"]["aggregation"] = {"name": "fedavgm", "params": {"eta": eta, "beta": beta}}
    assert converges != bool(_warnings(data))


@given(
    deltas=st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=40),
    beta1=st.floats(0.0, 0.99),
)
@settings(max_examples=60, deadline=None)
def test_fedadagrad_moves_a_weight_by_at_most_eta_a_round(deltas, beta1):
    """|m_t| <= max |Delta| <= sqrt(v_t): FedAdagrad's step is at most eta (the bound
    validate's warning uses), whatever the updates."""
    eta, w, state = 0.5, torch.zeros(1, dtype=torch.float64), {}
    for delta in deltas:
        updates = ClientUpdates(
            {"p": w}, {"p": (w + delta).reshape(1, 1)}, torch.ones(1, dtype=torch.float64)
        )
        new, state = fedadagrad(updates, state, eta=eta, beta1=beta1, tau=1e-3)
        assert float((new["p"] - w).abs()) <= eta * (1 + 1e-12)
        w = new["p"]


@pytest.mark.parametrize(
    ("rule", "params", "warned"),
    [
        ("fedadam", {"eta": 1.0}, False),  # c = (1 - 0.9) / sqrt(1 - 0.99) = 1
        ("fedadam", {"eta": 1.5}, True),
        ("fedyogi", {"eta": 0.1, "beta1": 0.0}, False),  # c = 1 / sqrt(0.01) = 10: step 1
        ("fedyogi", {"eta": 0.2, "beta1": 0.0}, True),
        ("fedadagrad", {"eta": 1.0}, False),
        ("fedadagrad", {"eta": 2.0}, True),
    ],
)
def test_adaptive_rules_warn_when_a_round_moves_weights_past_their_scale(rule, params, warned):
    data = _scenario()
    data["fl"]["aggregation"] = {"name": rule, "params": params}
    found = _warnings(data)
    assert bool(found) == warned
    if warned:
        assert found[0].startswith(f"fl.aggregation.params.eta: {rule} moves every weight")


@pytest.mark.parametrize(("server_lr", "warned"), [(1.99, False), (2.0, True)])
def test_fedbuff_server_lr_warns_from_two(server_lr, warned):
    data = _scenario()
    data["fl"].update(protocol="fedbuff", concurrency=2, server_lr=server_lr)
    assert bool(_warnings(data)) == warned


def test_timing_only_runs_are_not_checked():
    data = _scenario()
    data["learning"] = "none"
    data["fl"]["model_size_bits"] = 1e6
    assert stability_warnings(scenario_from_data(data)) == []


# -- diverged runs in sweeps and comparisons ------------------------------------------------


def test_compare_marks_diverged_runs_instead_of_averaging_them(tmp_path, capsys):
    good = _scenario()
    bad = _scenario(**UNSTABLE)
    for name, data in (("good", good), ("bad", bad)):
        _simulate(tmp_path, data, capsys, name)
    path, messages = write_comparison([tmp_path / "good", tmp_path / "bad"], tmp_path / "report")
    assert messages == [
        "diverged runs (their model or loss became non-finite), not averaged in: bad (round 0)"
    ]
    assert "not averaged in: bad (round 0)" in path.read_text()
    assert pd.read_csv(path.parent / "runs.csv")["run"].tolist() == ["good"]
    assert pd.read_csv(path.parent / "comparison.csv")["n"].tolist() == [1]


def test_a_diverged_sweep_run_is_recorded_and_not_run_again(tmp_path, capsys):
    from netfl.recorder.sweep_index import read_index
    from netfl.sweep import load_sweep, run_sweep
    from tests.analysis.conftest import write_sweep

    base = _scenario(**{**UNSTABLE, "prox_mu": 0.0})
    path = write_sweep(tmp_path, base, {"grid": {"learning.prox_mu": [0.0, 1000.0]}, "seeds": [1]})
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "1/2 runs completed (0 already done), 0 failed, 1 diverged" in err
    assert "  diverged s1-" in err
    index = read_index(tmp_path / "out").set_index("run_id")
    assert sorted(index["status"]) == ["completed", "diverged"]
    diverged = index[index["status"] == "diverged"]
    assert diverged["error"].iloc[0].startswith("0: client ")
    again = run_sweep(load_sweep(path), tmp_path / "out", progress="quiet")
    assert again.skipped == 2
    assert np.array_equal(again.index["status"].sort_values(), ["completed", "diverged"])
