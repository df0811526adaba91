"""``netfl report RUN_DIR`` and ``netfl compare RUN_DIR...``."""

from __future__ import annotations

import argparse
import sys

from netfl.errors import EXIT_OK

#: netfl.trace.compare.LAST_K, without importing pandas to build the parser.
LAST_K = 5


def _accuracy(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"an accuracy is in [0, 1], got {text}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number of evaluations, got {text}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"at least 1 evaluation, got {text}")
    return value


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = sub.add_parser(
        "report", help="write report.html (figures embedded), PNGs and tables for one run"
    )
    report.add_argument("run_dir", help="a run directory written by netfl simulate")
    report.add_argument("--out", help="report folder (default: RUN_DIR/report)")
    report.add_argument("--force", action="store_true", help="replace an existing report folder")
    report.set_defaults(handler=_report)

    comp = sub.add_parser(
        "compare",
        help="compare runs: time to target, final accuracy, time, fairness (mean, 95%% CI)",
    )
    comp.add_argument(
        "runs", nargs="+", help="run directories, globs, or sweep directories (all their runs)"
    )
    comp.add_argument("--out", help="report folder (default: compare-<UTC time>)")
    comp.add_argument(
        "--target",
        type=_accuracy,
        help="target accuracy in [0, 1] (default: the runs' learning.target_accuracy)",
    )
    comp.add_argument(
        "--last-k",
        type=_positive_int,
        default=LAST_K,
        metavar="K",
        help="evaluations averaged beside the final accuracy (accuracy_lastK, with their"
        f" standard deviation; default {LAST_K})",
    )
    comp.add_argument("--force", action="store_true", help="replace an existing report folder")
    comp.set_defaults(handler=_compare)


def _report(args: argparse.Namespace) -> int:
    from netfl.trace.report import write_report

    print(write_report(args.run_dir, args.out, force=args.force))
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    from netfl.rundir import default_run_dir
    from netfl.trace.report import write_comparison

    out = args.out or default_run_dir(".", "compare")
    path, messages = write_comparison(
        args.runs, out, target=args.target, force=args.force, last_k=args.last_k
    )
    for message in messages:
        print(f"warning: {message}", file=sys.stderr)
    print(path)
    return EXIT_OK
