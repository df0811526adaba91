"""Parameters read from code for the generated references: a callable's signature gives
each parameter's name, type and default, the owner's numpy-style docstring ``Parameters``
section its meaning (strategies: :mod:`netfl.selection.docs`; aggregation rules:
:mod:`netfl.learning.aggregation.docs`).
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    default: str
    meaning: str


def _type_name(annotation: Any) -> str:
    """A readable type: ``int``, ``float or null``, ``'budget' or 'deadline'``."""
    if annotation is inspect.Parameter.empty:
        return "any"
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return " or ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join("null" if a is type(None) else _type_name(a) for a in args)
    if origin is not None:
        return str(annotation).replace("typing.", "")
    return getattr(annotation, "__name__", str(annotation))


def _docstring_params(cls: type) -> dict[str, str]:
    """``name -> meaning`` from the class docstring's ``Parameters`` section."""
    doc = inspect.getdoc(cls) or ""
    match = re.search(r"^Parameters\n-+\n(.*?)(?=^\S[^\n]*\n-+\n|\Z)", doc, re.S | re.M)
    if not match:
        return {}
    out: dict[str, str] = {}
    names: list[str] = []
    lines: list[str] = []
    for line in match.group(1).splitlines():
        if line and not line.startswith(" "):
            if names:
                for name in names:
                    out[name] = " ".join(lines).strip()
            names = [n.strip() for n in line.split(":")[0].split(",")]
            lines = []
        elif line.strip():
            lines.append(line.strip())
    for name in names:
        out[name] = " ".join(lines).strip()
    return out


def _field_description(annotation: Any) -> str:
    for meta in getattr(annotation, "__metadata__", ()):
        description = getattr(meta, "description", None)
        if description:
            return str(description)
    return ""


def callable_parameters(function: Any, documented: Any, keyword_only: bool = False) -> list[Param]:
    """``function``'s parameters (only the keyword-only ones with ``keyword_only``), their
    meanings from ``documented``'s docstring ``Parameters`` section (for aggregation rules,
    whose keyword-only parameters are ``fl.aggregation.params``)."""
    described = _docstring_params(documented)
    signature = inspect.signature(function, eval_str=True)
    out = []
    for name, param in signature.parameters.items():
        if name == "self" or param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        if keyword_only and param.kind is not param.KEYWORD_ONLY:
            continue
        default = "required" if param.default is param.empty else repr(param.default)
        meaning = described.get(name) or _field_description(param.annotation)
        out.append(Param(name, _type_name(param.annotation), default, meaning))
    return out
