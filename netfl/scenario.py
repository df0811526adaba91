"""Scenario files: YAML -> validated :class:`~netfl.config.Scenario`, overrides, dumps.

Errors name the file (or the ``--set`` override), the dotted key and, for keys written in a
file, the line and column.
"""

from __future__ import annotations

import copy
import importlib.resources
import os
import warnings
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from netfl.config import Scenario
from netfl.config.base import closest
from netfl.errors import Problem, ScenarioError, ScenarioWarning
from netfl.validation import name_problems, scenario_problems
from netfl.yaml_guard import check_limits, check_size

BUILTIN_PACKAGE = "netfl.scenarios"
DEFAULT_SCENARIO = "quickstart"
#: The keys that name a file or folder the run reads (the schema marks them with
#: ``netfl.config.base.INPUT_PATH``; ``*``: every item of a list). A relative path written
#: in a scenario file is taken from that file's folder; one given with ``--set``, in a
#: built-in scenario or in a mapping from Python, from the working directory. Loading makes
#: every one absolute, so ``scenario.resolved.yaml`` reads the same files from anywhere.
PATH_KEYS = (
    ("learning", "data_root"),
    ("devices", "groups", "*", "mobility", "file"),
    ("devices", "groups", "*", "availability", "file"),
)


def builtin_scenarios() -> dict[str, str]:
    """Names of the scenarios shipped with netfl -> their first comment line."""
    found: dict[str, str] = {}
    for entry in sorted(importlib.resources.files(BUILTIN_PACKAGE).iterdir(), key=str):
        if entry.name.endswith(".yaml"):
            first = entry.read_text(encoding="utf-8").splitlines()[:1]
            found[entry.name[:-5]] = first[0].lstrip("# ").strip() if first else ""
    return found


def resolve_paths(data: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A copy of ``data`` whose relative paths (:data:`PATH_KEYS`) are taken from ``folder``
    (``~`` expanded first); absolute paths and values that are not strings stay as they are
    (the schema refuses the latter)."""
    data = copy.deepcopy(data)
    for key in PATH_KEYS:
        _resolve_at(data, key, folder)
    return data


def _resolve_at(node: Any, key: tuple[str, ...], folder: Path) -> None:
    head, rest = key[0], key[1:]
    children: list[Any]
    if head == "*":
        children = list(range(len(node))) if isinstance(node, list) else []
    else:
        children = [head] if isinstance(node, dict) and head in node else []
    for child in children:
        if rest:
            _resolve_at(node[child], rest, folder)
        elif isinstance(node[child], str) and node[child]:
            path = Path(node[child]).expanduser()
            node[child] = str(path if path.is_absolute() else Path(os.path.normpath(folder / path)))


def scenario_folder(source: str) -> Path:
    """Where a scenario's relative paths start: the folder of the file ``source`` names,
    the working directory for a built-in scenario (``<built-in name>``)."""
    if source.startswith("<built-in"):
        return Path.cwd()
    return Path(source).absolute().parent


def resolve_source(spec: str | None) -> tuple[str, str]:
    """Return ``(label, yaml_text)`` for a file path or a built-in scenario name."""
    spec = spec or DEFAULT_SCENARIO
    path = Path(spec)
    if path.is_file():
        try:
            check_size(path.stat().st_size, str(path))
            return str(path), path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ScenarioError.single(None, f"cannot read the file: {exc}", str(path)) from exc
    name = spec[:-5] if spec.endswith(".yaml") else spec
    resource = importlib.resources.files(BUILTIN_PACKAGE) / f"{name}.yaml"
    if "/" not in spec and resource.is_file():
        return f"<built-in {name}>", resource.read_text(encoding="utf-8")
    names = list(builtin_scenarios())
    close = closest(name, names)
    hint = f"did you mean '{close}'? " if close else ""
    raise ScenarioError.single(
        None,
        f"no such file, and no built-in scenario of that name ({hint}built-in: {', '.join(names)})",
        spec,
    )


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key written twice in one mapping (PyYAML keeps the last,
    so a second ``fl:`` block would silently replace the first)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # keys merged in with << may be overridden
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                continue  # SafeLoader reports an unhashable key itself
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key '{key}' is written twice here", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def parse_yaml(text: str, source: str) -> dict[str, Any]:
    """Parse YAML safely; syntax errors (and a key written twice) report line and column.

    Files too large, too deeply nested or expanding too many aliases are refused first
    (:mod:`netfl.yaml_guard`)."""
    check_limits(text, source)
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        message = f"malformed YAML: {_one_line(exc.problem or str(exc))}"
        if mark is not None:
            raise ScenarioError.single(
                None, message, source, line=mark.line + 1, column=mark.column + 1
            ) from exc
        raise ScenarioError.single(None, message, source) from exc
    except yaml.YAMLError as exc:
        raise ScenarioError.single(None, f"malformed YAML: {_one_line(str(exc))}", source) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ScenarioError.single(
            None, f"a scenario is a mapping of sections, got a {type(data).__name__}", source
        )
    return data


def key_positions(text: str) -> dict[tuple[str, ...], tuple[int, int]]:
    """Map each key path of a YAML document to the (line, column) where it is written.

    List items are keyed by their index as a string (``("devices", "groups", "0")``);
    text that is not valid YAML gives an empty map.
    """
    positions: dict[tuple[str, ...], tuple[int, int]] = {}
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return positions

    def walk(node: yaml.Node, path: tuple[str, ...]) -> None:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key_path = (*path, str(key_node.value))
                positions[key_path] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                walk(value_node, key_path)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                item_path = (*path, str(index))
                positions[item_path] = (item.start_mark.line + 1, item.start_mark.column + 1)
                walk(item, item_path)

    if root is not None:
        walk(root, ())
    return positions


def parse_override(expression: str) -> tuple[list[str], Any]:
    """Split ``a.b.c=value`` into the key path and the YAML-parsed value."""
    source = f"--set {expression}"
    key, sep, raw = expression.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise ScenarioError.single(
            None, "an override is KEY=VALUE with a dotted key, e.g. fl.rounds=10", source
        )
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        # str(exc) spans several lines; the problem alone is one.
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ScenarioError.single(key, f"value is not valid YAML: {reason}", source) from exc
    return key.split("."), value


def apply_override(data: dict[str, Any], path: Sequence[str], value: Any, source: str) -> None:
    """Set ``data[path] = value``, creating mappings on the way (unknown keys fail later)."""
    node: Any = data
    for depth, part in enumerate(path[:-1]):
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ScenarioError.single(
                    ".".join(path[: depth + 1]), f"no item {part} in this list", source
                )
            node = node[int(part)]
            continue
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif not isinstance(child, dict | list):
            raise ScenarioError.single(
                ".".join(path[: depth + 1]),
                f"is a value ({child!r}), not a section: cannot set '{path[-1]}' inside it",
                source,
            )
        node = child
    last = path[-1]
    if isinstance(node, list):
        if not last.isdigit() or int(last) >= len(node):
            raise ScenarioError.single(".".join(path), f"no item {last} in this list", source)
        node[int(last)] = value
    else:
        node[last] = value


def _clean_loc(loc: Iterable[int | str], data: Any) -> list[str]:
    """Keep the parts of a pydantic error location that are keys of the input.

    Pydantic inserts union tags and validator names into locations; walking the input
    removes them, so the location reads like the YAML (``devices.groups.0.compute_sps``).
    """
    parts: list[str] = []
    node = data
    for item in loc:
        in_dict = isinstance(node, dict) and item in node
        in_list = isinstance(node, list) and isinstance(item, int) and 0 <= item < len(node)
        if in_dict or in_list:
            node = node[item]
            parts.append(str(item))
    return parts


#: Pydantic's error types for "this should be a mapping" (a section, a device group, ...).
_MAPPING_ERRORS = frozenset({"model_type", "dict_type", "model_attributes_type"})
#: The key that picks a section's variant, for ``section: value`` written as a bare name.
_NAMED_BY = {"selection": "name", "radio": "model", "partition": "kind"}


def _house_message(item: Any, parts: list[str]) -> str:
    """Pydantic's message, or the house style for those that name Python types."""
    if item["type"] not in _MAPPING_ERRORS:
        return str(item["msg"])
    section = parts[-1] if parts else "the scenario"
    got = item.get("input")
    message = f"expected a section (a mapping of keys), got {got!r}"
    named_by = _NAMED_BY.get(section)
    if named_by and isinstance(got, str):
        message += (
            f"; write `{section}: {{{named_by}: {got}}}`"
            f" (or --set {'.'.join(parts)}.{named_by}={got})"
        )
    return message


def validation_problems(error: ValidationError, data: dict[str, Any]) -> list[Problem]:
    """One :class:`Problem` per pydantic error, keyed like the input ``data`` (dotted)."""
    problems = []
    for item in error.errors(include_url=False):
        parts = _clean_loc(item["loc"], data)
        if item["type"] == "unknown_key":
            parts.append(str(item["ctx"]["key"]))
        message = _house_message(item, parts)
        for prefix in ("Value error, ", "Assertion failed, "):
            message = message.removeprefix(prefix)
        if item["type"] not in {"unknown_key", "missing"} and "input" in item:
            shown = repr(item["input"])
            short = len(shown) <= 40 and not isinstance(item["input"], dict | list)
            if short and shown not in message:
                message += f" (got {shown})"
        problems.append(Problem(".".join(parts) or None, message))
    return problems


def locate_problems(
    problems: list[Problem],
    positions: dict[tuple[str, ...], tuple[int, int]],
    overrides: Mapping[str, str] | None = None,
) -> tuple[list[Problem], str | None]:
    """Attach the line and column of each problem's key (or of its nearest written parent)
    from ``positions`` (:func:`key_positions`); a problem with a ``source`` (a ``--set``,
    :func:`blame_overrides`) keeps it, and ``overrides`` maps dotted keys set by other
    means to their source. Returns the problems and the first override one came from (its
    source), or None."""
    located = []
    from_override = None
    for problem in problems:
        key = problem.key or ""
        source = problem.source or next(
            (expr for prefix, expr in (overrides or {}).items() if _related(key, prefix)),
            None,
        )
        if source is not None:
            from_override = from_override or source
            located.append(Problem(problem.key, problem.message, source=source))
            continue
        parts = tuple(key.split(".")) if key else ()
        while parts and parts not in positions:
            parts = parts[:-1]
        line, column = positions.get(parts, (None, None))
        located.append(Problem(problem.key, problem.message, line, column))
    return located, from_override


def load_scenario(
    spec: str | Path | None = None,
    overrides: Sequence[str] = (),
    *,
    check_registry: bool = True,
    check_data: bool = False,
) -> Scenario:
    """Load a scenario file (or built-in name), apply ``--set`` overrides and validate.

    Parameters
    ----------
    spec
        Path to a YAML file, or the name of a built-in scenario; None for ``quickstart``.
    overrides
        ``"a.b=value"`` strings; values are parsed as YAML.
    check_registry
        Also check that named strategies, datasets and models exist and that the strategy
        accepts its parameters.
    check_data
        Also load the dataset, build the model and partition the data, checking the
        dataset and the model against their contracts (``netfl validate``;
        :func:`netfl.validation.data_problems`).

    Raises
    ------
    ScenarioError
        With the file, key, line and column of every problem found.
    """
    source, text = resolve_source(str(spec) if spec is not None else None)
    data = parse_yaml(text, source)
    if not data:
        warnings.warn(
            f"{source}: the scenario is empty, so every key takes its default"
            " (`netfl validate --print` shows them)",
            ScenarioWarning,
            stacklevel=2,
        )
    return scenario_from_data(
        resolve_paths(data, scenario_folder(source)),
        source=source,
        overrides=overrides,
        positions=key_positions(text),
        check_registry=check_registry,
        check_data=check_data,
    )


def scenario_from_data(
    data: dict[str, Any],
    *,
    source: str = "<scenario>",
    overrides: Sequence[str] = (),
    positions: dict[tuple[str, ...], tuple[int, int]] | None = None,
    check_registry: bool = True,
    check_data: bool = False,
) -> Scenario:
    """Validate an already-parsed mapping (see :func:`load_scenario`)."""
    base = data
    data = _overridden(data, overrides)
    scenario, problems = _problems_of(data, check_registry, check_data)
    if scenario is not None and not problems:
        return scenario
    if overrides:
        problems = blame_overrides(problems, base, overrides, check_registry, check_data)
    problems, override = locate_problems(problems, positions or {})
    raise ScenarioError(problems, _error_source(problems, override, source))


def _overridden(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """A copy of ``data`` with the ``--set`` expressions applied in order, and the relative
    paths left (those of the overrides, or of a mapping that no file wrote) taken from the
    working directory."""
    data = copy.deepcopy(data)
    for expression in overrides:
        path, value = parse_override(expression)
        apply_override(data, path, value, f"--set {expression}")
    return resolve_paths(data, Path.cwd())


def _problems_of(
    data: dict[str, Any], check_registry: bool, check_data: bool
) -> tuple[Scenario | None, list[Problem]]:
    """The validated scenario (None if the schema refuses it) and every problem found."""
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc, data)
        if check_registry:
            flagged = {problem.key for problem in problems}
            problems += [p for p in name_problems(data) if p.key not in flagged]
        return None, problems
    return scenario, scenario_problems(
        scenario, check_registry=check_registry, check_data=check_data
    )


def _related(key: str, path: str) -> bool:
    """Whether an override of ``path`` sets ``key`` itself, a section holding it, or a
    key inside it."""
    return key == path or key.startswith(path + ".") or path.startswith(key + ".")


def blame_overrides(
    problems: list[Problem],
    data: dict[str, Any],
    overrides: Sequence[str],
    check_registry: bool = True,
    check_data: bool = False,
) -> list[Problem]:
    """Name the ``--set`` behind each problem (as its ``source``).

    The override of the problem's own key (or of a section holding it) when exactly one
    such override was given; otherwise the overrides without which no problem remains
    under that key (the scenario validated again with each one left out, the others
    applied), else the last override of a related key. A problem the file has without
    any override keeps the file as its source. Runs only on the error path.
    """
    expressions = list(dict.fromkeys(overrides))  # one override written twice is one cause
    paths = [".".join(parse_override(e)[0]) for e in expressions]
    cache: dict[int, set[str | None] | None] = {}

    def keys_without(index: int) -> set[str | None] | None:
        if index not in cache:
            rest = [e for i, e in enumerate(expressions) if i != index]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _, found = _problems_of(_overridden(data, rest), check_registry, check_data)
                cache[index] = {p.key for p in found}
            except ScenarioError:  # the others do not apply without it: cannot tell
                cache[index] = None
        return cache[index]

    blamed = []
    for problem in problems:
        key = problem.key or ""
        related = [i for i, path in enumerate(paths) if key and _related(key, path)]
        exact = [i for i in related if paths[i] == key or key.startswith(paths[i] + ".")]
        if len(exact) == 1:
            causes = exact
        else:
            causes = [i for i in range(len(expressions)) if (found := keys_without(i))
                      is not None and problem.key not in found]  # fmt: skip
            if not causes and related:
                causes = related[-1:]  # the last one given wins
        if causes:
            cause = ", ".join(f"--set {expressions[i]}" for i in causes)
            problem = Problem(problem.key, problem.message, source=cause)
        blamed.append(problem)
    return blamed


def _error_source(problems: list[Problem], override: str | None, source: str) -> str:
    """The override when every problem comes from one, else the file (each problem from an
    override names its own ``--set``)."""
    return override if override and all(p.source for p in problems) else source


def dump_scenario(scenario: Scenario) -> str:
    """YAML of the scenario with every default filled in; loading it gives it back."""
    header = (
        "# Resolved scenario: every key with the value the run used.\n"
        "# Re-run exactly with: netfl simulate scenario.resolved.yaml\n"
    )
    body = yaml.safe_dump(scenario.model_dump(mode="json"), sort_keys=False, width=100)
    return header + body
