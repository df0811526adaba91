"""Build a :class:`TorchLearner` from the scenario's ``learning`` section."""

from __future__ import annotations

import warnings

import numpy as np
import torch

from netfl.config.fl import AggregationConfig
from netfl.config.learning import LearningConfig
from netfl.errors import ScenarioError, ScenarioWarning
from netfl.learning import EMBEDDED_DATASETS, is_plugin
from netfl.learning.aggregation.aggregator import Aggregator
from netfl.learning.datasets import Dataset
from netfl.learning.learner import TorchLearner, pick_device
from netfl.learning.partition import Partition, PartitionError, partition
from netfl.registry import aggregations, datasets, models
from netfl.rng import Streams


def prepare_data(
    config: LearningConfig,
    n_clients: int,
    sizes: np.ndarray | None,
    streams: Streams,
    dataset: Dataset | None = None,
) -> tuple[Dataset, Partition]:
    """Load the dataset (unless given, already loaded from the ``learning.split`` stream)
    and partition it (the part of :func:`build_learner` that can refuse a scenario;
    ``netfl validate`` runs it too); raise ScenarioError/DatasetError."""
    if dataset is None:
        dataset = load_dataset(config, streams.get("learning.split"), n_clients)
    labels = dataset.y_train.numpy()
    if sizes is not None and config.partition.kind == "iid" and np.any(sizes > len(labels)):
        raise ScenarioError.single(
            "devices.groups.n_samples",
            f"a device was given {int(sizes.max())} samples but the {config.dataset} training"
            f" set has only {len(labels)}",
        )
    try:
        parts = partition(
            config.partition,
            labels,
            n_clients,
            sizes,
            streams.get("learning.partition"),
            owners=(dataset.train_owner, dataset.test_owner),
        )
    except PartitionError as exc:
        raise ScenarioError.single("learning.partition", str(exc)) from None
    return dataset, parts


def build_learner(
    config: LearningConfig,
    n_clients: int,
    sizes: np.ndarray | None,
    streams: Streams,
    aggregation: AggregationConfig | None = None,
) -> TorchLearner:
    """Load the dataset, partition it among ``n_clients`` (``sizes``: the samples each
    device asks for, ``devices.groups[].n_samples``, or None), build the model and the
    server's aggregation rule (FedAvg by default); raise ScenarioError/DatasetError."""
    dataset, parts = prepare_data(config, n_clients, sizes, streams)
    torch_seed = streams.torch_seed("learning.torch")
    if is_plugin(config.model):  # registered models pass check_model in the tests
        model_problem(config, dataset)
    torch.manual_seed(torch_seed)
    try:
        model = models().load(config.model)(dataset.input_shape, dataset.n_classes)
    except ValueError as exc:
        raise ScenarioError.single("learning.model", str(exc)) from None
    device = training_device(config)
    _warn_ignored(config, device)
    _check_dense(config, model)
    if config.threads is not None:
        # On every device: a CUDA run's host side (plans, SimPy, strategies) also spins
        # torch's intra-op threads, and N runs of a sweep share the host's cores.
        torch.set_num_threads(config.threads)
    aggregation = aggregation or AggregationConfig()
    aggregator = Aggregator(
        aggregations().load(aggregation.name),
        aggregation.params,
        [name for name, _ in model.named_parameters()],
    )
    return TorchLearner(config, dataset, parts, model, device, torch_seed, aggregator)


def training_device(config: LearningConfig) -> torch.device:
    """The device the run trains on; raise ScenarioError naming ``learning.device`` (cuda
    without CUDA) or ``learning.bf16`` (a GPU without bf16)."""
    try:
        device = pick_device(config.device)
    except RuntimeError as exc:
        raise ScenarioError.single("learning.device", str(exc)) from exc
    if config.bf16 and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ScenarioError.single(
            "learning.bf16",
            f"the GPU ({torch.cuda.get_device_name(device)}) has no bf16 arithmetic;"
            " set learning.bf16: false",
        )
    return device


def load_dataset(config: LearningConfig, rng: np.random.Generator, n_clients: int) -> Dataset:
    """The scenario's dataset; a plug-in's is checked against the contract
    (:func:`~netfl.learning.check.check_dataset`, loaded once) and refused naming
    ``learning.dataset``."""
    loader = datasets().load(config.dataset)
    if not is_plugin(config.dataset):
        return loader(config, rng, n_clients)
    from netfl.learning.check import DatasetCheckError, check_dataset

    try:
        return check_dataset(loader, config, n_clients, rng=lambda: rng, repeat=False)
    except DatasetCheckError as exc:
        raise ScenarioError.single("learning.dataset", f"'{config.dataset}' {exc}") from None


def model_problem(config: LearningConfig, dataset: Dataset) -> None:
    """Check the scenario's model against the contract on ``dataset``'s shapes
    (:func:`~netfl.learning.check.check_model`); raise ScenarioError naming
    ``learning.model``."""
    from netfl.learning.check import ModelCheckError, check_model

    try:
        check_model(
            models().load(config.model),
            dataset.input_shape,
            dataset.n_classes,
            backend=config.backend,
        )
    except ModelCheckError as exc:
        raise ScenarioError.single("learning.model", f"'{config.model}' {exc}") from None


def _check_dense(config: LearningConfig, model: torch.nn.Module) -> None:
    """``learning.backend: dense`` needs a Flatten/Linear/ReLU stack: say why not."""
    if config.backend != "dense":
        return
    from netfl.learning.dense import dense_layers

    why = dense_layers(model)
    if isinstance(why, str):
        raise ScenarioError.single(
            "learning.backend",
            f"dense takes stacks of Linear and ReLU layers, and the model '{config.model}'"
            f" is not one: {why}; use batched or sequential",
        )


def _warn_ignored(config: LearningConfig, device: torch.device) -> None:
    """Say so when a setting has no effect, rather than ignore it silently."""
    if config.data_root is not None and config.dataset in EMBEDDED_DATASETS:
        warnings.warn(
            f"learning.data_root: the {config.dataset} dataset reads no files; the folder is"
            " not used",
            ScenarioWarning,
            stacklevel=3,
        )
    if config.bf16 and device.type != "cuda":
        warnings.warn(
            f"learning.bf16: no CUDA device (training on {device.type}), so training runs in fp32",
            ScenarioWarning,
            stacklevel=3,
        )
