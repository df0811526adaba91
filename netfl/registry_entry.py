"""A registered component: ``"module:attribute"`` and a summary, imported only when used.

The bottom of the registries: the subpackages that declare tables (``netfl.selection``,
``netfl.learning``) import :class:`Entry` from here, and :mod:`netfl.registry`, which
imports those tables, sits above them, so no import circle forms.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

_PLUGINS = ContextVar("netfl_plugins_allowed", default=True)


def plugins_allowed() -> bool:
    """Whether a scenario may name ``package.module:Name`` plug-ins and entry-point ones."""
    return _PLUGINS.get()


@contextmanager
def no_plugins() -> Iterator[None]:
    """Within the block, only the registered names are accepted: a scenario naming
    ``package.module:Name`` (or an entry-point plug-in) is refused before anything is
    imported (``netfl validate/simulate --no-plugins``, for scenarios one does not trust)."""
    token = _PLUGINS.set(False)
    try:
        yield
    finally:
        _PLUGINS.reset(token)


@dataclass(frozen=True)
class Entry:
    """A registered item: where it lives and a one-line summary."""

    target: str
    summary: str


def load_target(target: str) -> Any:
    """Import ``package.module:attribute`` and return the attribute.

    Importing runs the module's code: a scenario that names a plug-in is trusted like a
    Python script (see :func:`no_plugins`)."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{target!r} is not of the form package.module:Name")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(
            f"cannot import module {module_name!r}: {exc} (a plug-in's module must be"
            " importable: install its package, e.g. pip install -e ., or put its folder on"
            " PYTHONPATH; docs/extending.md)"
        ) from exc
    except (Exception, SystemExit) as exc:  # a syntax error, or its code raised or exited
        raise ValueError(f"importing module {module_name!r} {raised(exc)}") from exc
    try:
        obj = module
        for part in attribute.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no attribute {attribute!r}") from None
    except (Exception, SystemExit) as exc:  # a module-level __getattr__ that raised
        raise ValueError(
            f"getting {attribute!r} from module {module_name!r} {raised(exc)}"
        ) from exc
    return obj


#: The longest excerpt of an exception's message quoted in a one-line error.
EXCERPT_CHARS = 200


def raised(exc: BaseException) -> str:
    """``"raised Kind: message"`` (one line, the message cut to :data:`EXCERPT_CHARS`), or
    ``"called sys.exit(code)"`` for a :class:`SystemExit`."""
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})"
    text = " ".join(str(exc).split())
    if len(text) > EXCERPT_CHARS:
        text = text[: EXCERPT_CHARS - 3] + "..."
    return f"raised {type(exc).__name__}: {text}" if text else f"raised {type(exc).__name__}"
