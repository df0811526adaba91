"""The one validation stage of a scenario, shared by ``netfl validate`` and ``simulate``.

:mod:`netfl.config` is the schema and imports nothing above it; the checks here need the
layers above it (the radio's path-loss validity and load, the registries of strategies,
datasets and models, the memory the run needs: :mod:`netfl.resources`), so they run where
scenarios are loaded (:mod:`netfl.scenario`).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from netfl.config import Scenario, cross_checks
from netfl.errors import NetflError, Problem, ScenarioWarning
from netfl.resources import memory_problems

if TYPE_CHECKING:
    from netfl.learning.gpu_memory import GpuMemory


def scenario_problems(
    scenario: Scenario, *, check_registry: bool = True, check_data: bool = False
) -> list[Problem]:
    """Every problem of a schema-valid scenario, in one pass (empty if it can run).

    ``check_registry``: also check that named strategies, datasets and models exist and
    that the strategy accepts its parameters. ``check_data``: also load the dataset, build
    the model and partition the data, checking them against their contracts
    (:func:`data_problems`; ``netfl validate``; ``simulate`` does it when it builds the
    learner, with the same messages). Whatever a plug-in raises on the way (or a
    ``sys.exit`` it calls) is a problem naming the plug-in's key.
    """
    try:
        return _problems(scenario, check_registry, check_data)
    except NetflError:
        raise
    except (Exception, SystemExit) as exc:  # a plug-in's code raised, or exited
        from netfl.registry import plugin_problem

        problem = plugin_problem(exc, scenario)
        if problem is None:
            raise
        return [problem]


def _problems(scenario: Scenario, check_registry: bool, check_data: bool) -> list[Problem]:
    from netfl.radio.checks import radio_problems

    problems, notes = memory_problems(scenario)
    for note in notes:
        warnings.warn(note, ScenarioWarning, stacklevel=4)
    fits = not problems
    problems += cross_checks(scenario)
    problems += radio_problems(scenario)
    if not problems:
        problems += _motion(scenario)
    if check_registry:
        from netfl.registry import registry_checks

        problems += registry_checks(scenario)
        if not problems:
            _warn_unstable(scenario)
        if check_data and fits and not problems:
            problems += data_problems(scenario)
    return problems


def _motion(scenario: Scenario) -> list[Problem]:
    """What moving devices need to finish in bounded time, and the jumps a long radio
    update makes (:mod:`netfl.mobility.limits`)."""
    from netfl.mobility.limits import motion_problems, motion_warnings

    for key, message in motion_warnings(scenario):
        warnings.warn(f"{key}: {message}", ScenarioWarning, stacklevel=5)
    return motion_problems(scenario)


def _warn_unstable(scenario: Scenario) -> None:
    """Warn where the settings make training unstable by construction
    (:mod:`netfl.learning.stability`), each warning naming its key."""
    from netfl.learning.aggregation.base import validate_params
    from netfl.learning.stability import CHECKED_RULES, stability_warnings
    from netfl.registry import aggregations

    config = scenario.fl.aggregation
    params = None
    if scenario.learning is not None and config.name in CHECKED_RULES:
        params = validate_params(aggregations().load(config.name), config.params)
    for key, message in stability_warnings(scenario, params):
        warnings.warn(f"{key}: {message}", ScenarioWarning, stacklevel=5)


def needs_data_check(scenario: Scenario) -> bool:
    """Whether the dataset must be loaded and the model built to know the scenario can
    run: a plug-in model or dataset (checked against its contract), a dataset read from
    files (``learning.data_root``), or a Dirichlet partition that must find the samples
    the devices ask for. netfl's own models on its embedded datasets pass the checks in
    the test suite and are not built (``validate`` then does not import torch)."""
    from netfl.learning import EMBEDDED_DATASETS, is_plugin

    learning = scenario.learning
    if learning is None:
        return False
    if is_plugin(learning.dataset) or is_plugin(learning.model):
        return True
    with_sizes = any(group.n_samples is not None for group in scenario.devices.groups)
    dirichlet = learning.partition.kind == "dirichlet" and with_sizes
    return learning.dataset not in EMBEDDED_DATASETS or dirichlet


def data_problems(scenario: Scenario) -> list[Problem]:
    """When :func:`needs_data_check`: load the dataset, build the model and partition the
    data as the run will (same seed, same streams), checking the dataset and the model
    against their contracts (:mod:`netfl.learning.check`; a plug-in dataset is loaded
    twice, to check it is deterministic): what ``simulate`` would refuse or crash on,
    ``validate`` refuses, each problem naming its key (``learning.dataset``,
    ``learning.model``, ...)."""
    learning = scenario.learning
    if learning is None or not needs_data_check(scenario):
        return []
    import numpy as np

    from netfl.errors import DatasetError, ScenarioError
    from netfl.fl.population import build_population
    from netfl.learning import is_plugin
    from netfl.learning.build import model_problem, prepare_data
    from netfl.learning.check import DatasetCheckError, check_dataset
    from netfl.registry import datasets
    from netfl.rng import Streams

    streams = Streams(scenario.seed)
    split = streams.seed_sequence("learning.split")  # the run's stream, issued per load
    try:
        population = build_population(scenario.devices, streams)
        dataset = check_dataset(
            datasets().load(learning.dataset),
            learning,
            population.n_clients,
            rng=lambda: np.random.Generator(np.random.PCG64(split)),
            repeat=is_plugin(learning.dataset),
        )
        model_problem(learning, dataset)
        prepare_data(learning, population.n_clients, population.requested_samples, streams, dataset)
    except DatasetCheckError as exc:
        return [Problem("learning.dataset", f"'{learning.dataset}' {exc}")]
    except ScenarioError as exc:
        return exc.problems
    except DatasetError as exc:
        return [Problem("learning.data_root", str(exc))]
    return []


#: Keys that name a registered component -> the registry's function in netfl.registry.
_NAMED_KEYS = {
    ("selection", "name"): "strategies",
    ("radio", "channel_model"): "channel_models",
    ("learning", "dataset"): "datasets",
    ("learning", "model"): "models",
}


def name_problems(data: dict[str, Any]) -> list[Problem]:
    """Unknown component names in a raw scenario mapping, for a scenario that does not
    validate: so a misspelt strategy is reported together with the schema's errors, not
    only once they are fixed. Nothing is imported (``package.module:Name`` is left to the
    full check)."""
    from netfl import registry

    problems = []
    for (section, key), kind in _NAMED_KEYS.items():
        value = data.get(section)
        name = value.get(key) if isinstance(value, dict) else None
        if isinstance(name, str) and ":" not in name:
            found = getattr(registry, kind)()
            if name not in found:
                problems.append(Problem(f"{section}.{key}", found.unknown_message(name)))
    return problems


def scenario_gpu_memory(scenario: Scenario) -> GpuMemory:
    """The GPU memory one run of ``scenario`` needs (:mod:`netfl.learning.gpu_memory`):
    its dataset loaded and its model built as the run would, on the CPU; raise
    ScenarioError/DatasetError as the run would."""
    import torch

    from netfl.fl.population import build_population
    from netfl.learning.build import load_dataset
    from netfl.learning.gpu_memory import estimate_gpu_memory
    from netfl.registry import models
    from netfl.rng import Streams

    learning = scenario.learning
    assert learning is not None
    streams = Streams(scenario.seed)
    population = build_population(scenario.devices, streams)
    dataset = load_dataset(learning, streams.get("learning.split"), population.n_clients)
    with torch.random.fork_rng(devices=[]):
        model = models().load(learning.model)(dataset.input_shape, dataset.n_classes)
    sizes = (len(dataset.y_train), len(dataset.y_test))
    return estimate_gpu_memory(scenario, model, dataset.input_shape, sizes)


def device_problems(scenario: Scenario) -> list[Problem]:
    """``learning.device: cuda`` without CUDA, ``learning.bf16`` on a GPU without bf16:
    what ``simulate`` would refuse when it builds the learner (imports torch only for
    ``device: cuda``)."""
    learning = scenario.learning
    if learning is None or learning.device != "cuda":
        return []
    from netfl.errors import ScenarioError
    from netfl.learning.build import training_device

    try:
        training_device(learning)
    except ScenarioError as exc:
        return exc.problems
    return []


def gpu_memory_line(scenario: Scenario) -> str | None:
    """``netfl validate``'s line on the GPU memory one run needs (None without learning),
    with how many runs fit the free memory of this machine's GPU, where it has one."""
    if scenario.learning is None:
        return None
    import torch

    memory = scenario_gpu_memory(scenario)
    line = memory.describe()
    if torch.cuda.is_available():
        free, _ = torch.cuda.mem_get_info()
        name = torch.cuda.get_device_name()
        line += f"; {memory.fitting(free)} such runs fit the {free / 2**30:.1f} GiB free on {name}"
    return line
