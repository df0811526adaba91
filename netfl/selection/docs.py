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
import textwrap
from typing import Any

from netfl.signature_docs import Param, callable_parameters

__all__ = ["Param", "parameters", "render", "section"]


def parameters(cls: Any) -> list[Param]:
    """The parameters of a strategy class, as ``selection.params`` takes them."""
    return callable_parameters(cls.__init__, cls)


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
