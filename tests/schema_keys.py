"""Every key of the scenario schema, found by walking the pydantic models (issue 27 item 7).

:func:`schema_keys` lists each key with a *context*: the smallest scenario (on top of the
built-in defaults, ``{}``) in which the key is in force: the variant of a tagged union it
belongs to (``radio: {model: nr}``), the FL protocol it applies to (``fl.protocol:
hierarchical`` for ``fl.kappa1``), the partition kind, and valid values for the required
keys of a list item. :func:`hostile_values` derives bad values from a key's type. Both are
generated from the schema, so a new key gets its context and its bad values without
anyone writing them (tests/test_hostile_yaml.py, tests/test_section_defaults.py).
"""

from __future__ import annotations

import copy
import itertools
import math
import typing
from dataclasses import dataclass
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from netfl.config.docs import _field_default as field_default
from netfl.config.docs import _flatten as flatten
from netfl.config.docs import _is_distribution as is_distribution
from netfl.config.docs import _tag as tag_of
from netfl.config.fl import _PROTOCOL_KEYS, FLConfig
from netfl.config.learning import (
    _PARTITION_PARAMS,
    _PARTITION_REQUIRED,
    DATASET_PARAMS,
    LearningConfig,
    PartitionConfig,
)
from netfl.config.scenario import Scenario

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class SchemaKey:
    """One key: where it sits, the scenario that puts it in force, its field."""

    path: Path
    context: dict[str, Any]
    model: type[BaseModel]
    field: FieldInfo

    @property
    def name(self) -> str:
        return str(self.path[-1])

    @property
    def dotted(self) -> str:
        """The path as errors and ``--set`` write it: ``devices.groups.0.count``."""
        return ".".join(str(p) for p in self.path)

    def scenario(self, value: Any) -> dict[str, Any]:
        """The context with this key set to ``value``."""
        return put(self.context, self.path, value)


def sub_models(annotation: Any) -> list[tuple[type[BaseModel], bool]]:
    """The sections a field holds, each with whether it is a list item."""
    if is_distribution(annotation):
        return []
    found = []
    for member in flatten(annotation):
        if get_origin(member) is list:
            found += [(sub, True) for sub, _ in sub_models(get_args(member)[0])]
        elif isinstance(member, type) and issubclass(member, BaseModel):
            found.append((member, False))
    return found


def put(data: dict[str, Any], path: Path, value: Any) -> dict[str, Any]:
    """A deep copy of ``data`` with ``value`` at ``path`` (missing mappings and list items
    are created)."""
    out = copy.deepcopy(data)
    node: Any = out
    for here, after in itertools.pairwise(path):
        empty: Any = [] if isinstance(after, int) else {}
        if isinstance(here, int):
            while len(node) <= here:
                node.append(empty)
            node = node[here]
        else:
            if not isinstance(node.get(here), dict | list):
                node[here] = empty
            node = node[here]
    last = path[-1]
    if isinstance(last, int):
        while len(node) <= last:
            node.append(None)
    node[last] = copy.deepcopy(value)
    return out


def valid(data: dict[str, Any]) -> bool:
    try:
        Scenario.model_validate(data)
    except (ValidationError, ValueError):
        return False
    return True


#: Values tried, in order, for a key that must be given: the first the schema accepts.
_CANDIDATES: tuple[Any, ...] = (
    2,
    1,
    0.5,
    1.5,
    10,
    100.0,
    1e6,
    True,
    "x",
    [1.0],
    {"dist": "constant", "value": 1.0},
)


def _put_all(data: dict[str, Any], paths: list[Path], value: Any) -> dict[str, Any]:
    for path in paths:
        data = put(data, path, value)
    return data


def _first_valid(data: dict[str, Any], paths: list[Path]) -> dict[str, Any]:
    """``data`` with the first candidate that makes it valid at every one of ``paths``
    (unchanged when none does)."""
    for candidate in _CANDIDATES:
        trial = _put_all(data, paths, candidate)
        if valid(trial):
            return trial
    return data


def _section_context(context: dict[str, Any], path: Path, model: type[BaseModel]) -> dict[str, Any]:
    """``context`` with the section ``model`` at ``path`` in force: its tag, valid values
    for its required keys, and for an optional key if the section needs one of them
    (``snr`` or ``snr_db``)."""
    tag = tag_of(model)
    section = {tag[0]: tag[1]} if tag is not None else {}
    data = put(context, path, section)
    required = [
        (*path, name)
        for name, field in model.model_fields.items()
        if field.is_required() and name not in section
    ]
    if required:
        filled = _first_valid(data, required)
        # None valid alone: the section also needs an optional key; start from the first.
        data = filled if filled is not data else _put_all(data, required, _CANDIDATES[0])
    for name, field in model.model_fields.items():
        if valid(data):
            break
        if not field.is_required() and name not in section:
            data = _first_valid(data, [(*path, name)])
    return data


def _key_context(context: dict[str, Any], path: Path, model: type[BaseModel]) -> dict[str, Any]:
    """``context`` with what makes the key at ``path`` apply (a protocol, a partition)."""
    name = str(path[-1])
    if model is FLConfig and name in _PROTOCOL_KEYS:
        return put(context, ("fl", "protocol"), sorted(_PROTOCOL_KEYS[name])[0])
    if model is PartitionConfig and name in _PARTITION_PARAMS:
        kind = _PARTITION_PARAMS[name]
        data = put(context, (*path[:-1], "kind"), kind)
        needed = [(*path[:-1], r) for r in _PARTITION_REQUIRED.get(kind, ())]
        return _first_valid(data, [path, *needed]) if needed else data
    return context


def schema_keys() -> list[SchemaKey]:
    """Every key of every section (every variant), in schema order."""
    keys: list[SchemaKey] = []

    def walk(model: type[BaseModel], path: Path, context: dict[str, Any]) -> None:
        for name, field in model.model_fields.items():
            key_path = (*path, name)
            keys.append(SchemaKey(key_path, _key_context(context, key_path, model), model, field))
            if model is LearningConfig and name == "dataset_params":
                # A mapping validated by the dataset's own parameter model.
                for dataset, params in DATASET_PARAMS.items():
                    walk(params, key_path, put(context, (*path, "dataset"), dataset))
            for sub, is_list in sub_models(field.annotation):
                sub_path = (*key_path, 0) if is_list else key_path
                walk(sub, sub_path, _section_context(context, sub_path, sub))

    walk(Scenario, (), {})
    return keys


def _numbers(annotation: Any) -> tuple[bool, bool]:
    """(takes ints, takes floats) among the annotation's members."""
    members = flatten(annotation)
    return int in members, float in members


def hostile_values(key: SchemaKey) -> list[Any]:
    """Bad (or extreme) values for ``key``, from its type: wrong types for everyone;
    negative, zero, huge, non-finite numbers and unit strings for numbers; unknown choices
    for literals; broken distributions; unknown keys for sections."""
    annotation = key.field.annotation
    values: list[Any] = [[], {"unknown_key": 1}]
    if is_distribution(annotation):
        return [
            *values,
            -1.0,
            10**12,
            {"dist": "uniform", "low": 5, "high": 1},
            {"dist": "normal", "mean": -1e308, "std": 1e308},
            {"dist": "bogus"},
        ]
    if sub_models(annotation):
        return [*values, "text", 10**12]
    members = flatten(annotation)
    takes_int, takes_float = _numbers(annotation)
    if takes_int or takes_float:
        values += [-1, 0, 10**12, 10**30, "abc", "1 km", True]
        if takes_float:
            values += [-1e308, 1e308, math.nan, math.inf, 1e-300]
    literals = [m for m in members if get_origin(m) is typing.Literal]
    if literals:
        values += ["not-a-choice", 3]
    if bool in members:
        values += ["maybe", 2]
    if str in members and not literals:
        values += ["", "x" * 5000, "os:system", "no.such.module:Thing"]
    if any(get_origin(m) is list for m in members):
        values += [[None], ["x"] * 3, [10**30]]
    if any(get_origin(m) is dict for m in members):
        values += [{"x": {"y": [1, 2]}}, {"": None}]
    if any(get_origin(m) is tuple for m in members):  # a point: [x, y]
        values += [[1.0], [1.0, 2.0, 3.0], [math.nan, 0.0], [1e308, -math.inf], ["x", "y"]]
    return values


__all__ = ["SchemaKey", "field_default", "hostile_values", "put", "schema_keys", "valid"]
