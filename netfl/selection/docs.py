"""The strategies' reference, generated from the code: ``docs/strategies.md``.

Each registered strategy's parameters are declared once, in its class: the constructor's
signature gives the name, type and default (and the validation of ``selection.params``),
the class docstring's numpy-style ``Parameters`` section gives the meaning, with the
paper's symbol and equation. ``python -m netfl.selection.docs > docs/strategies.md``
renders them; ``netfl show STRATEGY`` prints one; tests/test_docs.py checks the file is
current and that every parameter is described.
"""

from __future__ import annotations

import inspect
import re
import textwrap
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


def parameters(cls: Any) -> list[Param]:
    """The parameters of a strategy class, as ``selection.params`` takes them."""
    described = _docstring_params(cls)
    signature = inspect.signature(cls.__init__, eval_str=True)
    out = []
    for name, param in signature.parameters.items():
        if name == "self" or param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        default = "required" if param.default is param.empty else repr(param.default)
        meaning = described.get(name) or _field_description(param.annotation)
        out.append(Param(name, _type_name(param.annotation), default, meaning))
    return out


def summary_paragraph(cls: type) -> str:
    doc = inspect.getdoc(cls) or ""
    return doc.split("\n\n")[0].replace("\n", " ").strip()


def protocols(cls: type) -> str:
    """Which ``fl.protocol`` values the strategy runs under."""
    synchronous = "fedavg, fedcs, hierarchical"
    if getattr(cls, "supports_async", False):
        return (
            f"{synchronous}, fedasync, fedbuff (asynchronous: picks whom to start in a freed slot)"
        )
    return f"{synchronous} (not the asynchronous fedasync, fedbuff)"


def section(name: str) -> str:
    """One strategy's reference in markdown."""
    from netfl.registry import strategies

    registry = strategies()
    entry = registry.entries()[name]
    cls = registry.load(name)
    rows = [f"## `{name}`", "", entry.summary + ".", "", summary_paragraph(cls), ""]
    rows += [f"Protocols: {protocols(cls)}.", ""]
    params = parameters(cls)
    if not params:
        rows += ["No parameters.", ""]
        return "\n".join(rows)
    rows += ["| parameter | type | default | meaning |", "|---|---|---|---|"]
    for p in params:
        meaning = p.meaning.replace("|", "\\|") or "(undocumented)"
        rows.append(f"| `{p.name}` | {p.type} | `{p.default}` | {meaning} |")
    rows.append("")
    return "\n".join(rows)


def render() -> str:
    from netfl.registry import strategies

    head = textwrap.dedent(
        """\
        # Selection strategies

        Every registered strategy (`netfl list strategies`), its parameters as
        `selection.params` takes them, their defaults and meaning with the paper's symbol and
        equation. Generated from the classes (`python -m netfl.selection.docs >
        docs/strategies.md`); `netfl show STRATEGY` prints one section. Papers are cited by
        the keys of [references.md](references.md).
        """
    )
    return head + "\n" + "\n".join(section(name) for name in strategies().entries())


if __name__ == "__main__":  # pragma: no cover
    print(render(), end="")
