"""Run a scenario: build (elaboration) -> run the SimPy environment -> write the run directory.

The run directory is written in a ``finally`` block: a run that fails or is interrupted
(Ctrl-C) still leaves its resolved scenario, everything recorded so far, and a
``summary.json`` whose ``status`` says how it ended.
"""

from __future__ import annotations

import contextlib
import math
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from netfl._version import __version__
from netfl.checkpoint.resume import OpenRun, open_run
from netfl.checkpoint.session import Checkpointer, pickled_strategy
from netfl.checkpoint.store import CheckpointError, scenario_digest
from netfl.config import Scenario
from netfl.errors import DiskFullError, Diverged, ScenarioError, Terminated
from netfl.recorder import strategy
from netfl.recorder.streaming import (
    STRATEGY,
    TIMELINE,
    TableStream,
    timeline_stream,
)
from netfl.recorder.tables import RoundRecord, rounds_table
from netfl.registry import plugin_error
from netfl.resources import disk_problems
from netfl.rundir import (
    RunDirLock,
    check_path_length,
    default_run_dir,
    disk_full,
    lock_run_dir,
    no_room_reason,
    prepare_run_dir,
    write_json,
    write_parquet,
    write_text,
)
from netfl.scenario import dump_scenario
from netfl.stopped import clients_of, write_what_fits
from netfl.world import World, build_world

_LIBRARIES = ("numpy", "scipy", "simpy", "torch", "pandas", "pyarrow", "pydantic")


@dataclass(frozen=True)
class RunResult:
    """Where a run was written and its summary."""

    run_dir: Path
    summary: dict[str, Any]


def library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in _LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def time_to_target(records: list[RoundRecord], target: float | None) -> tuple[float, float]:
    """Simulated time, and rounds (1-based count), until the accuracy first reached
    ``target`` (NaN if never): :mod:`netfl.trace.metrics` on the rounds so far, so the
    summary and ``netfl.load_run`` agree."""
    if target is None or not records:
        return math.nan, math.nan
    from netfl.trace.metrics import rounds_to_accuracy, time_to_accuracy  # imports pandas

    rounds = rounds_table(records).to_pandas()
    return time_to_accuracy(rounds, target), rounds_to_accuracy(rounds, target)


def _summary(
    world: World, status: str, wall_s: float, started: datetime, error: str | None
) -> dict[str, Any]:
    scenario = world.scenario
    records = world.server.records
    finished = [r for r in records if not math.isnan(r.t_end_s)]
    evaluated = [r for r in finished if not math.isnan(r.accuracy)]
    target = scenario.learning.target_accuracy if scenario.learning else None
    t_target, round_target = time_to_target(finished, target)
    rate_ul = world.network.rate_ul_bps
    return {
        "netfl_version": __version__,
        "versions": library_versions(),
        "name": scenario.name,
        "seed": scenario.seed,
        "status": status,
        "error": error,
        "started_utc": started.isoformat(timespec="seconds"),
        "rounds": len(finished),
        "sim_time_s": float(world.env.now),
        "wall_time_s": wall_s,
        "n_clients": world.population.n_clients,
        "model_size_bits": world.server.model_size_bits,
        "final_accuracy": evaluated[-1].accuracy if evaluated else math.nan,
        "final_loss": evaluated[-1].loss if evaluated else math.nan,
        "target_accuracy": target,
        "time_to_target_s": t_target,
        "rounds_to_target": None if math.isnan(round_target) else int(round_target),
        "rate_ul_mean_bps": float(np.mean(rate_ul)),
        "rate_ul_max_bps": float(np.max(rate_ul)),
        "rate_dl_mean_bps": float(np.mean(world.network.rate_dl_bps)),
        **_radio_summary(world),
        "device": str(getattr(world.learner, "device", "none")),
        "training_path": _training_path(world),
    }


def _training_path(world: World) -> str:
    """Which loop trained the clients (``learning.backend`` and the model decide)."""
    return str(getattr(world.learner, "training_path", "none"))


def _radio_summary(world: World) -> dict[str, float]:
    """Optional radio figures (RB utilisation) from networks that offer ``summary()``."""
    summary = getattr(world.network, "summary", None)
    return summary() if callable(summary) else {}


def write_results(
    world: World,
    run_dir: Path,
    summary: dict[str, Any],
    clock_s: float | None = None,
    streams: Sequence[TableStream] = (),
    resumable: bool = False,
) -> None:
    """Write the tables and the summary (atomic per file).

    The tables in ``streams`` are made of the parts written during the run
    (:mod:`netfl.recorder.streaming`); ``resumable`` (a run that stopped with a checkpoint)
    keeps the strategy's parts, which ``--resume`` continues from. The others are written
    from memory.

    With ``clock_s`` (the :func:`time.perf_counter` reading at the run's start), the
    summary gets ``wall_write_s`` (writing the tables) and ``wall_total_s`` (from
    ``clock_s`` to the tables written) before it is written."""
    write_start = time.perf_counter()
    streamed = {stream.table: stream for stream in streams}
    if TIMELINE in streamed:
        streamed[TIMELINE].finish()
    else:
        write_parquet(run_dir / "timeline.parquet", world.timeline.to_arrow(sort_by_time=True))
    write_parquet(run_dir / "rounds.parquet", rounds_table(world.server.records))
    write_parquet(run_dir / "clients.parquet", clients_of(world))
    if STRATEGY in streamed:
        streamed[STRATEGY].finish(keep_parts=resumable)
    else:
        write_parquet(run_dir / "strategy.parquet", world.server.score_log.to_arrow())
    if clock_s is not None:
        end_s = time.perf_counter()
        summary["wall_write_s"] = end_s - write_start
        summary["wall_total_s"] = end_s - clock_s
    write_json(run_dir / "summary.json", summary)


def simulate(
    scenario: Scenario,
    out: str | Path | None = None,
    *,
    force: bool = False,
    on_round: Callable[[RoundRecord], None] | None = None,
    on_start: Callable[[World], None] | None = None,
) -> RunResult:
    """Run ``scenario`` and write its run directory.

    Parameters
    ----------
    scenario
        A validated scenario (see :func:`netfl.load_scenario`).
    out
        Run directory; default ``<output.root>/<name>-<UTC time>``. An existing non-empty
        directory is refused unless ``force`` (and then only if it is a netfl run).
    on_round
        Called after every round with its record (progress display).
    on_start
        Called once the world is built, before time starts.

    Raises
    ------
    KeyboardInterrupt, Exception
        Re-raised after the run directory has been written with ``status`` set to
        ``interrupted`` or ``failed`` (and, with ``fl.checkpoint_every``, a checkpoint of
        the last completed round, which :func:`resume` continues from).
    """
    started = datetime.now(UTC)
    clock_s = time.perf_counter()  # one clock for the summary, from the call on
    problems = disk_problems(scenario, Path(out) if out is not None else Path(scenario.output.root))
    if problems:
        raise ScenarioError(problems)
    run_dir = (
        Path(out)
        if out is not None
        else default_run_dir(scenario.output.root, scenario.name, started)
    )
    check_path_length(run_dir)
    # Elaborate first: bad input (missing dataset files, impossible draws, a strategy
    # that cannot be checkpointed) fails here, before anything is written.
    world = _built(scenario, on_round)
    resolved = dump_scenario(scenario)
    if scenario.fl.checkpoint_every is not None:
        pickled_strategy(world)
    with lock_run_dir(run_dir) as lock:
        prepare_run_dir(run_dir, force=force)
        write_text(run_dir / "scenario.resolved.yaml", resolved)
        write_json(run_dir / "summary.json", {"netfl_version": __version__, "status": "running"})
        checkpoints = None
        if scenario.fl.checkpoint_every is not None:
            checkpoints = Checkpointer(world, run_dir, scenario_digest(resolved))
        return _run(world, run_dir, started, on_start, checkpoints, clock_s, lock)


def resume(
    run: str | Path | OpenRun,
    overrides: Sequence[str] = (),
    *,
    on_round: Callable[[RoundRecord], None] | None = None,
    on_start: Callable[[World], None] | None = None,
) -> RunResult:
    """Continue the interrupted or failed run in ``run`` (a directory) from its checkpoint.

    The world is rebuilt from the run's ``scenario.resolved.yaml`` and the rounds before
    the checkpoint are re-simulated without training (:mod:`netfl.checkpoint`), so the
    run directory ends as an uninterrupted run's would. Bad input (see
    :func:`netfl.checkpoint.resume.open_run`, which ``run`` may already have been through)
    raises before anything is written; so does a replay that does not reproduce the
    checkpoint.
    """
    started = datetime.now(UTC)
    clock_s = time.perf_counter()
    run_dir = run.run_dir if isinstance(run, OpenRun) else Path(run)
    if not run_dir.is_dir():
        open_run(run_dir, overrides)  # says what is wrong with it
    with lock_run_dir(run_dir) as lock:
        # Checked again under the lock: another process may have resumed it meanwhile.
        opened = open_run(run_dir, overrides)
        world = _built(opened.scenario, on_round)
        checkpoint = opened.checkpoint
        checkpoints = Checkpointer(world, run_dir, checkpoint.scenario_sha256, resume=checkpoint)
        return _run(world, run_dir, started, on_start, checkpoints, clock_s, lock)


def _built(scenario: Scenario, on_round: Callable[[RoundRecord], None] | None) -> World:
    """:func:`build_world`; a plug-in that raises or exits while it is built is bad input
    naming its key."""
    try:
        return build_world(scenario, on_round=on_round)
    except (Exception, SystemExit) as exc:
        raise plugin_error(exc, scenario) from exc


def _run(
    world: World,
    run_dir: Path,
    started: datetime,
    on_start: Callable[[World], None] | None,
    checkpoints: Checkpointer | None,
    clock_s: float,
    lock: RunDirLock,
) -> RunResult:
    """Run the world; write the run directory however it ends (except mid-replay).

    A full disk or a file past the file-size limit (while the run writes its parts or at
    the end) stops the run: the lock's reserved space is given back, ``summary.json``
    says ``failed`` and why, what fits of the tables is written (:func:`write_what_fits`)
    and :class:`DiskFullError` is raised (one line saying what was written, exit 1, from
    the CLI).

    ``summary.json``'s wall times, all on the clock the progress line uses (process
    seconds, :func:`time.perf_counter`): ``wall_build_s`` from the call of
    :func:`simulate` (or :func:`resume`) to the start of the event loop (elaboration,
    the run directory's first files); ``wall_run_s`` the event loop, of which
    ``wall_training_s`` in the learner (local training, polls, aggregation, evaluation);
    ``wall_write_s`` writing the tables; ``wall_total_s`` all of it. ``wall_time_s``
    (build and run: to the end of the simulation) is kept for existing readers."""
    streams = _stream_tables(world, run_dir, checkpoints)
    if on_start is not None:
        on_start(world)
    status, error = "failed", None
    full: DiskFullError | None = None  # the disk filled up
    diverged: Diverged | None = None
    wall_start = time.perf_counter()
    try:
        with _blas_threads(world.scenario):
            world.run()
        if checkpoints is not None and checkpoints.replaying:
            raise CheckpointError(f"{run_dir}: the replay ended before the checkpoint's round")
        status = "completed"
    except Diverged as exc:
        status, diverged = "diverged", exc
        exc.run_dir = str(run_dir)
        raise
    except KeyboardInterrupt as exc:
        status = "terminated" if isinstance(exc, Terminated) else "interrupted"
        if checkpoints is not None:
            checkpoints.save_latest()
        raise
    except (Exception, SystemExit) as exc:
        error = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, OSError) and disk_full(exc):
            full = DiskFullError(run_dir, no_room_reason(exc))
            raise full from exc
        if checkpoints is not None:
            checkpoints.save_latest()
        blamed = plugin_error(exc, world.scenario)
        if blamed is exc:
            raise
        error = str(blamed)
        raise blamed from exc
    finally:
        # A resumed run that stops before its replay is done leaves the directory alone.
        if checkpoints is None or not checkpoints.replaying:
            end_s = time.perf_counter()
            summary = _summary(world, status, end_s - clock_s, started, error)
            summary["wall_build_s"] = wall_start - clock_s
            summary["wall_run_s"] = end_s - wall_start
            summary["wall_training_s"] = world.server.training_s
            summary.update(_checkpoint_summary(checkpoints))
            summary.update(_divergence_summary(diverged))
            resumable = checkpoints is not None and status not in ("completed", "diverged")
            if full is not None:  # the tables may not fit either: what fits
                write_what_fits(world, run_dir, summary, full, lock, streams)
            else:
                try:
                    write_results(world, run_dir, summary, clock_s, streams, resumable)
                except OSError as exc:
                    if not disk_full(exc):
                        raise
                    full = DiskFullError(run_dir, no_room_reason(exc))
                    summary["error"] = f"{type(exc).__name__}: {exc}"
                    write_what_fits(world, run_dir, summary, full, lock, streams)
                    raise full from exc
    return RunResult(run_dir, summary)


def _stream_tables(
    world: World, run_dir: Path, checkpoints: Checkpointer | None
) -> list[TableStream]:
    """Write the timeline and the strategy's scores into ``run_dir`` in parts as rounds
    end, so the rows held stay under a part whatever the rounds. The parts a killed run
    left are removed, except, when resuming, the scores before the checkpoint (the replay
    does not recompute them; the checkpoint holds the rows after them)."""
    server = world.server
    resumed = checkpoints.resume if checkpoints is not None else None
    streams = [
        timeline_stream(world.timeline, run_dir),
        TableStream(
            lambda: server.score_log,
            run_dir,
            STRATEGY,
            strategy.SCHEMA,
            lambda: server.score_log.to_arrow(),
            keep_rows=0 if resumed is None else resumed.score_log.n_drained,
        ),
    ]
    then = server.on_round

    def end_of_round(record: RoundRecord) -> None:
        for stream in streams:
            stream.round_ended()
        if then is not None:
            then(record)

    server.on_round = end_of_round
    return streams


def _blas_threads(scenario: Scenario) -> contextlib.AbstractContextManager[Any]:
    """numpy's BLAS threads for the run: ``learning.threads`` (1 for ``learning: none``),
    so strategies' linear algebra (GPFL, NCCB, RBCS-F) does not spin on a shared CPU."""
    threads = 1 if scenario.learning is None else scenario.learning.threads
    if threads is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=threads, user_api="blas")


def _divergence_summary(diverged: Diverged | None) -> dict[str, Any]:
    """``diverged_round`` and ``divergence`` (the cause), None unless the run diverged."""
    if diverged is None:
        return {"diverged_round": None, "divergence": None}
    return {"diverged_round": diverged.round, "divergence": diverged.cause}


def _checkpoint_summary(checkpoints: Checkpointer | None) -> dict[str, int | None]:
    if checkpoints is None:
        return {"resumed_from_round": None, "checkpoint_round": None}
    return {
        "resumed_from_round": checkpoints.resumed_from_round,
        "checkpoint_round": checkpoints.written_round or None,
    }
