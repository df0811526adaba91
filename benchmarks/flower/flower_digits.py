"""The Flower side of benchmarks/flower_vs_netfl.py: FedAvg on scikit-learn's digits in
Flower 1.42's simulation runtime, as a Flower user writes it (Message API, ``ClientApp``,
``ServerApp``, ``flwr.serverapp.strategy.FedAvg``, ``run_simulation`` on Ray).

The workload of netfl's benchmarks/flower/netfl_digits.yaml: 297 of the 1,797 images held
out (stratified), the other 1,500 split IID over 100 clients (15 each), 10 clients a round,
the MLP 64-64-10 with ReLU, one local epoch of batches of 32 at lr 0.1 (torch.optim.SGD),
the global model evaluated on the held-out images before the first round and after each
of the 100 rounds (``evaluate_fn``), no client-side evaluation. Flower is an optional
benchmark dependency: ``pip install "flwr[simulation]==1.42.*" scikit-learn torch``.

Usage: ``python benchmarks/flower/flower_digits.py [--rounds 100]`` (prints the last
round's accuracy). Telemetry is switched off (``FLWR_TELEMETRY_ENABLED=0``): the
benchmark machine has no network.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")

import numpy as np
import torch
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg
from flwr.simulation import run_simulation
from torch import nn
from torch.nn import functional as F

CLIENTS, PER_ROUND, BATCH, LR, TEST = 100, 10, 32, 0.1, 297
ROUNDS = [100]  # --rounds
ACCURACY: list[float] = []  # the server's evaluations, in order


def net() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))


def split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)
    return train_test_split(
        x, digits.target, test_size=TEST, stratify=digits.target, random_state=0
    )


def partition(pid: int) -> tuple[torch.Tensor, torch.Tensor]:
    x_train, _, y_train, _ = split()
    rows = np.array_split(np.random.default_rng(0).permutation(len(y_train)), CLIENTS)[pid]
    return torch.from_numpy(x_train[rows]), torch.from_numpy(y_train[rows])


client_app = ClientApp()


@client_app.train()
def train(msg: Message, context: Context) -> Message:
    torch.set_num_threads(1)
    model = net()
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    x, y = partition(int(context.node_config["partition-id"]))
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    model.train()
    for rows in torch.randperm(len(y)).split(BATCH):
        optimizer.zero_grad()
        F.cross_entropy(model(x[rows]), y[rows]).backward()
        optimizer.step()
    content = RecordDict(
        {
            "arrays": ArrayRecord(model.state_dict()),
            "metrics": MetricRecord({"num-examples": len(y)}),
        }
    )
    return Message(content=content, reply_to=msg)


def central_evaluation(server_round: int, arrays: ArrayRecord) -> MetricRecord:
    _, x_test, _, y_test = split()
    model = net()
    model.load_state_dict(arrays.to_torch_state_dict())
    model.eval()
    with torch.no_grad():
        logits = model(torch.from_numpy(x_test))
        target = torch.from_numpy(y_test)
        loss = float(F.cross_entropy(logits, target))
        accuracy = float((logits.argmax(1) == target).float().mean())
    ACCURACY.append(accuracy)
    return MetricRecord({"accuracy": accuracy, "loss": loss})


server_app = ServerApp()


@server_app.main()
def main(grid: Grid, context: Context) -> None:
    torch.manual_seed(0)
    strategy = FedAvg(
        fraction_train=PER_ROUND / CLIENTS,
        fraction_evaluate=0.0,
        min_train_nodes=PER_ROUND,
        min_available_nodes=CLIENTS,
    )
    strategy.start(
        grid=grid,
        initial_arrays=ArrayRecord(net().state_dict()),
        num_rounds=ROUNDS[0],
        evaluate_fn=central_evaluation,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    ROUNDS[0] = parser.parse_args().rounds
    run_simulation(
        server_app=server_app,
        client_app=client_app,
        num_supernodes=CLIENTS,
        backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}},
    )
    print(f"accuracy {ACCURACY[-1]:.4f} after {len(ACCURACY) - 1} rounds")
