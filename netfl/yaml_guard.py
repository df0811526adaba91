"""Limits on the YAML netfl is willing to parse: size, nesting depth and alias expansion.

A scenario is a few kilobytes of mappings a handful of levels deep. Hostile or broken files
are refused before PyYAML builds them, in time linear in the file's length:

- a "billion laughs" file (anchors that alias anchors, nine levels of nine references each)
  expands to 9**9 values; PyYAML builds it as a graph, but every consumer that walks it
  (validation, copies, dumps) walks the expansion, so it hangs;
- a value nested thousands of levels deep (``[[[[...]]]]``) overflows Python's recursion
  in PyYAML's composer.

The check streams PyYAML's parser events (the parser keeps an explicit state stack, so it
does not recurse) and keeps, per open collection, the number of values it expands to and
its depth, counting an alias as the expansion of its anchor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from netfl.errors import ScenarioError

MAX_SCENARIO_BYTES = 1 << 20
"""Largest scenario (or sweep) file parsed, in bytes: the shipped ones are under 5 KiB."""

MAX_DEPTH = 64
"""Deepest nesting of mappings and lists (the schema itself is under 10 levels deep)."""

MAX_EXPANDED_VALUES = 100_000
"""Most values a document may expand to once every alias is replaced by its anchor."""


@dataclass
class _Open:
    """A collection being parsed: values below it so far and its depth below itself."""

    anchor: str | None
    values: int = 1
    depth: int = 0


def _refuse(message: str, source: str, mark: Any) -> ScenarioError:
    if mark is None:
        return ScenarioError.single(None, f"malformed YAML: {message}", source)
    return ScenarioError.single(
        None, f"malformed YAML: {message}", source, line=mark.line + 1, column=mark.column + 1
    )


def check_size(n_bytes: int, source: str) -> None:
    """Refuse a file larger than :data:`MAX_SCENARIO_BYTES`."""
    if n_bytes > MAX_SCENARIO_BYTES:
        raise ScenarioError.single(
            None,
            f"the file is {n_bytes:,} bytes; scenarios are limited to"
            f" {MAX_SCENARIO_BYTES:,} bytes (a scenario is a few kilobytes)",
            source,
        )


def check_limits(text: str, source: str) -> None:
    """Raise :class:`ScenarioError` (file, line, column) if ``text`` is too large, nests
    deeper than :data:`MAX_DEPTH` or expands past :data:`MAX_EXPANDED_VALUES` values.

    YAML syntax errors are left to the loader, which reports them with their position.
    """
    check_size(len(text.encode("utf-8", errors="replace")), source)
    anchors: dict[str, tuple[int, int]] = {}  # anchor -> (values, depth)
    stack: list[_Open] = []
    total = 0

    def add(values: int, depth: int, mark: Any) -> None:
        nonlocal total
        if stack:
            stack[-1].values += values
            stack[-1].depth = max(stack[-1].depth, depth)
        else:
            total += values
        if len(stack) + depth > MAX_DEPTH:
            raise _refuse(f"nested deeper than {MAX_DEPTH} levels", source, mark)
        if total + sum(item.values for item in stack) > MAX_EXPANDED_VALUES:
            raise _refuse(
                f"its aliases expand to more than {MAX_EXPANDED_VALUES:,} values"
                " (a scenario needs a few hundred)",
                source,
                mark,
            )

    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                if len(stack) >= MAX_DEPTH:
                    raise _refuse(
                        f"nested deeper than {MAX_DEPTH} levels", source, event.start_mark
                    )
                stack.append(_Open(event.anchor))
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                done = stack.pop()
                if done.anchor is not None:
                    anchors[done.anchor] = (done.values, done.depth + 1)
                add(done.values, done.depth + 1, event.start_mark)
            elif isinstance(event, yaml.ScalarEvent):
                if event.anchor is not None:
                    anchors[event.anchor] = (1, 0)
                add(1, 0, event.start_mark)
            elif isinstance(event, yaml.AliasEvent):
                values, depth = anchors.get(event.anchor or "", (1, 0))
                add(values, depth, event.start_mark)
    except yaml.YAMLError:
        return  # the loader reports it with its position
