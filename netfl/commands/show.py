"""``netfl show STRATEGY``: one strategy's reference (as in docs/strategies.md)."""

from __future__ import annotations

import argparse

from netfl.errors import NetflError

EXIT_OK = 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    show = sub.add_parser(
        "show", help="a strategy's parameters, defaults and meaning (docs/strategies.md)"
    )
    show.add_argument("strategy", help="a registered strategy name (netfl list strategies)")
    show.set_defaults(handler=_show)


def _show(args: argparse.Namespace) -> int:
    from netfl.registry import strategies
    from netfl.selection.docs import section

    registry = strategies()
    if args.strategy not in registry:
        raise NetflError(f"show: {registry.unknown_message(args.strategy)}")
    print(section(args.strategy))
    return EXIT_OK
