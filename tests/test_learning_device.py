"""Training devices on any machine (issue 32 items 3 and 5): the refusals a CPU can check,
the GPU memory estimate against what the batched trainer keeps, and which loop trained.

A CUDA machine runs tests/test_gpu.py besides (the graphs, bf16, the estimate against
torch.cuda's memory statistics).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from netfl.cli import main
from netfl.config.learning import LearningConfig
from netfl.errors import ScenarioError
from netfl.learning.batched import BatchedTrainer
from netfl.learning.build import training_device
from netfl.learning.gpu_memory import CONTEXT_BYTES, activation_bytes, count_saved
from netfl.learning.models import fedcs_cifar_cnn, rbcsf_fmnist_cnn
from netfl.scenario import load_scenario
from netfl.sweep import gpu
from netfl.validation import scenario_gpu_memory

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without CUDA")
GiB = 2**30


@no_cuda
@pytest.mark.parametrize("command", ["simulate", "validate"])
def test_cuda_without_cuda_is_refused_naming_the_key(command, tmp_path, capsys):
    args = [command, "quickstart", "--set", "learning.device=cuda"]
    if command == "simulate":
        args += ["--quiet", "--out", str(tmp_path / "run")]
    assert main(args) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: <built-in quickstart>: learning.device: cuda, but torch sees")


def test_bf16_on_a_gpu_without_bf16_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: False)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *args: "Tesla V100")
    with pytest.raises(ScenarioError) as caught:
        training_device(LearningConfig(device="cuda", bf16=True))
    (problem,) = caught.value.problems
    assert problem.key == "learning.bf16"
    assert "Tesla V100" in problem.message and "bf16: false" in problem.message


def _sweep_file(tmp_path: Path, device: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(
        f"base: quickstart\noverrides: {{fl.rounds: 1, learning.device: {device}}}\nseeds: 3\n"
    )
    return path


def test_a_sweep_whose_runs_cannot_share_the_gpu_is_refused(tmp_path, monkeypatch, capsys):
    """A GPU with 2 GiB free, runs of 0.9 GiB: two fit, three are refused before any run."""
    room = gpu.GpuRoom("Fake GPU", 2 * GiB, [int(0.9 * GiB)])
    monkeypatch.setattr(gpu, "has_nvidia_driver", lambda: True)
    monkeypatch.setattr(gpu, "_probe_in_a_process", lambda set_ups: room)
    out = tmp_path / "sweep"
    assert main(["sweep", str(_sweep_file(tmp_path, "auto")), "--jobs", "3", "--out", str(out)])
    error = capsys.readouterr().err.strip()
    assert error == (
        "error: --jobs 3: 3 runs training on one GPU (Fake GPU) need about 2.7 GiB (0.90 GiB"
        " each, as `netfl validate --print` details), but it has 2.0 GiB free: use --jobs 2"
        " or fewer (learning.max_parallel_clients or learning.bf16 make a run need less)"
    )
    assert not out.exists()
    assert gpu.jobs_problem(2, int(0.9 * GiB), room) is None


def test_distinct_set_ups_are_estimated_once():
    runs = [{"seed": s, "name": "a", "learning": {"device": "auto"}} for s in range(8)]
    assert len(gpu._distinct(runs)) == 1
    assert len(gpu._distinct([*runs, {"seed": 1, "learning": {"device": "cuda"}}])) == 2


@no_cuda
@pytest.mark.slow
def test_a_cuda_sweep_without_cuda_is_refused(tmp_path, capsys):
    """The real probe, in a spawned process, finds no CUDA device."""
    assert main(["sweep", str(_sweep_file(tmp_path, "cuda")), "--out", str(tmp_path / "o")]) == 2
    assert "learning.device is cuda, but torch sees no CUDA device" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("build", "shape", "bf16"),
    [(rbcsf_fmnist_cnn, (1, 28, 28), False), (fedcs_cifar_cnn, (3, 16, 16), True)],
)
def test_the_step_estimate_counts_what_the_trainer_keeps(build, shape, bf16):
    """The estimate's activations (two clients, halved) times K against the bytes the
    batched trainer's loss keeps for the backward with K = 5 clients (CPU count)."""
    torch.manual_seed(0)
    model = build(shape, 10)
    clients, width = 5, 8
    config = LearningConfig(batch_size=width, bf16=bf16)
    per_client, _ = activation_bytes(model, shape, width, config)
    trainer = BatchedTrainer(model, torch.device("cpu"), bf16=bf16, vectorize_convolutions=True)
    state = model.state_dict()
    stacked = {n: v.unsqueeze(0).repeat((clients,) + (1,) * v.dim()) for n, v in state.items()}
    params = {n: stacked[n].requires_grad_(True) for n in trainer.param_names}
    buffers = {n: v for n, v in stacked.items() if n not in params}
    x = torch.randn(clients, width, *shape)
    y = torch.zeros(clients, width, dtype=torch.int64)
    zeros = torch.zeros(clients, dtype=torch.int64)
    kept = count_saved(
        lambda: trainer.loss(params, buffers, x, y, torch.ones(clients, width), zeros, zeros)
    )
    assert kept == pytest.approx(clients * per_client, rel=0.05)


def test_the_run_estimate_grows_with_what_a_run_holds():
    base = load_scenario("quickstart", [])
    memory = scenario_gpu_memory(base)
    assert memory.context == CONTEXT_BYTES
    assert memory.clients == base.fl.selection_budget == 5
    assert memory.data == 1797 * (64 * 4 + 8)  # digits: train and test, fp32 and int64
    more = scenario_gpu_memory(load_scenario("quickstart", ["fl.clients_per_round=10"]))
    assert more.step == pytest.approx(2 * memory.step, rel=1e-6)
    assert more.models > memory.models
    chunked = load_scenario(
        "quickstart", ["fl.clients_per_round=10", "learning.max_parallel_clients=5"]
    )
    assert scenario_gpu_memory(chunked).step == memory.step
    assert memory.fitting(10 * memory.total_bytes + 1) == 10


def test_validate_states_the_gpu_memory(capsys):
    assert main(["validate", "quickstart", "--print"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "GPU memory" in line]
    assert len(lines) == 1 and lines[0].startswith("# Estimated if trained on a GPU: ")
    assert "training step" in lines[0] and "5 clients x 10 samples in fp32" in lines[0]


@pytest.mark.parametrize(
    ("overrides", "path"),
    [
        (["learning.backend=sequential"], "sequential"),
        (["learning.model=tests.test_learning_dropout:dropout_mlp"], "batched, eager"),
        (["learning.model=tests.test_learning_dropout:dropout_cnn"], "batched, sequential loop"),
    ],
)
def test_the_summary_says_which_loop_trained(tmp_path, overrides, path):
    sets = [
        item for o in ["fl.rounds=2", "learning.device=cpu", *overrides] for item in ("--set", o)
    ]
    out = tmp_path / "run"
    assert main(["simulate", "quickstart", *sets, "--quiet", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["training_path"] == path
    assert summary["status"] == "completed"
