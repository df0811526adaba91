"""The learner: the server-side view of real training that the FL protocol drives.

The protocol asks ``local_update(round, clients)`` for the clients whose updates it will
use, then ``aggregate`` with the ones that arrived in time, then ``evaluate``. Simulated
time never depends on how long PyTorch took: the device model takes the work of a local
update from ``update_samples``.

A strategy declares the learning signals it needs (``Strategy.requires``) and the
learner computes only those. How the server serves each signal:

- ``local_loss``: always in the result, ``loss_mean``/``loss_std`` (UCB-CS eqs. 5, 7;
  the server passes the std as ``feedback.signals["local_loss_std"]``);
- ``update_vector``: ``local_update(..., want=wants_for(strategy.requires))`` adds
  w_local - w_global (GPFL, NCCB; also for polled clients, whose result is then simply
  not aggregated), and ``global_update()`` after ``aggregate`` gives w^t - w^{t-1};
- ``poll_loss``: ``client_losses(candidates)``, the current global model's loss on each
  candidate's data (pow-d polling);
- ``data_context``: ``client_columns()["label_counts"]``, the label histograms.

``client_test_losses()`` gives every client's test loss (fairness, UCB-CS eq. 3).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from netfl.config.learning import LearningConfig
from netfl.learning.aggregation.aggregator import Aggregator
from netfl.learning.aggregation.fedavg import fedavg
from netfl.learning.datasets import Dataset
from netfl.learning.divergence import nonfinite_loss, nonfinite_tensor
from netfl.learning.evaluation import (
    group_means,
    mixture_losses,
    per_sample_losses,
)
from netfl.learning.interface import (
    WANTS,
    EvalSchedule,
    Evaluation,
    Learner,
    LocalResult,
    NullLearner,
    check_wants,
    wants_for,
)
from netfl.learning.models import count_parameters
from netfl.learning.partition import Partition, label_counts
from netfl.learning.trainer import LocalSGD, SequentialTrainer, Trainer, local_path_norms
from netfl.learning.versions import ModelVersions, apply_updates

__all__ = [
    "WANTS",
    "EvalSchedule",
    "Evaluation",
    "Learner",
    "NullLearner",
    "TorchLearner",
    "wants_for",
]

BITS_PER_PARAMETER = 32  # fp32 on the air


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            "cuda, but torch sees no CUDA device (a CPU-only torch build, or no GPU);"
            " set auto or cpu"
        )
    return torch.device(name)


def make_trainer(config: LearningConfig, model: torch.nn.Module, device: torch.device) -> Trainer:
    """The backend's trainer; ``batched`` on CPU takes the dense path for every model it
    fits (:func:`netfl.learning.dense.dense_layers`); ``dense`` for a model it does not
    fit raises ValueError saying why."""
    if config.backend == "sequential":
        return SequentialTrainer(model, device)
    from netfl.learning.dense import DenseTrainer, dense_layers

    if config.backend == "dense" or (
        device.type == "cpu" and not isinstance(dense_layers(model), str)
    ):
        return DenseTrainer(model, device)
    from netfl.learning.batched import BatchedTrainer
    from netfl.learning.capture import cuda_graph

    on_gpu = device.type == "cuda"
    return BatchedTrainer(
        model,
        device,
        config.max_parallel_clients,
        bf16=config.bf16 and on_gpu,
        capture=cuda_graph if on_gpu and config.cuda_graphs else None,
    )


class TorchLearner:
    """Real local SGD on an in-memory dataset and the server's aggregation rule (FedAvg
    unless ``aggregator`` says otherwise)."""

    def __init__(
        self,
        config: LearningConfig,
        dataset: Dataset,
        partition: Partition | list[np.ndarray],
        model: torch.nn.Module,
        device: torch.device,
        seed: int,
        aggregator: Aggregator | None = None,
    ) -> None:
        if not isinstance(partition, Partition):
            partition = Partition(list(partition))
        self.config = config
        self.device = device
        self.data = dataset.to(device)
        self.partition = partition
        # Row ids stay on the host: trainers build their minibatch plans there and move
        # them to the device once per round (no device-to-host copies).
        self.client_indices = [torch.as_tensor(ix, dtype=torch.int64) for ix in partition.train]
        self._n_samples = partition.sizes
        self.label_counts = label_counts(
            dataset.y_train.numpy(), partition.train, dataset.n_classes
        )
        self.model = model.to(device)
        self.param_names = [name for name, _ in self.model.named_parameters()]
        self.n_parameters = count_parameters(self.model)
        self.model_size_bits = float(self.n_parameters * BITS_PER_PARAMETER)
        self.global_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        self._previous_state = self.global_state
        self.trainer = make_trainer(config, self.model, device)
        self._seed = np.random.SeedSequence(seed)
        self.versions = ModelVersions(len(self._n_samples))
        self.aggregator = aggregator or Aggregator(param_names=self.param_names)
        #: Local updates run back to back in one job (HierFAVG's kappa_1; 1 otherwise).
        self.local_repeats = 1
        #: A non-finite training loss among the updates aggregated so far (None: none).
        self._diverged: str | None = None

    @property
    def n_samples(self) -> np.ndarray:
        return self._n_samples

    @property
    def training_path(self) -> str:
        """Which loop trained (summary.json): the trainer's ``path``."""
        return self.trainer.path

    @property
    def update_samples(self) -> np.ndarray:
        """Training samples one local update processes, per client (E n_k or tau min(b, n_k))."""
        return self.sgd(0, repeats=1).samples_processed(self._n_samples)

    def lr_at(self, round: int) -> float:
        """lr * decay^round * factor^(milestones passed) (UCB-CS: halved at 300 and 600)."""
        config = self.config
        passed = sum(1 for m in config.lr_milestones if round >= m)
        return config.lr * config.lr_decay**round * config.lr_milestone_factor**passed

    def sgd(self, round: int, repeats: int | None = None) -> LocalSGD:
        """Local SGD of one job: ``repeats`` local updates (default ``local_repeats``)
        back to back, as one longer run (momentum carries over)."""
        config = self.config
        k = self.local_repeats if repeats is None else repeats
        return LocalSGD(
            lr=self.lr_at(round),
            epochs=(config.local_epochs or 1) * k,  # unused with local steps
            batch_size=config.batch_size,
            steps=None if config.local_steps is None else config.local_steps * k,
            momentum=config.momentum,
            weight_decay=config.weight_decay,
            prox_mu=config.prox_mu,
        )

    def _client_seed(self, round: int, client: int, *repeat: int) -> int:
        """Local SGD's seed of ``client`` in ``round`` (or on global version ``round``;
        ``repeat`` tells apart a second update of a client on the same version)."""
        child = np.random.SeedSequence(self._seed.entropy, spawn_key=(round, client, *repeat))
        return int(child.generate_state(1, np.uint64)[0] >> np.uint64(1))

    def local_update(
        self,
        round: int,
        clients: np.ndarray,
        want: frozenset[str] = frozenset(),
        steps: np.ndarray | None = None,
    ) -> LocalResult:
        """Train ``clients`` from the global model: each its full local update, or the
        first ``steps[k]`` SGD steps of it (partial work)."""
        check_wants(want)
        clients = np.asarray(clients, dtype=np.int64)
        if len(clients) == 0:
            empty = np.array([])
            vectors = np.zeros((0, self.n_parameters), np.float32) if want else None
            return LocalResult(clients, {}, self._n_samples[clients], empty, empty, vectors)
        sgd = self.sgd(round)
        states, means, stds = self.trainer.train(
            self.global_state,
            self.data.x_train,
            self.data.y_train,
            [self.client_indices[c] for c in clients],
            [self._client_seed(round, int(c)) for c in clients],
            sgd,
            None if steps is None else [int(s) for s in steps],
        )
        n = self._n_samples[clients]
        result = LocalResult(clients, states, n, means, stds)
        self._note_steps(result, sgd, steps)
        if "update_vector" in want:
            result.update_vectors = self._update_vectors(states)
            assert result.steps is not None
            result.update_scale = sgd.lr * result.steps.astype(float)
        return result

    def _note_steps(self, result: LocalResult, sgd: LocalSGD, steps: np.ndarray | None) -> None:
        """The steps each client took and, for FedNova, their ||a_k||_1."""
        full = sgd.steps_taken(result.n_samples)
        result.steps = full if steps is None else np.minimum(np.asarray(steps, np.int64), full)
        if self.aggregator.uses_norms:
            result.path_norms = local_path_norms(sgd, result.steps)

    # -- asynchronous protocols: clients train on the version they downloaded ----------

    def start_update(self, version: int, client: int) -> None:
        """``client`` downloaded the current global model, which is ``version``."""
        self.versions.start(version, client, self.global_state)

    def finish_update(self, client: int) -> LocalResult:
        """The client's local update from the version it downloaded (one row); trained
        with every other client started on that version and not trained yet."""
        return self.versions.finish(client, self._train_from)[1]

    def cancel_update(self, client: int) -> None:
        """The client left before its update arrived."""
        self.versions.cancel(client)

    def note_steps(self, client: int, steps: int) -> None:
        """Partial work: the client in flight will have done ``steps`` local steps."""
        self.versions.note_steps(client, steps)

    def apply_updates(
        self,
        results: list[LocalResult],
        versions: list[int],
        coefficients: np.ndarray,
        relative_to: str,
    ) -> None:
        """w <- w + sum_i c_i (w_i - b_i), b_i the downloaded version (``"download"``) or
        the current model (``"current"``); then release the updates' versions."""
        self._previous_state = self.global_state
        if relative_to == "download":
            bases = [self.versions.base(v) for v in versions]
        else:
            bases = [self.global_state] * len(results)
        trained = [i for i, r in enumerate(results) if r.states]
        for i in trained:
            self._diverged = self._diverged or nonfinite_loss(results[i])
        if trained and self._diverged is None:
            proposed = apply_updates(
                self.global_state,
                [results[i] for i in trained],
                [bases[i] for i in trained],
                np.asarray(coefficients)[trained],
            )
            self.global_state = self.aggregator.apply(self.global_state, proposed)
        self.versions.release(versions)

    # -- hierarchical FL: edge models ---------------------------------------------------

    def model_state(self) -> dict[str, torch.Tensor]:
        """The global model (an edge's model while the server works on that edge)."""
        return self.global_state

    def load_model_state(self, state: dict[str, torch.Tensor] | None) -> None:
        if state is not None:
            self.global_state = self._previous_state = state

    def average_states(
        self, states: list[dict[str, torch.Tensor]], weights: np.ndarray
    ) -> dict[str, torch.Tensor] | None:
        """FedAvg of whole models (the cloud averaging the edges), weights >= 0."""
        stacked = {k: torch.stack([s[k] for s in states]) for k in states[0]}
        return fedavg(stacked, torch.as_tensor(np.asarray(weights), dtype=torch.float64))

    def _train_from(
        self,
        state: dict[str, torch.Tensor],
        version: int,
        clients: np.ndarray,
        keys: list,
        steps: np.ndarray | None = None,
    ) -> LocalResult:
        sgd = self.sgd(version)
        states, means, stds = self.trainer.train(
            state,
            self.data.x_train,
            self.data.y_train,
            [self.client_indices[c] for c in clients],
            [self._client_seed(*key) for key in keys],
            sgd,
            None if steps is None else [int(s) for s in steps],
        )
        result = LocalResult(clients, states, self._n_samples[clients], means, stds)
        self._note_steps(result, sgd, steps)
        return result

    def _update_vectors(self, states: dict[str, torch.Tensor]) -> np.ndarray:
        """w_local - w_global over the parameters (not batch-norm statistics), flattened."""
        parts = [
            (states[name] - self.global_state[name].unsqueeze(0)).flatten(1)
            for name in self.param_names
        ]
        return torch.cat(parts, dim=1).float().cpu().numpy()

    def aggregate(self, result: LocalResult, arrived: np.ndarray) -> None:
        """The aggregation rule (FedAvg by default) over the clients of ``result`` flagged
        in the boolean mask ``arrived``."""
        self._previous_state = self.global_state
        if not np.any(arrived):
            return
        self._diverged = self._diverged or nonfinite_loss(result, arrived)
        if self._diverged is not None:
            return  # no model to aggregate: the run stops at the end of this round
        weights = torch.as_tensor(np.where(arrived, result.n_samples, 0), dtype=torch.float64)
        norms = None if result.path_norms is None else torch.as_tensor(result.path_norms)
        aggregated = self.aggregator.aggregate(self.global_state, result.states, weights, norms)
        if aggregated is not None:
            self.global_state = aggregated

    def global_update(self) -> np.ndarray:
        """w^t - w^{t-1} over the parameters, flattened: what the last ``aggregate`` changed
        (GPFL's aggregated update g^t, Na et al. 2024 eq. (1)); zeros if nothing."""
        parts = [
            (self.global_state[name] - self._previous_state[name]).flatten()
            for name in self.param_names
        ]
        return torch.cat(parts).float().cpu().numpy()

    def evaluate(self) -> Evaluation:
        """Accuracy and mean loss on the test set (+ per-client losses if configured)."""
        losses, correct = per_sample_losses(
            self.model, self.global_state, self.data.x_test, self.data.y_test
        )
        client_loss = None
        if self.config.fairness_loss == "train":
            client_loss = self.client_losses(np.arange(len(self._n_samples)))
        elif self.config.fairness_loss == "test":
            client_loss = self._test_losses(losses)
        return Evaluation(
            float(correct.double().mean()), float(losses.double().mean()), client_loss
        )

    def divergence(self) -> str | None:
        """Why training cannot go on: a client aggregated since the start with a
        non-finite local training loss (its update was not aggregated), or a parameter or
        buffer of the global model that is not finite; None while all is finite. One
        device synchronisation per call (the server calls it once a round)."""
        return self._diverged or nonfinite_tensor(self.global_state)

    def client_losses(self, clients: np.ndarray) -> np.ndarray:
        """F_k(w): mean loss of the global model on each client's training data (NaN if none)."""
        clients = np.asarray(clients, dtype=np.int64)
        if len(clients) == 0:
            return np.array([])
        rows = torch.cat([self.client_indices[c] for c in clients]).to(self.device)
        owner = torch.repeat_interleave(
            torch.arange(len(clients), device=self.device),
            torch.as_tensor(self._n_samples[clients], device=self.device),
        )
        losses, _ = per_sample_losses(
            self.model, self.global_state, self.data.x_train[rows], self.data.y_train[rows]
        )
        return group_means(losses, owner, len(clients))

    def client_test_losses(self) -> np.ndarray:
        """Every client's test loss of the global model (see :meth:`_test_losses`)."""
        losses, _ = per_sample_losses(
            self.model, self.global_state, self.data.x_test, self.data.y_test
        )
        return self._test_losses(losses)

    def _test_losses(self, losses: torch.Tensor) -> np.ndarray:
        """Per client: mean loss on its own test rows where the dataset has them (natural
        partition), else the test set's per-class losses weighted by its label mix."""
        n_clients = len(self._n_samples)
        if self.partition.test is not None:
            rows = np.concatenate(self.partition.test)
            owner = np.repeat(np.arange(n_clients), [len(t) for t in self.partition.test])
            return group_means(
                losses[torch.as_tensor(rows, device=losses.device, dtype=torch.int64)],
                torch.as_tensor(owner, device=losses.device),
                n_clients,
            )
        class_loss = group_means(losses, self.data.y_test, self.data.n_classes)
        return mixture_losses(class_loss, self.label_counts)

    def client_columns(self) -> dict[str, Any]:
        """Extra clients.parquet columns: each client's label histogram, and its data
        cluster where the partition makes clusters (``data_cluster``)."""
        columns: dict[str, Any] = {"label_counts": self.label_counts}
        if self.partition.cluster is not None:
            columns["data_cluster"] = self.partition.cluster
        return columns

    def checkpoint_state(self) -> dict[str, Any]:
        """What a round boundary's checkpoint keeps: the global model (a copy, on the host)
        and the aggregation rule's state (server momentum, second moments).

        Nothing else carries over between rounds: local SGD (and its momentum) starts
        afresh each round from per-(round, client) seeds, and ``aggregate`` sets the
        previous model that ``global_update`` compares with. Under an asynchronous
        protocol the versions clients in flight trained from, and their trained updates,
        carry over too.
        """
        return {
            "global_state": {k: v.detach().cpu().clone() for k, v in self.global_state.items()},
            "versions": self.versions.snapshot(),
            "aggregation": self.aggregator.snapshot(),
        }

    def restore_state(self, state: dict[str, Any]) -> None:
        """Continue from a checkpoint's :meth:`checkpoint_state`."""
        self.global_state = {k: v.to(self.device) for k, v in state["global_state"].items()}
        self._previous_state = self.global_state
        if "versions" in state:
            self.versions.restore(state["versions"], self.device)
        self.aggregator.restore(state.get("aggregation", {}), self.device)
