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
    show.set_defaults(handler=_show)


def _show(args: argparse.Namespace) -> int:
    from netfl.registry import aggregations, strategies

    if args.strategy in aggregations().entries():
        from netfl.learning.aggregation.docs import section as rule_section

        print(rule_section(args.strategy))
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
    print(section(args.strategy))
    return EXIT_OK
