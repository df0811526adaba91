"""Sweep files: a base scenario, overrides, a grid and/or zipped lists, and seeds.

::

    name: quickstart-strategies      # sweep directory name (default: the file's stem)
    base: quickstart                 # scenario file (relative to this file) or built-in name
    overrides:                       # applied to every run
      fl.rounds: 10
    grid:                            # cartesian product of the lists
      selection:                     # a mapping value replaces the whole section
        - {name: random}
        - {name: random, params: {weighted: true}}
      fl.clients_per_round: [3, 5]
    zip:                             # lists of equal length, varied together
      fl.deadline_s: [null, 30]
      fl.request_fraction: [1.0, 0.5]
    seeds: [1, 2, 3]                 # or a count: `seeds: 3` means 0, 1, 2

Every key is a dotted scenario key (as for ``--set``); unknown keys, empty grids and values
the scenario refuses are errors naming the sweep file, line and key, found before any run
starts. Each run is the base with its overrides and seed applied, validated like a scenario.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import BaseModel, Field, ValidationError, field_validator

from netfl.config import Scenario
from netfl.config.base import NonNegativeInt, StrictModel, suggest
from netfl.errors import Problem, ScenarioError
from netfl.scenario import (
    apply_override,
    key_positions,
    locate_problems,
    parse_yaml,
    resolve_paths,
    resolve_source,
    scenario_folder,
    scenario_from_data,
    validation_problems,
)

#: Sections of the sweep file whose keys are scenario keys.
OVERRIDE_SECTIONS = ("overrides", "grid", "zip")


class SweepFile(StrictModel):
    """The sweep file's schema."""

    name: str | None = Field(default=None, description="Sweep name (default: file stem).")
    base: str = Field(description="Base scenario: YAML file (relative to the sweep) or name.")
    overrides: dict[str, Any] = Field(default_factory=dict, description="Set on every run.")
    grid: dict[str, list[Any]] | None = Field(default=None, description="Cartesian product.")
    zip: dict[str, list[Any]] | None = Field(default=None, description="Equal-length lists.")
    seeds: list[NonNegativeInt] | None = Field(
        default=None, description="Seeds (a list, or a count n for 0..n-1; default: base's)."
    )

    @field_validator("seeds", mode="before")
    @classmethod
    def _count(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            if value <= 0:
                raise ValueError("a seed count must be positive")
            return list(range(value))
        return value

    @field_validator("seeds")
    @classmethod
    def _some_seeds(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and not value:
            raise ValueError("empty: list at least one seed, or remove the key")
        return value

    @field_validator("grid", "zip")
    @classmethod
    def _not_empty(cls, value: dict[str, list[Any]] | None) -> dict[str, list[Any]] | None:
        if value is not None and not value:
            raise ValueError("empty: give at least one key with a list of values, or remove it")
        return value


@dataclass(frozen=True)
class SweepRun:
    """One run of a sweep: its overrides, seed and validated scenario."""

    run_id: str
    seed: int
    overrides: dict[str, Any]
    scenario: Scenario
    varied: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The grid/zip values and the seed, readable."""
        parts = [f"{k}={_compact(self.overrides[k])}" for k in self.varied]
        return ", ".join([*parts, f"seed={self.seed}"])

    @property
    def scenario_data(self) -> dict[str, Any]:
        return self.scenario.model_dump(mode="json")


@dataclass(frozen=True)
class Sweep:
    """A parsed sweep file and its runs, in order."""

    name: str
    source: str
    text: str
    runs: list[SweepRun]


def _compact(value: Any) -> str:
    return (
        json.dumps(value, separators=(",", ":"), sort_keys=True)
        if isinstance(value, dict | list)
        else str(value)
    )


def run_id(scenario: Scenario) -> str:
    """A stable id from everything that determines the run (the output section left out)."""
    data = scenario.model_dump(mode="json", exclude={"output"})
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:10]
    return f"s{scenario.seed}-{digest}"


# -- checking dotted keys against the scenario schema ------------------------------------


def _models(annotation: Any) -> tuple[list[type[BaseModel]], bool]:
    """The config models an annotation holds (unions unwrapped) and whether it is a list."""
    origin = get_origin(annotation)
    if origin is list:
        inner, _ = _models(get_args(annotation)[0])
        return inner, True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation], False
    models: list[type[BaseModel]] = []
    for arg in get_args(annotation):
        found, _ = _models(arg)
        models += found
    return models, False


def key_problem(key: str) -> str | None:
    """Why the dotted ``key`` is not a scenario key, or None if it is one.

    Keys below a free-form value (``selection.params.*``, a distribution's parameters) are
    accepted here and checked when the run's scenario is validated.
    """
    models: list[type[BaseModel]] = [Scenario]
    parts = key.split(".")
    index = 0
    while index < len(parts) and models:
        part = parts[index]
        fields = {name: f for m in models for name, f in m.model_fields.items()}
        if part not in fields:
            where = ".".join(parts[:index]) or "the scenario"
            return f"no key '{part}' in {where}{suggest(part, list(fields))}"
        models, is_list = _models(fields[part].annotation)
        index += 1
        if is_list and index < len(parts):
            if not parts[index].isdigit():
                listed = ".".join(parts[:index])
                return f"'{listed}' is a list: give an item index, not '{parts[index]}'"
            index += 1
    return None


# -- reading ------------------------------------------------------------------------------


def _base_source(spec: str, sweep_path: Path | None) -> str:
    if sweep_path is not None and not Path(spec).is_absolute():
        beside = sweep_path.parent / spec
        if beside.is_file():
            return str(beside)
    return spec


def _schema_problems(model: SweepFile) -> list[Problem]:
    problems = []
    for section in OVERRIDE_SECTIONS:
        for key, values in (getattr(model, section) or {}).items():
            where = f"{section}.{key}"
            if key == "seed":
                problems.append(Problem(where, "vary the seed with the `seeds:` list"))
            elif (why := key_problem(key)) is not None:
                problems.append(Problem(where, why))
            elif section != "overrides" and not values:
                problems.append(Problem(where, "empty list: a varied key needs a value"))
    lengths = {k: len(v) for k, v in (model.zip or {}).items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{k} has {n}" for k, n in lengths.items())
        problems.append(Problem("zip", f"zipped lists must have equal lengths ({shown})"))
    return problems


def _points(model: SweepFile) -> Iterator[dict[str, Any]]:
    grid = model.grid or {}
    zipped = model.zip or {}
    zip_rows = list(zip(*zipped.values(), strict=True)) if zipped else [()]
    for grid_values in itertools.product(*grid.values()):
        for zip_values in zip_rows:
            point = dict(model.overrides)
            point.update(zip(grid, grid_values, strict=True))
            point.update(zip(zipped, zip_values, strict=True))
            yield point


def _blame(problem: Problem, point: dict[str, Any], sections: dict[str, str]) -> str | None:
    key = problem.key or ""
    for name in point:
        if key == name or key.startswith(name + ".") or name.startswith(key + "."):
            return f"{sections[name]}.{name}"
    return None


def _check_plugins(scenario: Scenario, checked: set[str], base_label: str) -> None:
    """A plug-in model or dataset is checked against its contract (``netfl validate``'s
    check) once per distinct ``learning`` section, so a broken one stops the sweep before
    any run starts; netfl's own pass the checks in the test suite."""
    from netfl.learning import is_plugin
    from netfl.validation import data_problems

    learning = scenario.learning
    if learning is None or not (is_plugin(learning.model) or is_plugin(learning.dataset)):
        return
    key = learning.model_dump_json()
    if key not in checked:
        checked.add(key)
        problems = data_problems(scenario)
        if problems:
            raise ScenarioError(problems, base_label)


def _expand(
    model: SweepFile, data: dict[str, Any], base_label: str, folder: Path
) -> list[SweepRun]:
    """Every run of the sweep; a relative path among the sweep's values is taken from
    ``folder``, the sweep file's."""
    sections = {k: s for s in OVERRIDE_SECTIONS for k in (getattr(model, s) or {})}
    seed_list: list[int | None] = list(model.seeds) if model.seeds else [None]
    runs = []
    checked: set[str] = set()
    for point in _points(model):
        for seed in seed_list:
            merged = copy.deepcopy(data)
            for key, value in point.items():
                apply_override(merged, key.split("."), value, base_label)
            if seed is not None:
                merged["seed"] = seed
            merged = resolve_paths(merged, folder)
            try:
                scenario = scenario_from_data(merged, source=base_label)
                _check_plugins(scenario, checked, base_label)
            except ScenarioError as exc:
                problem = exc.problems[0]
                sweep_key = _blame(problem, point, sections)
                if sweep_key is None:
                    raise  # a problem of the base scenario itself
                shown = ", ".join(f"{k}={_compact(v)}" for k, v in point.items())
                message = f"the run with {shown}: {problem.key}: {problem.message}"
                raise ScenarioError([Problem(sweep_key, message)]) from None
            varied = tuple(k for k in point if sections[k] != "overrides")
            runs.append(SweepRun(run_id(scenario), scenario.seed, dict(point), scenario, varied))
    return runs


def load_sweep(path: str | Path) -> Sweep:
    """Read and validate a sweep file and every run it describes.

    Raises
    ------
    ScenarioError
        Naming the sweep file, line, column and key of the first problems found.
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError.single(None, f"cannot read the sweep file: {exc}", source) from None
    data = parse_yaml(text, source)
    positions = key_positions(text)
    try:
        model = SweepFile.model_validate(data)
    except ValidationError as exc:
        problems, _ = locate_problems(validation_problems(exc, data), positions)
        raise ScenarioError(problems, source) from None
    problems = _schema_problems(model)
    try:
        base_label, base_text = resolve_source(_base_source(model.base, Path(path)))
    except ScenarioError as exc:
        problems.insert(0, Problem("base", exc.problems[0].message))
    try:
        if problems:
            raise ScenarioError(problems)
        base = resolve_paths(parse_yaml(base_text, base_label), scenario_folder(base_label))
        runs = _expand(model, base, base_label, Path(path).absolute().parent)
    except ScenarioError as exc:
        if exc.source is not None:
            raise  # located in the base scenario
        problems, _ = locate_problems(exc.problems, _sweep_positions(positions))
        raise ScenarioError(problems, source) from None
    name = model.name or Path(path).stem.removesuffix(".sweep")
    return Sweep(name, source, text, runs)


def _sweep_positions(
    positions: dict[tuple[str, ...], tuple[int, int]],
) -> dict[tuple[str, ...], tuple[int, int]]:
    """Positions keyed like problem keys: ``("grid", "fl.rounds")`` -> ``grid.fl.rounds`` split."""
    out = {}
    for path, where in positions.items():
        if len(path) >= 2 and path[0] in OVERRIDE_SECTIONS:
            out[(path[0], *path[1].split("."), *path[2:])] = where
        else:
            out[path] = where
    return out
