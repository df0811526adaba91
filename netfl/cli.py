"""The ``netfl`` command line.

Exit codes (defined in :mod:`netfl.errors`): 0 success, 1 the run failed (a bug or runtime
error; the run directory says so), 2 bad input (one line naming the file and key), 130
interrupted by Ctrl-C, 143 terminated by SIGTERM (the run directory says
``status: interrupted`` or ``terminated``; with ``fl.checkpoint_every``, ``--resume``
continues it, as it does after SIGKILL, which leaves ``status: running``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import os
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from netfl._version import __version__
from netfl.errors import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    DiskFullError,
    Diverged,
    NetflError,
    RadioWarning,
    ScenarioError,
    ScenarioWarning,
    Terminated,
)

if TYPE_CHECKING:
    from netfl.config import Scenario
    from netfl.progress import RunProgress
    from netfl.simulation import RunResult


def _add_scenario_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario key, e.g. --set fl.rounds=10 (repeatable; YAML values)",
    )
    parser.add_argument(
        "--no-plugins",
        dest="no_plugins",
        action="store_true",
        help="accept only registered names for strategies, channel models, datasets and"
        " models: a scenario naming package.module:Class (which imports and runs that"
        " module's code) is refused; use it for scenarios you do not trust",
    )


class _OneLineParser(argparse.ArgumentParser):
    """argparse's parser whose argument errors are one line, as every error of netfl's is
    (argparse prints its usage banner first): ``error: netfl calibrate: argument --seed:
    ...``, exit 2. Subcommands' parsers are of the same class."""

    def error(self, message: str) -> NoReturn:
        text = " ".join(message.split())
        self.exit(EXIT_BAD_INPUT, f"error: {self.prog}: {text} (see {self.prog} --help)\n")


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """The command line's parser (built once a process: building it costs milliseconds,
    which ``main`` called in a loop, as the fuzz tests do, paid every call)."""
    parser: argparse.ArgumentParser = _OneLineParser(
        prog="netfl",
        description="Simulate federated learning over a mobile network (SimPy + PyTorch).",
    )
    parser.add_argument("--version", action="version", version=f"netfl {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sim = sub.add_parser("simulate", help="run a scenario and write a run directory")
    sim.add_argument(
        "scenario",
        nargs="?",
        default=None,
        help="scenario YAML file or built-in name (default: the built-in quickstart)",
    )
    _add_scenario_options(sim)
    sim.add_argument("--out", help="run directory (default: runs/<name>-<UTC time>)")
    sim.add_argument(
        "--force", action="store_true", help="replace an existing run directory given by --out"
    )
    sim.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help="continue an interrupted or failed run from its checkpoint (fl.checkpoint_every)",
    )
    sim.add_argument("--quiet", action="store_true", help="no progress display")

    val = sub.add_parser("validate", help="check a scenario file and list every problem")
    val.add_argument("scenario", help="scenario YAML file or built-in name")
    _add_scenario_options(val)
    val.add_argument(
        "--print",
        dest="print_resolved",
        action="store_true",
        help="print the resolved scenario (every default filled in), its load plan and its"
        " estimated time, memory and disk as comments",
    )
    val.add_argument(
        "--quiet",
        action="store_true",
        help="print only problems and warnings (the exit status says whether it is valid)",
    )

    lst = sub.add_parser(
        "list", help="list strategies, aggregation rules, channel models, datasets, models"
    )
    lst.add_argument(
        "what",
        nargs="?",
        choices=[
            "strategies",
            "aggregation-rules",
            "channel-models",
            "datasets",
            "models",
            "scenarios",
        ],
        help="only this kind",
    )
    lst.add_argument(
        "--verbose",
        action="store_true",
        help="also each strategy's and aggregation rule's parameters and defaults",
    )

    from netfl.commands import add_parsers  # report, compare, sweep

    add_parsers(sub)
    for command in sub.choices.values():
        # --debug is also taken after the command. SUPPRESS: a command's own default
        # would overwrite a `netfl --debug COMMAND` given before it.
        command.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
        )
    return parser


def _cmd_simulate(args: argparse.Namespace) -> int:
    from netfl.scenario import load_scenario, resolve_source
    from netfl.simulation import simulate

    if args.resume is not None:
        return _cmd_resume(args)
    source, _ = resolve_source(args.scenario)
    scenario = load_scenario(args.scenario, args.overrides)
    progress = _progress(args, scenario)
    try:
        with progress:
            result = simulate(scenario, args.out, force=args.force, on_round=progress.update)
    except ScenarioError as exc:
        exc.source = exc.source or source
        raise ScenarioError(exc.problems, exc.source) from exc
    return _report_run(args, result)


def _progress(args: argparse.Namespace, scenario: Scenario) -> RunProgress:
    from netfl.progress import RunProgress

    return RunProgress(
        scenario.fl.rounds,
        mode="quiet" if args.quiet else "auto",
        every=scenario.output.progress_every_rounds,
    )


def _cmd_resume(args: argparse.Namespace) -> int:
    """``simulate --resume RUN_DIR``: the run's own scenario, in its own directory."""
    from netfl.checkpoint.resume import open_run
    from netfl.simulation import resume

    given = [
        name
        for name, value in (("a scenario", args.scenario), ("--out", args.out))
        if value is not None
    ] + (["--force"] if args.force else [])
    if given:
        raise NetflError(
            f"--resume continues RUN_DIR with its own scenario, in place; drop {given[0]}"
        )
    opened = open_run(args.resume, args.overrides)
    progress = _progress(args, opened.scenario)
    if not args.quiet:
        print(
            f"resuming {opened.run_dir} at round {opened.checkpoint.round}"
            f" (re-simulating the {opened.checkpoint.round} rounds before it without training)",
            file=sys.stderr,
        )
    with progress:
        result = resume(opened, on_round=progress.update)
    return _report_run(args, result)


def _report_run(args: argparse.Namespace, result: RunResult) -> int:
    summary = result.summary
    accuracy = summary["final_accuracy"]
    acc_text = "n/a" if accuracy is None or math.isnan(accuracy) else f"{accuracy:.2%}"
    if not args.quiet:
        print(
            f"done: {summary['rounds']} rounds, {summary['sim_time_s']:,.1f} s simulated,"
            f" final accuracy {acc_text}, {_wall_text(summary)}",
            file=sys.stderr,
        )
    print(result.run_dir)
    return EXIT_OK


def _wall_text(summary: dict[str, Any]) -> str:
    """The closing line's wall times: the total, then where it went (summary.json's
    ``wall_*_s``; the progress line's last wall time is build + run, on the same clock)."""
    total = summary.get("wall_total_s", summary["wall_time_s"])
    parts = [
        f"{label} {summary[key]:.1f} s"
        for label, key in (
            ("build", "wall_build_s"),
            ("run", "wall_run_s"),
            ("of which training", "wall_training_s"),
            ("write", "wall_write_s"),
        )
        if key in summary
    ]
    path = summary.get("training_path", "none")
    if path != "none" and "wall_training_s" in summary:  # which path trained, first word
        parts = [f"{p} ({path.split()[0]})" if p.startswith("of which") else p for p in parts]
    return f"{total:.1f} s wall" + (f" ({', '.join(parts)})" if parts else "")


def _cmd_validate(args: argparse.Namespace) -> int:
    from netfl.resources import disk_problems
    from netfl.scenario import dump_scenario, load_scenario, resolve_source
    from netfl.validation import device_problems, gpu_memory_line

    source, _ = resolve_source(args.scenario)
    try:
        scenario = load_scenario(args.scenario, args.overrides, check_data=True)
        problems = disk_problems(scenario, Path(scenario.output.root))
        problems += device_problems(scenario)
        if problems:
            raise ScenarioError(problems, source)
    except ScenarioError as exc:
        for line in exc.lines():
            print(f"error: {line}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.quiet:
        return EXIT_OK
    from netfl.forecast import forecast
    from netfl.planning import describe

    lines = [*describe(scenario), *forecast(scenario).lines()]
    if args.print_resolved:
        gpu = gpu_memory_line(scenario)
        if gpu is not None:
            print(f"# Estimated if trained on a GPU: {gpu}")
        for line in lines:
            print(f"# {line}")
        print(dump_scenario(scenario), end="")
    else:
        print(
            f"{source}: ok ({scenario.devices.n_clients} clients, strategy"
            f" '{scenario.selection.name}')"
        )
        print("\n".join(lines))
        if scenario.learning is not None and scenario.learning.device == "cuda":
            print(gpu_memory_line(scenario))
    return EXIT_OK


def _cmd_list(args: argparse.Namespace) -> int:
    from netfl import registry
    from netfl.scenario import builtin_scenarios

    sections = {
        "strategies": registry.strategies,
        "aggregation-rules": registry.aggregations,
        "channel-models": registry.channel_models,
        "datasets": registry.datasets,
        "models": registry.models,
    }
    for title, make in sections.items():
        if args.what not in (None, title):
            continue
        entries = make().entries()
        print(f"{title}:")
        if not entries:
            print("  (none registered)")
        width = max((len(name) for name in entries), default=0)
        for name, entry in entries.items():
            print(f"  {name:<{width}}  {entry.summary}")
            if args.verbose and title == "strategies":
                from netfl.selection.docs import parameters, protocols

                cls = make().load(name)
                print(f"  {'':<{width}}    protocols: {protocols(cls)}")
                for p in parameters(cls):
                    print(f"  {'':<{width}}    {p.name} ({p.type}, default {p.default})")
            if args.verbose and title == "aggregation-rules":
                from netfl.learning.aggregation.docs import rule_lines

                for line in rule_lines(make().load(name)):
                    print(f"  {'':<{width}}    {line}")
    if args.what in (None, "scenarios"):
        print("scenarios:")
        found = builtin_scenarios()
        width = max((len(name) for name in found), default=0)
        for name, summary in found.items():
            print(f"  {name:<{width}}  {summary}")
    return EXIT_OK


def _show_scenario_warnings() -> None:
    """Print every warning as one line: ``warning: key: message`` for netfl's own (they
    name their key), ``warning: Category: message`` for a library's, never the source
    line Python shows by default (``--debug`` keeps that)."""
    default = warnings.showwarning
    if getattr(default, "netfl", False):
        return

    def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if _debug:
            default(message, category, *args, **kwargs)
            return
        text = " ".join(str(message).split())
        if issubclass(category, ScenarioWarning | RadioWarning) or _own(args):
            print(f"warning: {text}", file=sys.stderr)
        else:
            print(f"warning: {category.__name__}: {text}", file=sys.stderr)

    show.netfl = True  # type: ignore[attr-defined]
    warnings.showwarning = show


def _own(args: tuple[Any, ...]) -> bool:
    """Whether a warning was raised from netfl's code (its ``filename`` argument)."""
    filename = str(args[0]) if args else ""
    return Path(filename).resolve().is_relative_to(Path(__file__).resolve().parent)


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (in the main thread only, where
    Python delivers signals), so a terminated run writes its directory as after Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: Any) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


#: Commands after which :func:`entry` leaves the process at once (see there).
_FAST_EXIT = frozenset({"simulate"})
_command: str | None = None
_debug = False


def entry() -> None:
    """The ``netfl`` console script and ``python -m netfl``: :func:`main`, then exit.

    After ``simulate`` has written and closed every file of its run directory and printed
    its last line, the interpreter's teardown (garbage-collecting torch's and pandas'
    modules) took another 0.8 s of a 3.4 s quickstart (docs/benchmarks.md); the process
    leaves with ``os._exit`` after flushing stdout and stderr instead. Other commands, and
    :func:`main` called from Python, exit normally.
    """
    code = main()
    if _command in _FAST_EXIT:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    global _command, _debug
    args = _parser().parse_args(argv)
    _command = args.command
    _debug = bool(getattr(args, "debug", False))
    _show_scenario_warnings()
    commands = {"simulate": _cmd_simulate, "validate": _cmd_validate, "list": _cmd_list}
    try:
        handler = commands.get(args.command) or args.handler
        with _sigterm_raises():
            if getattr(args, "no_plugins", False):
                from netfl.registry_entry import no_plugins

                with no_plugins():
                    return int(handler(args))
            return int(handler(args))
    except NetflError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (DiskFullError, Diverged) as exc:
        if args.debug:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except Terminated:
        print("terminated: the run directory holds what was recorded so far", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print("interrupted: the run directory holds what was recorded so far", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader left (`netfl list | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        print(f"error: the run failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("(run again with --debug for the traceback)", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
