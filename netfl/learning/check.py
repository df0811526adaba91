"""``check_model`` and ``check_dataset``: the contracts a plug-in model or dataset must meet.

Modelled on Gymnasium's ``check_env`` (and :func:`netfl.selection.check.check_strategy`):
each check builds or loads the component the way the learner will, and raises one
:class:`ModelCheckError` or :class:`DatasetCheckError` whose message names the rule
broken and how to meet it. ``netfl validate`` runs both on the scenario's model and
dataset, so a wrong signature fails there in about a second, naming the key
(``learning.model``, ``learning.dataset``); the test suite runs them over every
registered model and dataset. The contracts, with a worked example, are in
``docs/extending.md``.

A model builder is ``build(input_shape, n_classes) -> torch.nn.Module``: ``input_shape``
is one sample's shape without the batch axis (``(1, 8, 8)`` for digits), ``n_classes``
the number of labels; the module maps a float32 batch ``(B, *input_shape)`` to logits
``(B, n_classes)`` (the learner applies the cross-entropy) and draws its initial weights
from torch's global generator, which the learner seeds.

A dataset loader is ``load(config, rng, n_clients) -> Dataset``
(:class:`netfl.learning.datasets.Dataset`, most easily made with
:func:`netfl.learning.datasets.from_numpy`): ``config`` is the scenario's ``learning``
section, ``rng`` a :class:`numpy.random.Generator` that must be the loader's only
source of randomness, ``n_clients`` the population size.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from netfl.config.learning import LearningConfig
from netfl.errors import NetflError
from netfl.learning.datasets import Dataset

MODEL_SIGNATURE = "build(input_shape, n_classes) -> torch.nn.Module"
DATASET_SIGNATURE = "load(config, rng, n_clients) -> netfl.learning.datasets.Dataset"
#: Samples per fake client in the one-step training check, and the fake clients.
_CHECK_SAMPLES, _CHECK_CLIENTS = 3, 2


class ModelCheckError(AssertionError):
    """A model builder broke the model contract (the message names the rule)."""


class DatasetCheckError(AssertionError):
    """A dataset loader broke the dataset contract (the message names the rule)."""


def _signature_rule(call: Callable[..., Any], args: tuple[Any, ...], contract: str) -> str | None:
    """Why ``call`` cannot take ``args`` positionally (its signature shown), or None."""
    try:
        signature = inspect.signature(call)
    except (TypeError, ValueError):  # a builtin without a signature: let the call decide
        return None
    try:
        signature.bind(*args)
    except TypeError:
        return f"must be callable as {contract}; its signature is {signature}"
    return None


def _raised(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def check_model(
    build: Callable[..., Any],
    input_shape: tuple[int, ...],
    n_classes: int,
    *,
    backend: str = "batched",
    seed: int = 0,
) -> nn.Module:
    """Check a model builder against the contract; return the model it built.

    Rules, in order: ``build(input_shape, n_classes)`` is a valid call; it returns a
    ``torch.nn.Module`` with trainable float32 parameters; a float32 batch of shape
    ``(B, *input_shape)`` gives finite logits of shape ``(B, n_classes)``; two builds
    under the same torch seed are identical; one step of local SGD on two clients runs
    through ``backend``'s trainer (the batched one runs clients under ``torch.func.vmap``,
    which refuses data-dependent control flow and shapes). Torch's global random state is
    restored afterwards.

    Raises
    ------
    ModelCheckError
        Naming the rule broken.
    """
    why = _signature_rule(build, (input_shape, n_classes), MODEL_SIGNATURE)
    if why:
        raise ModelCheckError(why)
    with torch.random.fork_rng(devices=[]):
        model = _built(build, input_shape, n_classes, seed)
        built = {k: v.detach().clone() for k, v in model.state_dict().items()}
        _check_parameters(model)
        twin = _built(build, input_shape, n_classes, seed)
        _check_same_build(built, twin.state_dict())
        x = torch.randn(_CHECK_CLIENTS * _CHECK_SAMPLES, *input_shape)
        _check_output(model, x, n_classes)
        _check_training(twin, x, n_classes, backend)
    return model


def _built(
    build: Callable[..., Any], input_shape: tuple[int, ...], n_classes: int, seed: int
) -> nn.Module:
    torch.manual_seed(seed)
    try:
        model = build(input_shape, n_classes)
    except Exception as exc:
        raise ModelCheckError(
            f"building it for input_shape={input_shape}, n_classes={n_classes} raised"
            f" {_raised(exc)}"
        ) from exc
    if not isinstance(model, nn.Module):
        raise ModelCheckError(
            f"returned a {type(model).__name__}; it must return a torch.nn.Module"
            f" ({MODEL_SIGNATURE})"
        )
    return model


def _check_parameters(model: nn.Module) -> None:
    trainable = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    if not trainable:
        raise ModelCheckError("has no trainable parameters (nothing for local SGD to train)")
    for name, parameter in trainable:
        if parameter.dtype != torch.float32:
            raise ModelCheckError(
                f"parameter {name} is {parameter.dtype}; netfl trains float32 parameters"
                " (bf16 only as autocast, learning.bf16)"
            )


def _check_output(model: nn.Module, x: torch.Tensor, n_classes: int) -> None:
    model.train()
    try:
        with torch.no_grad():
            logits = model(x)
    except Exception as exc:
        raise ModelCheckError(
            f"its forward pass on a float32 batch of shape {tuple(x.shape)} raised"
            f" {_raised(exc)} (does the model fit the dataset's input shape"
            f" {tuple(x.shape[1:])}?)"
        ) from exc
    if not isinstance(logits, torch.Tensor):
        raise ModelCheckError(
            f"its forward pass returned a {type(logits).__name__}; it must return a tensor"
            " of logits"
        )
    expected = (len(x), n_classes)
    if tuple(logits.shape) != expected:
        raise ModelCheckError(
            f"a batch of {len(x)} gives outputs of shape {tuple(logits.shape)}; it must give"
            f" one logit per class, {expected} (n_classes comes from the dataset)"
        )
    if not logits.dtype.is_floating_point:
        raise ModelCheckError(f"its outputs are {logits.dtype}; logits must be floating point")
    if not bool(torch.isfinite(logits).all()):
        raise ModelCheckError("its outputs on a random float32 batch are not all finite")


def _check_same_build(ours: dict[str, torch.Tensor], theirs: dict[str, torch.Tensor]) -> None:
    if list(ours) != list(theirs):
        raise ModelCheckError("two builds have different parameter names")
    for name, value in ours.items():
        if value.shape != theirs[name].shape or not torch.equal(value, theirs[name]):
            raise ModelCheckError(
                f"two builds under the same torch seed differ in {name}: draw initial"
                " weights from torch's global generator (the learner seeds it), not from"
                " numpy, random or a fresh torch.Generator"
            )


def _check_training(model: nn.Module, x: torch.Tensor, n_classes: int, backend: str) -> None:
    from netfl.learning.trainer import LocalSGD, SequentialTrainer

    trainer: Any
    if backend == "sequential":
        trainer = SequentialTrainer(model, torch.device("cpu"))
    elif backend == "dense":
        from netfl.learning.dense import DenseTrainer, dense_layers

        why = dense_layers(model)
        if isinstance(why, str):
            raise ModelCheckError(f"cannot train with learning.backend dense: {why}")
        trainer = DenseTrainer(model, torch.device("cpu"))
    else:
        from netfl.learning.batched import BatchedTrainer

        # Vectorised also for convolutions, as on a GPU, so the vmap path is the one checked.
        trainer = BatchedTrainer(model, torch.device("cpu"), vectorize_convolutions=True)
    y = torch.arange(len(x)) % n_classes
    rows = torch.arange(len(x)).view(_CHECK_CLIENTS, _CHECK_SAMPLES)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    sgd = LocalSGD(lr=0.01, epochs=1, batch_size=_CHECK_SAMPLES)
    try:
        _, losses, _ = trainer.train(state, x, y, list(rows), list(range(_CHECK_CLIENTS)), sgd)
    except Exception as exc:
        hint = (
            " (the batched backend runs clients under torch.func.vmap, which refuses"
            " data-dependent Python control flow and shapes: remove them, or set"
            " learning.backend: sequential)"
            if backend != "sequential"
            else ""
        )
        raise ModelCheckError(
            f"one step of local SGD with learning.backend {backend} raised {_raised(exc)}{hint}"
        ) from exc
    if not np.isfinite(losses).all():
        raise ModelCheckError("one step of local SGD gave a non-finite loss")


def check_dataset(
    load: Callable[..., Any],
    config: LearningConfig,
    n_clients: int,
    *,
    rng: Callable[[], np.random.Generator] | None = None,
    repeat: bool = True,
) -> Dataset:
    """Check a dataset loader against the contract; return the dataset it loaded.

    Rules: ``load(config, rng, n_clients)`` is a valid call that returns a
    :class:`~netfl.learning.datasets.Dataset`; inputs are finite float32 tensors with one
    shape per sample, shared by train and test; labels are int64 in ``0 .. n_classes - 1``
    with ``n_classes >= 2``; train and test each have samples and as many labels as
    inputs; owners (``train_owner``/``test_owner``), when given, are both given, one
    non-negative integer per sample; with ``repeat``, a second load from a generator of
    the same seed gives identical tensors. ``rng`` makes the generator of each load (all
    alike; default: ``numpy.random.default_rng(0)``). A loader's own
    :class:`~netfl.errors.NetflError` (missing files: bad input, not a broken contract)
    passes through.

    Raises
    ------
    DatasetCheckError
        Naming the rule broken.
    """
    why = _signature_rule(load, (config, np.random.default_rng(0), n_clients), DATASET_SIGNATURE)
    if why:
        raise DatasetCheckError(why)
    fresh = rng or (lambda: np.random.default_rng(0))
    dataset = _loaded(load, config, n_clients, fresh())
    _check_tensors(dataset)
    _check_labels(dataset)
    _check_owners(dataset)
    if repeat:
        again = _loaded(load, config, n_clients, fresh())
        fields = ("x_train", "y_train", "x_test", "y_test")
        if dataset.n_classes != again.n_classes or not all(
            getattr(dataset, f).shape == getattr(again, f).shape
            and torch.equal(getattr(dataset, f), getattr(again, f))
            for f in fields
        ):
            raise DatasetCheckError(
                "two loads from generators of the same seed differ: draw every random"
                " number (splits, shuffles, generated data) from the rng argument"
            )
    return dataset


def _loaded(
    load: Callable[..., Any], config: LearningConfig, n_clients: int, rng: np.random.Generator
) -> Dataset:
    try:
        dataset = load(config, rng, n_clients)
    except NetflError:
        raise
    except Exception as exc:
        raise DatasetCheckError(f"loading it raised {_raised(exc)}") from exc
    if not isinstance(dataset, Dataset):
        raise DatasetCheckError(
            f"returned a {type(dataset).__name__}; it must return a"
            " netfl.learning.datasets.Dataset (build one with"
            " netfl.learning.datasets.from_numpy)"
        )
    return dataset


def _check_tensors(data: Dataset) -> None:
    for part in ("train", "test"):
        x, y = getattr(data, f"x_{part}"), getattr(data, f"y_{part}")
        if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
            raise DatasetCheckError(f"x_{part} and y_{part} must be torch tensors (from_numpy)")
        if x.dtype != torch.float32:
            raise DatasetCheckError(f"x_{part} is {x.dtype}; inputs must be float32")
        if y.dtype != torch.int64:
            raise DatasetCheckError(f"y_{part} is {y.dtype}; labels must be int64 class indices")
        if y.dim() != 1 or x.dim() < 2 or len(x) != len(y):
            raise DatasetCheckError(
                f"x_{part} {tuple(x.shape)} and y_{part} {tuple(y.shape)} must hold one label"
                " per sample: x (N, *sample shape), y (N,)"
            )
        if len(y) == 0:
            raise DatasetCheckError(f"the {part} set is empty")
        if not bool(torch.isfinite(x).all()):
            raise DatasetCheckError(f"x_{part} has non-finite values (NaN or inf)")
    if data.x_train.shape[1:] != data.x_test.shape[1:]:
        raise DatasetCheckError(
            f"train samples have shape {tuple(data.x_train.shape[1:])} but test samples"
            f" {tuple(data.x_test.shape[1:])}"
        )


def _check_labels(data: Dataset) -> None:
    if isinstance(data.n_classes, bool) or not isinstance(data.n_classes, int | np.integer):
        raise DatasetCheckError(f"n_classes is {data.n_classes!r}; it must be an int")
    if data.n_classes < 2:
        raise DatasetCheckError(f"n_classes is {data.n_classes}; a classifier needs at least 2")
    for part in ("train", "test"):
        y = getattr(data, f"y_{part}")
        low, high = int(y.min()), int(y.max())
        if low < 0 or high >= data.n_classes:
            raise DatasetCheckError(
                f"y_{part} runs from {low} to {high}, outside 0 .. n_classes - 1 ="
                f" {data.n_classes - 1}"
            )


def _check_owners(data: Dataset) -> None:
    owners = (data.train_owner, data.test_owner)
    if (owners[0] is None) != (owners[1] is None):
        raise DatasetCheckError("give both train_owner and test_owner, or neither")
    if owners[0] is None:
        return
    for part, owner in zip(("train", "test"), owners, strict=True):
        n = len(getattr(data, f"y_{part}"))
        array = np.asarray(owner)
        if array.shape != (n,) or not np.issubdtype(array.dtype, np.integer) or (array < 0).any():
            raise DatasetCheckError(
                f"{part}_owner must hold one non-negative integer owner per {part} sample"
                f" ({n}); got shape {array.shape}, dtype {array.dtype}"
            )
