"""The learner: the server-side view of real training that the FL protocol drives.

The protocol asks ``local_update(round, clients)`` for the clients whose updates it will
use, then ``aggregate`` with the ones that arrived in time, then ``evaluate``. Simulated
time never depends on how long PyTorch took.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
from torch.nn import functional as F

from netfl.config.learning import LearningConfig
from netfl.learning.aggregation import fedavg
from netfl.learning.datasets import Dataset
from netfl.learning.models import count_parameters
from netfl.learning.trainer import LocalResult, LocalSGD, SequentialTrainer

BITS_PER_PARAMETER = 32  # fp32 on the air


@dataclass(frozen=True)
class Evaluation:
    accuracy: float
    loss: float


class Learner(Protocol):
    """What the FL protocol needs from the learning side."""

    @property
    def n_samples(self) -> np.ndarray: ...

    def lr_at(self, round: int) -> float: ...

    def local_update(self, round: int, clients: np.ndarray) -> LocalResult: ...

    def aggregate(self, result: LocalResult, arrived: np.ndarray) -> None: ...

    def evaluate(self) -> Evaluation: ...


class NullLearner:
    """``learning: none``: timing-only studies; no model, losses and accuracy are NaN."""

    def __init__(self, n_samples: np.ndarray) -> None:
        self._n_samples = np.asarray(n_samples, dtype=np.int64)

    @property
    def n_samples(self) -> np.ndarray:
        return self._n_samples

    def lr_at(self, round: int) -> float:
        return math.nan

    def local_update(self, round: int, clients: np.ndarray) -> LocalResult:
        nan = np.full(len(clients), np.nan)
        return LocalResult(np.asarray(clients), {}, self._n_samples[clients], nan, nan.copy())

    def aggregate(self, result: LocalResult, arrived: np.ndarray) -> None:
        return None

    def evaluate(self) -> Evaluation:
        return Evaluation(math.nan, math.nan)


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("learning.device is cuda but torch sees no CUDA device")
    return torch.device(name)


class TorchLearner:
    """FedAvg with real local SGD on an in-memory dataset."""

    def __init__(
        self,
        config: LearningConfig,
        dataset: Dataset,
        client_indices: list[np.ndarray],
        model: torch.nn.Module,
        device: torch.device,
        seed: int,
    ) -> None:
        self.config = config
        self.device = device
        self.data = dataset.to(device)
        self.client_indices = [torch.as_tensor(ix, device=device) for ix in client_indices]
        self._n_samples = np.array([len(ix) for ix in client_indices], dtype=np.int64)
        self.model = model.to(device)
        self.n_parameters = count_parameters(self.model)
        self.model_size_bits = float(self.n_parameters * BITS_PER_PARAMETER)
        self.global_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        self.trainer = SequentialTrainer(self.model, device)
        self._seed = np.random.SeedSequence(seed)

    @property
    def n_samples(self) -> np.ndarray:
        return self._n_samples

    def lr_at(self, round: int) -> float:
        return self.config.lr * self.config.lr_decay**round

    def _client_seed(self, round: int, client: int) -> int:
        child = np.random.SeedSequence(self._seed.entropy, spawn_key=(round, client))
        return int(child.generate_state(1, np.uint64)[0] >> np.uint64(1))

    def local_update(self, round: int, clients: np.ndarray) -> LocalResult:
        clients = np.asarray(clients, dtype=np.int64)
        sgd = LocalSGD(self.lr_at(round), self.config.local_epochs, self.config.batch_size)
        states, means, stds = (
            self.trainer.train(
                self.global_state,
                self.data.x_train,
                self.data.y_train,
                [self.client_indices[c] for c in clients],
                [self._client_seed(round, int(c)) for c in clients],
                sgd,
            )
            if len(clients)
            else ({}, np.array([]), np.array([]))
        )
        return LocalResult(clients, states, self._n_samples[clients], means, stds)

    def aggregate(self, result: LocalResult, arrived: np.ndarray) -> None:
        """FedAvg over the clients of ``result`` flagged in the boolean mask ``arrived``."""
        if not np.any(arrived):
            return
        weights = torch.as_tensor(np.where(arrived, result.n_samples, 0), dtype=torch.float64)
        averaged = fedavg(result.states, weights)
        if averaged is not None:
            self.global_state = averaged

    @torch.no_grad()
    def evaluate(self) -> Evaluation:
        self.model.load_state_dict(self.global_state)
        self.model.eval()
        logits = self.model(self.data.x_test)
        loss = F.cross_entropy(logits, self.data.y_test).item()
        accuracy = (logits.argmax(dim=1) == self.data.y_test).double().mean().item()
        return Evaluation(accuracy, loss)
