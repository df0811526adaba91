"""``netfl show NAME``: one strategy's or aggregation rule's reference (as in
docs/strategies.md and docs/aggregation.md)."""

from __future__ import annotations

import argparse

from netfl.errors import NetflError

EXIT_OK = 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    show = sub.add_parser(
        "show",
        help="a strategy's or aggregation rule's parameters, defaults and meaning"
        " (docs/strategies.md, docs/aggregation.md)",
    )
    show.add_argument(
        "strategy",
        metavar="NAME",
        help="a registered strategy or aggregation rule (netfl list)",
    )
    show.add_argument(
        "--markdown",
        action="store_true",
        help="print the Markdown source (as in docs/) instead of rendering it for the terminal",
    )
    show.set_defaults(handler=_show)


def _print(text: str, markdown: bool) -> None:
    """The reference rendered for the terminal by rich (tables drawn, escapes and code marks
    resolved), or its Markdown source with ``--markdown``."""
    if markdown:
        print(text)
        return
    from rich.console import Console
    from rich.markdown import Markdown

    Console().print(Markdown(text))


def _show(args: argparse.Namespace) -> int:
    from netfl.registry import aggregations, strategies

    if args.strategy in aggregations().entries():
        from netfl.learning.aggregation.docs import section as rule_section

        _print(rule_section(args.strategy), args.markdown)
        return EXIT_OK
    from netfl.selection.docs import section

    registry = strategies()
    if args.strategy not in registry:
        from netfl.config.base import suggest

        names = [*registry.entries(), *aggregations().entries()]
        hint = suggest(args.strategy, names)
        if "did you mean" not in hint:
            hint = "; registered strategies and aggregation rules: " + ", ".join(names)
        raise NetflError(f"show: unknown strategy or aggregation rule '{args.strategy}'{hint}")
    _print(section(args.strategy), args.markdown)
    return EXIT_OK
