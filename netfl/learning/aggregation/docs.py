"""The aggregation rules' reference, generated from the code: ``docs/aggregation.md``.

A rule's parameters are declared once, as its keyword-only arguments (name, type with its
bounds, default) and in its docstring's ``Parameters`` section (meaning);
``python -m netfl.learning.aggregation.docs > docs/aggregation.md`` renders every rule,
``netfl show RULE`` prints one, tests/test_docs.py checks the file is current.
"""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
from typing import Any

from netfl.learning.aggregation.base import SYNCHRONOUS
from netfl.signature_docs import callable_parameters


def section(name: str, standalone: bool = True) -> str:
    """One rule's reference in markdown (``standalone``: with the server optimizers' shared
    part, which :func:`render` prints once)."""
    from netfl.registry import aggregations

    registry = aggregations()
    entry = registry.entries()[name]
    rule = registry.load(name)
    module = sys.modules[rule.__module__]
    protocols = ", ".join(sorted(getattr(rule, "protocols", SYNCHRONOUS)))
    rows = [f"## `{name}`", "", entry.summary + ".", "", _plain(module.__doc__), ""]
    if hasattr(module, "adaptive_step"):  # the three of Reddi et al.'s Alg. 2
        shared = sys.modules[module.adaptive_step.__module__].__doc__
        rows += [
            _plain(shared)
            if standalone
            else f"The shared part: [{ADAPTIVE}](#{_anchor(ADAPTIVE)}).",
            "",
        ]
    rows += [f"Protocols: {protocols}.", ""]
    params = callable_parameters(rule, rule, keyword_only=True)
    if not params:
        return "\n".join([*rows, "No parameters.", ""])
    rows += ["| parameter | type | default | meaning |", "|---|---|---|---|"]
    for p in params:
        meaning = p.meaning.replace("|", "\\|") or "(undocumented)"
        rows.append(f"| `{p.name}` | {p.type} | `{p.default}` | {meaning} |")
    return "\n".join([*rows, ""])


def rule_lines(rule: Any) -> list[str]:
    """``netfl list --verbose``: the protocols and parameters of a rule, one a line."""
    lines = [f"protocols: {', '.join(sorted(getattr(rule, 'protocols', SYNCHRONOUS)))}"]
    for p in callable_parameters(rule, rule, keyword_only=True):
        lines.append(f"{p.name} ({p.type}, default {p.default})")
    return lines


ADAPTIVE = "Server optimizers (Reddi et al. 2021, Alg. 2)"


def _anchor(heading: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-")


def _plain(doc: Any) -> str:
    """A docstring as markdown: Sphinx roles become code."""
    text = inspect.cleandoc(doc or "")
    return re.sub(r":(?:mod|func|class|meth|data):`~?([^`]+)`", r"`\1`", text).replace("``", "`")


def render() -> str:
    from netfl.registry import aggregations

    head = textwrap.dedent(
        """\
        # Aggregation rules

        How the server turns the round's client models into the next global model
        (`fl.aggregation: {name: RULE, params: {...}}`; `netfl list` shows the rules,
        `netfl show RULE` one of them). Generated from the code (`python -m
        netfl.learning.aggregation.docs > docs/aggregation.md`).

        Notation: w_t the global model, w_k client k's model after its local update,
        Delta_k = w_k - w_t, p_k = n_k / sum_j n_j over the clients aggregated, and
        Delta_t = sum_k p_k Delta_k (FedAvg's update, the server optimizers'
        pseudo-gradient). A rule moves the model's parameters; the buffers (batch-norm
        statistics) are averaged with FedAvg. A server optimizer's state (momentum, second
        moments) is part of a checkpoint, so `--resume` continues it. Under fedbuff and
        fedasync a server optimizer takes the protocol's aggregated update (FedBuff's
        staleness-weighted buffer, FedAsync's mixing step) as Delta_t. FedProx's
        proximal term is a client objective, not a rule: `learning.prox_mu`.
        """
    )
    from netfl.learning.aggregation import adaptive

    shared = f"## {ADAPTIVE}\n\n{_plain(adaptive.__doc__)}\n"
    rules = "\n".join(section(name, standalone=False) for name in aggregations().entries())
    return head + "\n" + shared + "\n" + rules + "\n" + _stability()


def _stability() -> str:
    """The stability conditions validate warns on, and what a diverged run records."""
    from netfl.learning import divergence, stability

    return (
        f"## Stability and divergence\n\n{_plain(stability.__doc__)}\n\n"
        f"{_plain(divergence.__doc__)}\n"
    )


if __name__ == "__main__":  # pragma: no cover
    print(render(), end="")
