"""Learning end to end through `netfl simulate`, and the learning section's validation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from netfl.cli import main
from netfl.errors import ScenarioError
from netfl.scenario import dump_scenario, load_scenario


def _run(write_scenario, data, out) -> dict[str, pd.DataFrame]:
    assert main(["simulate", str(write_scenario(data)), "--out", str(out), "--quiet"]) == 0
    return {
        name: pd.read_parquet(out / f"{name}.parquet") for name in ("rounds", "timeline", "clients")
    }


def test_digits_iid_reaches_85_percent_in_a_few_rounds(write_scenario, tiny, tmp_path):
    tiny["devices"]["groups"][0].pop("n_samples")  # deal the training set out evenly
    tiny["devices"]["groups"][0]["count"] = 10
    tiny["fl"] = {"rounds": 4, "clients_per_round": 10}
    tiny["learning"].update(local_epochs=2, lr=0.1, batch_size=10)
    rounds = _run(write_scenario, tiny, tmp_path / "run")["rounds"]
    assert rounds["accuracy"].iloc[-1] > 0.85


def test_backends_give_the_same_run(write_scenario, tiny, tmp_path):
    tiny["learning"]["backend"] = "sequential"
    a = _run(write_scenario, tiny, tmp_path / "a")["rounds"]
    tiny["learning"]["backend"] = "batched"
    b = _run(write_scenario, tiny, tmp_path / "b")["rounds"]
    assert np.allclose(a["accuracy"], b["accuracy"], atol=1e-6)
    assert np.allclose(a["loss"], b["loss"], atol=1e-5)
    pd.testing.assert_series_equal(a["t_end_s"], b["t_end_s"])


def test_dirichlet_label_counts_and_local_steps_timing(write_scenario, tiny, tmp_path):
    """label_counts in clients.parquet; a local update of tau steps of batch b takes
    tau min(b, n_k) / compute_sps simulated seconds."""
    tiny["learning"].update(
        partition={"kind": "dirichlet", "alpha": 0.5}, local_steps=3, batch_size=8
    )
    tiny["learning"].pop("local_epochs")
    tables = _run(write_scenario, tiny, tmp_path / "run")
    clients = tables["clients"]
    counts = np.stack(clients["label_counts"].to_numpy())
    assert counts.shape == (6, 10)
    assert (counts.sum(axis=1) == clients["n_samples"]).all()
    ends = tables["timeline"].query("kind == 'compute_end'")
    sps = clients.set_index("client")["compute_sps"]
    n = clients.set_index("client")["n_samples"]
    expected = 3 * np.minimum(8, n[ends["client"]].to_numpy()) / sps[ends["client"]].to_numpy()
    assert np.allclose(ends["duration_s"].to_numpy(), expected)


def test_evaluation_every_simulated_interval(write_scenario, tiny, tmp_path):
    tiny["fl"]["rounds"] = 6
    tiny["learning"]["eval_every_s"] = 5.0
    rounds = _run(write_scenario, tiny, tmp_path / "run")["rounds"]
    next_due, expected = 5.0, []
    for i, end in enumerate(rounds["t_end_s"]):
        due = end >= next_due or i == len(rounds) - 1
        if end >= next_due:
            next_due = (np.floor(end / 5.0) + 1) * 5.0
        expected.append(due)
    assert rounds["accuracy"].notna().tolist() == expected
    assert not all(expected)  # rounds take about 2 s: some are not evaluated


def test_fairness_losses_are_recorded(write_scenario, tiny, tmp_path):
    tiny["learning"]["fairness_loss"] = "test"
    timeline = _run(write_scenario, tiny, tmp_path / "run")["timeline"]
    losses = timeline.query("kind == 'client_loss'")
    assert len(losses) == 3 * 6  # every client at each of the 3 evaluations
    assert (losses.groupby("round")["client"].apply(sorted) == [list(range(6))] * 3).all()
    assert np.isfinite(losses["loss"]).all() and (losses["loss"] > 0).all()


def test_synthetic_natural_partition_runs(write_scenario, tiny, tmp_path):
    tiny["devices"]["groups"][0].pop("n_samples")
    tiny["learning"] = {
        "dataset": "synthetic",
        "partition": {"kind": "natural"},
        "model": "logistic_regression",
        "local_steps": 5,
        "batch_size": 50,
        "lr": 0.05,
    }
    tables = _run(write_scenario, tiny, tmp_path / "run")
    assert tables["clients"]["n_samples"].min() >= 40  # 80% of at least 50 per device
    assert tables["rounds"]["accuracy"].notna().all()


def _problem(write_scenario, data) -> str:
    with pytest.raises(ScenarioError) as info:
        load_scenario(write_scenario(data))
    return str(info.value)


def test_partitions_that_set_sizes_refuse_n_samples(write_scenario, tiny):
    tiny["learning"]["partition"] = {"kind": "shards", "shards_per_client": 2}
    message = _problem(write_scenario, tiny)
    assert "devices.groups.0.n_samples" in message and "shards" in message


@pytest.mark.parametrize(
    ("learning", "expected"),
    [
        ({"partition": {"kind": "dirichlet"}}, "kind dirichlet needs alpha"),
        ({"partition": {"kind": "iid", "alpha": 1}}, "alpha applies to kind dirichlet"),
        ({"dataset": "synthetic", "dataset_params": {"alfa": 1}}, "did you mean 'alpha'"),
        ({"dataset_params": {"alpha": 1}}, "dataset digits takes no parameters"),
        ({"local_steps": 30}, "set exactly one of local_epochs and local_steps"),
        ({"bf16": True, "device": "cpu"}, "bf16 autocast is for cuda"),
        ({"bf16": True, "backend": "sequential"}, "bf16 autocast is a feature of the batched"),
        ({"backend": "vmap"}, "learning.backend"),
    ],
)
def test_learning_section_errors(write_scenario, tiny, learning, expected):
    tiny["learning"].update(learning)
    assert expected in _problem(write_scenario, tiny)


def test_natural_partition_needs_an_owned_dataset(write_scenario, tiny, tmp_path):
    tiny["devices"]["groups"][0].pop("n_samples")
    tiny["learning"]["partition"] = {"kind": "natural"}
    path = write_scenario(tiny)
    assert main(["simulate", str(path), "--out", str(tmp_path / "r"), "--quiet"]) == 2
    assert not (tmp_path / "r").exists()  # refused before anything is written


def test_missing_dataset_files_exit_2_with_one_line(write_scenario, tiny, tmp_path, capsys):
    tiny["learning"].update(dataset="mnist", data_root=str(tmp_path), model="mlp_64_30")
    assert main(["simulate", str(write_scenario(tiny)), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: mnist:") and "train-images-idx3-ubyte" in err
    assert len(err.splitlines()) == 1


def test_resolved_scenario_round_trips_with_steps_and_time_evaluation(write_scenario, tiny):
    tiny["learning"].pop("local_epochs")
    tiny["learning"].update(local_steps=30, eval_every_s=60)
    scenario = load_scenario(write_scenario(tiny))
    assert scenario.learning is not None
    assert scenario.learning.local_epochs is None and scenario.learning.eval_every_rounds is None
    again = load_scenario(write_scenario(dump_scenario(scenario), "resolved.yaml"))
    assert again == scenario


def test_resolved_scenario_fills_dataset_params(write_scenario, tiny):
    tiny["learning"].update(dataset="synthetic", dataset_params={"alpha": 0.5})
    scenario = load_scenario(write_scenario(tiny))
    assert scenario.learning is not None
    assert scenario.learning.dataset_params["beta"] == 1.0
    assert scenario.learning.dataset_params["alpha"] == 0.5


@pytest.mark.parametrize(
    ("learning", "expected"),
    [
        ({"data_root": "/no/such/folder"}, "learning.data_root: the digits dataset reads no"),
        ({"bf16": True, "device": "auto"}, "learning.bf16: no CUDA device"),
    ],
)
def test_settings_without_effect_are_one_line_warnings(
    write_scenario, tiny, tmp_path, capsys, learning, expected
):
    """A setting the run cannot use is said once, on one line, and the run goes on."""
    import torch

    if "bf16" in learning and torch.cuda.is_available():
        pytest.skip("this machine has CUDA: bf16 applies")
    tiny["learning"].update(learning)
    tiny["fl"]["rounds"] = 1
    path = write_scenario(tiny)
    assert main(["simulate", str(path), "--out", str(tmp_path / "r"), "--quiet"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning")]
    assert len(warned) == 1 and expected in warned[0]
