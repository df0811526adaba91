"""Reading run directories back: :func:`load_run` -> :class:`Run`, :func:`load_runs` -> ``Runs``.

A :class:`Run` gives the resolved scenario (typed and as a mapping), the run's tables as
pandas DataFrames (read on first use) and the analyses built on them (phases, time to
accuracy, accuracy at a time, RB usage, fairness). Several runs are a
:class:`~netfl.trace.runs.Runs` (:mod:`netfl.trace.runs`).
"""

from __future__ import annotations

import glob as globlib
import json
import math
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import yaml

from netfl.errors import MissingDataError, RunReadError, ScenarioError
from netfl.recorder.streaming import STRATEGY, TIMELINE_FILE, read_parts
from netfl.rundir import is_run_directory
from netfl.trace import learning_metrics, metrics, phases, rb
from netfl.trace.runs import Runs

if TYPE_CHECKING:
    from netfl.config import Scenario

#: Optional per-round strategy records (columns: :mod:`netfl.recorder.strategy`).
STRATEGY_FILE = "strategy.parquet"


def short_form(data: dict[str, Any]) -> Any:
    """The number a scenario may write for a mapping the schema expands it to, or None:
    ``{dist: constant, value: v}`` (a distribution key given a number,
    :mod:`netfl.config.dist`) and ``{kind: bernoulli, p: v}`` (an availability given a
    number, :mod:`netfl.config.devices`) are ``v``."""
    if data.keys() == {"dist", "value"} and data["dist"] == "constant":
        return data["value"]
    if data.keys() == {"kind", "p"} and data["kind"] == "bernoulli":
        return data["p"]
    return None


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings and lists of mappings -> ``{"a.b.0.c": leaf}``.

    Empty mappings add no key; lists of plain values become a tuple (hashable, so they can
    be grouped by). A mapping that stands for a number (:func:`short_form`) is that number
    under its own key, as a scenario or a sweep writes it: a sweep over
    ``devices.groups.0.mobility.speed_mps`` gives the column ``...speed_mps``, not
    ``...speed_mps.value``.
    """
    out: dict[str, Any] = {}
    if isinstance(data, dict) and prefix and (number := short_form(data)) is not None:
        out[prefix[:-1]] = number
    elif isinstance(data, dict):
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}{key}."))
    elif isinstance(data, list) and any(isinstance(item, dict | list) for item in data):
        for index, value in enumerate(data):
            out.update(flatten(value, f"{prefix}{index}."))
    elif isinstance(data, list):
        out[prefix[:-1]] = tuple(data)
    else:
        out[prefix[:-1]] = data
    return out


def read_table(path: Path) -> pd.DataFrame:
    """Read one Parquet table; a missing or corrupted file is a :class:`RunReadError` naming it."""
    if not path.is_file():
        raise RunReadError(f"{path}: missing (the run may have stopped before writing it)")
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise RunReadError(f"{path}: not a readable Parquet file ({exc})") from None


class Run:
    """One run directory, read lazily.

    Attributes
    ----------
    path
        The run directory.
    scenario_dict, scenario
        The resolved scenario as a mapping and as the typed :class:`~netfl.config.Scenario`.
    summary
        ``summary.json`` as a flat Series (nested keys dotted: ``versions.torch``).
    timeline, rounds, clients
        The run's tables (``timeline.parquet``, ``rounds.parquet``, ``clients.parquet``).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            raise RunReadError(f"{self.path}: not a directory")
        if not is_run_directory(self.path):
            raise RunReadError(
                f"{self.path}: not a netfl run directory (no summary.json or"
                " scenario.resolved.yaml)"
            )

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"

    @property
    def id(self) -> str:
        return self.path.name

    # -- files ----------------------------------------------------------------------------

    @cached_property
    def scenario_dict(self) -> dict[str, Any]:
        path = self.path / "scenario.resolved.yaml"
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
            raise RunReadError(f"{path}: cannot read the resolved scenario ({exc})") from None
        if not isinstance(data, dict):
            raise RunReadError(f"{path}: not a scenario mapping")
        return data

    @cached_property
    def scenario(self) -> Scenario:
        from netfl.scenario import scenario_from_data

        source = str(self.path / "scenario.resolved.yaml")
        try:
            return scenario_from_data(self.scenario_dict, source=source, check_registry=False)
        except ScenarioError as exc:
            raise RunReadError(
                f"{exc} (written by another netfl version? use run.scenario_dict)"
            ) from None

    @cached_property
    def summary(self) -> pd.Series:
        path = self.path / "summary.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RunReadError(f"{path}: cannot read the summary ({exc})") from None
        values = {k: (np.nan if v is None else v) for k, v in flatten(data).items()}
        return pd.Series(values, dtype=object, name=self.id)

    @cached_property
    def timeline(self) -> pd.DataFrame:
        """``timeline.parquet``, or the parts of it a run still going or killed has written
        (:mod:`netfl.recorder.streaming`)."""
        parts = read_parts(self.path)
        return read_table(self.path / TIMELINE_FILE) if parts is None else parts

    @cached_property
    def rounds(self) -> pd.DataFrame:
        return read_table(self.path / "rounds.parquet")

    @cached_property
    def clients(self) -> pd.DataFrame:
        return read_table(self.path / "clients.parquet")

    @cached_property
    def strategy(self) -> pd.DataFrame:
        """The strategy's internal scores per round (``strategy.parquet``, long format).

        Empty for strategies that expose no scores (``random``).
        """
        parts = read_parts(self.path, STRATEGY)
        if parts is not None:  # a run still going, or killed
            return parts
        path = self.path / STRATEGY_FILE
        if not path.exists():
            raise MissingDataError(f"{path}: not written (a run from an older netfl)")
        return read_table(path)

    @property
    def params(self) -> dict[str, Any]:
        """The resolved scenario as flat dotted keys."""
        return flatten(self.scenario_dict)

    @property
    def status(self) -> str:
        return str(self.summary.get("status", "unknown"))

    # -- analyses -------------------------------------------------------------------------

    @cached_property
    def _phase_table(self) -> pd.DataFrame:
        return phases.phase_table(self.timeline)

    def phases(self) -> pd.DataFrame:
        """Per (round, client) phase table (download, wait, compute, upload wait, upload).

        See :func:`netfl.trace.phases.phase_table` for the columns. Built from the timeline
        once per run (a Gantt chart and the report's phase statistics both use it).
        """
        return self._phase_table

    def phase_intervals(self) -> pd.DataFrame:
        """One row per (round, client, phase) with start and end times (for Gantt charts)."""
        return phases.phase_intervals(self.phases())

    def target_accuracy(self, target: float | None = None) -> float | None:
        if target is not None:
            return target
        learning = self.scenario_dict.get("learning") or {}
        value = learning.get("target_accuracy")
        return None if value is None else float(value)

    def time_to_accuracy(self, target: float | None = None) -> float:
        """Simulated s until the accuracy first reached ``target`` (default: the scenario's
        ``learning.target_accuracy``); NaN if never."""
        chosen = self.target_accuracy(target)
        if chosen is None:
            raise MissingDataError(f"{self.path}: no target given and the scenario sets none")
        return metrics.time_to_accuracy(self.rounds, chosen)

    def accuracy_at(self, t_s: float | Sequence[float] | np.ndarray) -> np.ndarray:
        """Accuracy of the global model at simulated time(s) ``t_s`` (last evaluation before)."""
        return metrics.accuracy_at(self.rounds, t_s)

    def rb_usage(self, n_rb_total: float | None = None) -> pd.DataFrame:
        """RBs in use over time per direction (see :func:`netfl.trace.rb.rb_usage`)."""
        try:
            return rb.rb_usage(self.timeline, n_rb_total)
        except MissingDataError as exc:
            raise MissingDataError(f"{self.path}: {exc}") from None

    def staleness(self) -> pd.Series:
        """Each aggregated update's staleness in global versions (rounds.parquet's
        ``staleness``; all 0 for synchronous protocols and for runs written before it)."""
        rounds = self.rounds
        if "staleness" not in rounds:
            return pd.Series(
                np.zeros(int(rounds["n_completed"].sum()), dtype=int), name="staleness"
            )
        values = np.concatenate([np.zeros(0, dtype=int), *rounds["staleness"]])
        return pd.Series(values.astype(int), name="staleness")

    def uplink_busy_fraction(self) -> float:
        """Share of the run's simulated time (0 to its last round's end) with at least one
        FL upload on the air: the union of the clients' ``upload_start`` -> ``upload_end``
        intervals (an upload cut by a drop, a deadline or a cancel ends there), whichever
        cell carries it; background traffic does not count
        (:func:`netfl.trace.metrics.busy_fraction`)."""
        end_s = float(self.rounds["t_end_s"].max()) if len(self.rounds) else math.nan
        return metrics.busy_fraction(self.timeline, "upload_start", "upload_end", end_s)

    def upload_rates_bps(self) -> pd.Series:
        """Each completed FL upload's achieved rate: its bits over its duration, from the
        timeline's ``upload_end`` rows, in time order. That is what the upload got, with
        the cell's load, fading, handovers and scheduler; ``clients.parquet``'s
        ``rate_ul_bps`` (and ``summary.json``'s ``rate_ul_mean_bps``) is the nominal rate
        at placement instead (alone on the link, unfaded)."""
        ends = self.timeline[self.timeline["kind"] == "upload_end"]
        bits = ends["bits"].to_numpy(float)
        duration_s = ends["duration_s"].to_numpy(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            rates = np.where(duration_s > 0, bits / duration_s, np.nan)
        return pd.Series(rates, index=ends.index, name="rate_bps")

    def selection_counts(self) -> pd.Series:
        """Times each client was selected, indexed by client id (all clients, zeros included)."""
        counts = self.clients.set_index("client")["n_selected"]
        return counts.astype("int64")

    def fairness(self) -> float:
        """Jain's index of the per-client selection counts (eq. (3), Cho et al. 2020)."""
        return metrics.jain_index(self.selection_counts().to_numpy())

    def distinct_selected(self) -> pd.Series:
        """Clients selected at least once, after each round (Na et al. 2024 Fig. 4)."""
        rounds = self.rounds.sort_values("round")
        counts = learning_metrics.distinct_selected(rounds["selected"], len(self.clients))
        return pd.Series(counts, index=pd.Index(rounds["round"], name="round"), name="distinct")

    def selection_histogram(self) -> pd.Series:
        """Number of clients selected in exactly f rounds, indexed by f (Na et al. 2024 Fig. 5)."""
        counts = np.bincount(self.selection_counts().to_numpy())
        return pd.Series(counts, index=pd.Index(range(len(counts)), name="times"), name="clients")

    def client_losses(self) -> pd.DataFrame:
        """Round x client losses F_k(w) of the global model at each evaluation.

        From the ``client_loss`` timeline rows that ``learning.fairness_loss`` writes; a
        :class:`MissingDataError` if the run has none.
        """
        matrix = learning_metrics.client_loss_matrix(self.timeline)
        if matrix.empty:
            raise MissingDataError(
                f"{self.path}: no client_loss rows (run with learning.fairness_loss: train or test)"
            )
        return matrix

    def loss_fairness(self) -> pd.Series:
        """Jain's index of the clients' losses at each evaluation (eq. (3) of Cho et al. 2020), by
        round."""
        return learning_metrics.loss_fairness(self.client_losses())

    def global_loss(self) -> pd.Series:
        """F(w) = sum_k p_k F_k(w) at each evaluation, by round (eq. (1) of Cho et al. 2020): the
        global
        training objective with ``fairness_loss: train``."""
        sizes = self.clients.sort_values("client")["n_samples"].to_numpy(float)
        return learning_metrics.weighted_loss(self.client_losses(), sizes)


def _sweep_run_dirs(path: Path) -> list[Path] | None:
    """The run directories of a sweep directory, or None if ``path`` is not a sweep."""
    from netfl.recorder.sweep_index import is_sweep_directory, read_index

    if not is_sweep_directory(path):
        return None
    index = read_index(path)
    dirs = [path / rel for rel in index["run_dir"]]
    return [d for d in dirs if is_run_directory(d)]


def _expand(spec: str | Path | Iterable[str | Path]) -> list[Path]:
    if isinstance(spec, str | Path):
        path = Path(spec)
        if path.is_dir():
            dirs = _sweep_run_dirs(path)
            return dirs if dirs is not None else [path]
        matches = sorted(globlib.glob(str(spec)))
        if not matches:
            raise RunReadError(f"{spec}: no such run directory, and no path matches it")
        return [Path(m) for m in matches if Path(m).is_dir()]
    out: list[Path] = []
    for item in spec:
        out += _expand(item)
    return out


def load_run(path: str | Path) -> Run:
    """Open a run directory written by ``netfl simulate`` (tables are read on first use).

    Raises
    ------
    RunReadError
        ``path`` is not a directory or not a netfl run directory.
    """
    return Run(path)


def load_runs(spec: str | Path | Iterable[str | Path]) -> Runs[Run]:
    """Open several runs: a glob (``"runs/quickstart-*"``), a sweep directory (its runs), a
    run directory, or a list of any of these.

    Raises
    ------
    RunReadError
        Nothing matches, or a matching directory is not a netfl run (named).
    """
    paths = _expand(spec)
    if not paths:
        raise RunReadError(f"{spec}: matches no run directory")
    return Runs(Run(p) for p in paths)
