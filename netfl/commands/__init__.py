"""Subcommands beyond simulate/validate/list: report, compare, sweep, calibrate, show.

Each module adds its parsers with ``add_parsers(sub)``; a parser's ``handler`` default is
the function :func:`netfl.cli.main` calls with the parsed arguments.
"""

from __future__ import annotations

import argparse

from netfl.commands import analysis, calibrate, show, sweep


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    analysis.add_parsers(sub)
    sweep.add_parsers(sub)
    calibrate.add_parsers(sub)
    show.add_parsers(sub)
