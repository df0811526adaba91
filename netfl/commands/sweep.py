"""``netfl sweep SWEEP.yaml``: run a parameter sweep locally or on Ray."""

from __future__ import annotations

import argparse
import sys

from netfl.errors import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"a GPU fraction is in (0, 1], got {text}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"runs in parallel: at least 1, got {text}")
    return value


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sweep = sub.add_parser(
        "sweep", help="run a sweep file (base scenario x grid x seeds); resumes where it stopped"
    )
    sweep.add_argument("sweep", help="sweep YAML file")
    sweep.add_argument("--out", help="sweep directory (default: sweeps/<sweep name>)")
    sweep.add_argument("--backend", choices=["local", "ray"], default="local")
    sweep.add_argument(
        "--jobs", type=_positive, default=1, help="local backend: runs in parallel (default 1)"
    )
    sweep.add_argument(
        "--address",
        help="Ray backend: cluster address, or 'auto' for a running cluster (default: start"
        " a local Ray instance)",
    )
    sweep.add_argument(
        "--gpu-fraction",
        type=_fraction,
        default=0.25,
        help="Ray backend: GPUs per run for runs that train on a GPU (default 0.25)",
    )
    sweep.add_argument("--dry-run", action="store_true", help="list the runs; run nothing")
    sweep.add_argument(
        "--no-plugins",
        dest="no_plugins",
        action="store_true",
        help="accept only registered names: a run naming package.module:Class (which imports"
        " and runs that module's code) is refused",
    )
    sweep.add_argument("--quiet", action="store_true", help="no progress display")
    sweep.set_defaults(handler=_sweep)


def _sweep(args: argparse.Namespace) -> int:
    from netfl.errors import ScenarioError
    from netfl.sweep import load_sweep, run_sweep

    try:
        sweep = load_sweep(args.sweep)
    except ScenarioError as exc:
        for line in exc.lines():
            print(f"error: {line}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.dry_run:
        for run in sweep.runs:
            print(f"{run.run_id}  {run.label}")
        print(f"{len(sweep.runs)} runs", file=sys.stderr)
        return EXIT_OK
    result = run_sweep(
        sweep,
        args.out,
        backend=args.backend,
        jobs=args.jobs,
        address=args.address,
        gpu_fraction=args.gpu_fraction,
        progress="quiet" if args.quiet else "auto",
    )
    failed, diverged = result.failed, result.diverged
    done = len(result.index) - len(failed) - len(diverged)
    print(
        f"sweep: {done}/{len(result.index)} runs completed ({result.skipped} already done),"
        f" {len(failed)} failed, {len(diverged)} diverged; index:"
        f" {result.sweep_dir / 'index.csv'}",
        file=sys.stderr,
    )
    for row in failed.itertuples():
        print(f"  failed {row.run_id} [{row.label}]: {row.error}", file=sys.stderr)
    for row in diverged.itertuples():
        print(f"  diverged {row.run_id} [{row.label}] at round {row.error}", file=sys.stderr)
    print(result.sweep_dir)
    return EXIT_FAILED if len(failed) or len(diverged) else EXIT_OK
