"""A registered component: ``"module:attribute"`` and a summary, imported only when used.

The bottom of the registries: the subpackages that declare tables (``netfl.selection``,
``netfl.learning``) import :class:`Entry` from here, and :mod:`netfl.registry`, which
imports those tables, sits above them, so no import circle forms.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Entry:
    """A registered item: where it lives and a one-line summary."""

    target: str
    summary: str


def load_target(target: str) -> Any:
    """Import ``package.module:attribute`` and return the attribute."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{target!r} is not of the form package.module:Name")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import module {module_name!r}: {exc}") from exc
    try:
        obj = module
        for part in attribute.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no attribute {attribute!r}") from None
    return obj
