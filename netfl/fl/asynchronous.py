"""The asynchronous FL server (FedAsync, FedBuff) as a SimPy process.

The server keeps ``fl.concurrency`` clients training at any time. Each client runs the
FedCS steps on its own (download, update, upload: a one-client
:class:`~netfl.fl.exchange.Exchange`) on the global model version it downloaded; when it
finishes or leaves, its slot frees and the strategy picks whom to start next among the
candidates not already training. An arriving update is ``t`` versions stale when ``t``
aggregations happened since its download. The protocol's rule
(:mod:`netfl.fl.protocols`) aggregates every ``buffer_size`` arrivals (1 for FedAsync) into
the next version; each version is a row of ``rounds.parquet``, with the updates it applied
(``completed``), the clients that left since the previous version, and the updates'
staleness. ``fl.rounds`` counts versions.

What a synchronous round does once, the asynchronous server does once per *epoch* of
``concurrency`` client starts, so that per client update the two cost and draw the same:
the devices' and the network's per-round draws (``start_round``) and the resource request,
whose answers are the candidates until the next epoch (a candidate that became unavailable
since drops at once when started). All arrivals of one instant are taken before the freed
slots are refilled. ``fl.deadline_s`` is each client's deadline from the start of its
download. Real training happens when an update is first needed, in one batch for every
client started on the same version (:mod:`netfl.learning.versions`).

An update pays alone for what a synchronous round shares among its clients, so the
per-update path is kept to what it must do (issue 27, ``docs/benchmarks.md``): the pool
rows of the clients in flight are kept as clients start and finish, the strategy's
context gathers the idle candidates and their arrays only if the strategy reads them
(:meth:`~netfl.selection.base.SelectionContext.deferred`; random selection picks by
index: :class:`_IdleCandidates`), and the server waits for arrivals on one event
processed after the others of their instant.
"""

from __future__ import annotations

import bisect
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from netfl.fl.exchange import Exchange, LateEvent, LateTimeout, Outcome
from netfl.fl.feedback import ReportedTimes, round_feedback
from netfl.fl.protocols import AggregationRule
from netfl.fl.server import Server
from netfl.learning.interface import LocalResult, NullLearner
from netfl.recorder.tables import RoundRecord
from netfl.selection.base import SelectionContext, Strategy

#: Consecutive empty refills (nobody training, nobody startable) before a run without a
#: time budget gives up instead of waiting for ever.
MAX_IDLE_TRIES = 10_000


@dataclass(slots=True)
class _Job:
    """A client in flight: the version it trains on and what the strategy saw of it (its
    row of its epoch's pool features, read only for a strategy that observes)."""

    version: int
    exchange: Exchange
    pool_features: dict[str, np.ndarray]
    row: int
    process: simpy.Process | None = None


@dataclass(slots=True)
class _Arrival:
    outcome: Outcome
    version: int
    start_s: float
    pool_features: dict[str, np.ndarray]
    row: int
    result: LocalResult | None = None


class _IdleCandidates:
    """The pool's members not in flight when a selection is made, sorted, without gathering
    them (:class:`~netfl.selection.base.CandidateSource`): a selection per freed slot picks
    one or two of thousands. The ``j``-th is ``pool[j + m]``, ``m`` the rows in flight
    before it: the ``i``-th row in flight (sorted) has ``busy[i] - i`` idle rows before it,
    non-decreasing in ``i``, so ``m`` is a binary search."""

    __slots__ = ("_gathered", "_rows", "busy", "features", "pool", "pool_row")

    def __init__(
        self,
        pool: np.ndarray,
        pool_row: np.ndarray,
        busy: list[int],
        features: dict[str, np.ndarray] | None = None,
    ) -> None:
        # None of these is rewritten once made (a new epoch makes new ones).
        self.pool, self.pool_row, self.features = pool, pool_row, features or {}
        self.busy = busy  # the pool rows in flight, sorted (this selection's own copy)
        self._rows: np.ndarray | None = None
        self._gathered: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.pool) - len(self.busy)

    def at(self, j: int) -> int:
        n = len(self.pool) - len(self.busy)
        if not -n <= j < n:
            raise IndexError(f"candidate {j} of {n}")
        j += n if j < 0 else 0
        busy, before, high = self.busy, 0, len(self.busy)
        while before < high:  # bisect_right on busy[i] - i (a key function costs more)
            mid = (before + high) // 2
            if busy[mid] - mid <= j:
                before = mid + 1
            else:
                high = mid
        return int(self.pool[j + before])

    def contains(self, client: int) -> bool:
        """Whether ``client`` is one of the candidates."""
        if not 0 <= client < len(self.pool_row):
            return False
        row = int(self.pool_row[client])
        if row < 0:
            return False
        at = bisect.bisect_left(self.busy, row)
        return at == len(self.busy) or self.busy[at] != row

    def rows(self) -> np.ndarray:
        """The candidates' rows in the pool."""
        if self._rows is None:
            self._rows = np.delete(np.arange(len(self.pool)), self.busy)
        return self._rows

    def gather(self) -> np.ndarray:
        if self._gathered is None:
            self._gathered = _read_only(self.pool[self.rows()])
        return self._gathered

    def feature(self, name: str) -> np.ndarray:
        """The candidates' values of the pool's feature ``name``."""
        return self.features[name][self.rows()]


class _IdleColumns:
    """The reported times, data sizes and misses of one selection's candidates, gathered
    when the strategy first reads them (the reports are frozen for it before they next
    change: :meth:`ReportedTimes.read_later`)."""

    def __init__(
        self, candidates: _IdleCandidates, reported: ReportedTimes, n_samples: np.ndarray
    ) -> None:
        self.candidates = candidates
        self.reported = reported
        self.n_samples = n_samples
        self.made: dict[str, np.ndarray] = {}
        reported.read_later(self)

    def __call__(self, name: str) -> np.ndarray:
        made = self.made.get(name)
        if made is None:
            source = {
                "update_time_s": self.reported.update_s,
                "upload_time_s": self.reported.upload_s,
                "n_samples": self.n_samples,
                "misses": self.reported.misses,
            }[name]
            made = self.made[name] = source[self.candidates.gather()]
        return made

    def freeze(self) -> None:
        for name in ("update_time_s", "upload_time_s", "n_samples", "misses"):
            self(name)


class AsyncServer(Server):
    """Runs global model versions until ``fl.rounds`` or the time budget."""

    def __init__(self, env: simpy.Environment, *, rule: AggregationRule, **kwargs: Any) -> None:
        super().__init__(env, **kwargs)
        self.rule = rule
        #: False for timing-only runs (``learning: none``): the learner is not called
        #: per update (it would build empty results and coefficients for nothing).
        self.learns = not isinstance(self.learner, NullLearner)
        self.concurrency = self.config.concurrency_in_force
        self.version = 0
        self.version_start_s = 0.0
        self.jobs: dict[int, _Job] = {}
        self.in_flight = np.zeros(self.n_clients, dtype=bool)
        self.arrived: list[_Arrival] = []
        # Fired by the first arrival since the server last took them: processed after the
        # other events of that instant.
        self.wakeup = LateEvent(env)
        self.buffer: list[_Arrival] = []
        self.resolved: list[_Arrival] = []  # since the previous version
        self.n_started = 0
        self.n_selections = 0
        self.epoch = -1
        self.n_idle = 0  # consecutive refills that started nobody with nobody training
        self.pool = np.zeros(0, dtype=np.int64)
        self.pool_features: dict[str, np.ndarray] = {}
        self._feature_names: tuple[str, ...] = ()
        self.pool_row = np.full(self.n_clients, -1, dtype=np.int64)  # -1: not in the pool
        # The pool rows of the clients in flight, sorted: the idle candidates are the
        # others (_IdleCandidates), kept as clients start and finish.
        self._busy_rows: list[int] = []

    # -- the main process ---------------------------------------------------------------

    def run(self) -> Generator[simpy.Event, Any, None]:
        env = self.env
        self.energy.start_round()
        self.timeline.record(env.now, "round_start", 0)
        while not self._finished(self.version):
            yield from self._refill()
            if not self.jobs:
                self._note_idle()
                yield env.timeout(self._idle_wait_s())
                continue
            self.n_idle = 0
            # Every arrival of this instant, then refill: the wakeup the first arrival
            # schedules is processed after the other events of its instant, as is a
            # LateTimeout made now when arrivals came while the server refilled.
            yield self.wakeup if not self.arrived else LateTimeout(env, 0.0)
            for arrival in self._drain():
                if self._finished(self.version):  # the last version is out: not applied
                    self._discard(arrival)
                    continue
                if self._arrive(arrival):
                    yield from self._aggregate()
        yield from self._stop_in_flight()
        self._final_evaluation()

    def _note_idle(self) -> None:
        """Nobody could be started: wait and ask again, but not for ever when there is no
        time budget to end the run (a synchronous run's empty rounds count as rounds)."""
        self.n_idle += 1
        if self.config.time_budget_s is None and self.n_idle >= MAX_IDLE_TRIES:
            raise RuntimeError(
                f"fl.protocol {self.config.protocol}: no client could be started in"
                f" {MAX_IDLE_TRIES} tries {self.config.empty_round_wait_s:g} s apart (version"
                f" {self.version}, t = {self.env.now:g} s); the run would never reach"
                " fl.rounds: set fl.time_budget_s, or check availability and the strategy"
            )

    def _idle_wait_s(self) -> float:
        until = self.env.now + self.config.empty_round_wait_s
        if self.config.time_budget_s is not None:
            until = min(until, self.config.time_budget_s)
        return max(0.0, until - self.env.now)

    def _drain(self) -> list[_Arrival]:
        items, self.arrived = self.arrived, []
        if self.wakeup.triggered:
            self.wakeup = LateEvent(self.env)
        return items

    # -- starting clients ---------------------------------------------------------------

    def _refill(self) -> Generator[simpy.Event, Any, None]:
        free = self.concurrency - len(self.jobs)
        if free <= 0 or self._finished(self.version):
            return
        turned = self.n_started >= (self.epoch + 1) * self.concurrency
        if self.epoch < 0 or turned or (not self.jobs and len(self.pool) == len(self._busy_rows)):
            yield from self._new_epoch()  # an exhausted pool with nobody training: ask again
        idle = _IdleCandidates(self.pool, self.pool_row, self._busy_rows.copy(), self.pool_features)
        ctx = self._idle_context(idle, free)
        self.n_selections += 1
        if type(self.strategy).choose_polled is not Strategy.choose_polled:
            yield from self._poll(ctx, None)  # async strategies poll nobody (the log says)
        if self.config.selection_time_s > 0:
            selected = yield from self._select(ctx, self.version, idle.contains)
        else:  # Server._select without its generator: a selection per freed slot
            selected = self._choose(ctx, idle.contains)
            self._log_selected(ctx, self.version, selected)
        if not selected:
            return
        self.devices.note_selected(self.epoch, selected)
        limit = self._limit(self.env.now)
        for client in selected:
            self._start(client, limit)

    def _idle_context(self, candidates: _IdleCandidates, budget: int) -> SelectionContext:
        """The selection among the idle candidates; its arrays, the candidates' included,
        are gathered only if the strategy reads them (``Server._context`` gathers every
        one)."""
        return SelectionContext.deferred(
            _IdleColumns(candidates, self.reported, self.learner.n_samples),
            self._feature_names,
            candidates.feature,
            round=self.n_selections,
            now_s=self.env.now,
            candidates=candidates,
            budget=budget,
            deadline_s=self.config.deadline_s,
            target=self.config.clients_per_round,
        )

    def _new_epoch(self) -> Generator[simpy.Event, Any, None]:
        """The per-round draws and the resource request, once per ``concurrency`` starts."""
        self.epoch += 1
        self.network.start_round(self.epoch)
        self.devices.start_round(self.epoch)
        pool = yield from self.request.run(self.version, self._limit(self.env.now))
        self.pool = pool
        # A new array, not the old one rewritten: contexts of the last epoch read theirs.
        self.pool_row = np.full(self.n_clients, -1, dtype=np.int64)
        self.pool_row[pool] = np.arange(len(pool))
        self.pool_features = dict(self._features(pool))
        self._feature_names = tuple(self.pool_features)
        self._busy_rows = np.flatnonzero(self.in_flight[pool]).tolist()

    def _start(self, client: int, limit: float | None) -> None:
        """Start ``client``, a candidate of the current pool."""
        exchange = Exchange(self.parts, self.version, [client], self.plan, target=1)
        row = int(self.pool_row[client])
        job = self.jobs[client] = _Job(self.version, exchange, self.pool_features, row)
        self.in_flight[client] = True
        bisect.insort(self._busy_rows, row)  # no longer idle
        self.n_started += 1
        if self.learns:
            with self._training():
                self.learner.start_update(self.version, client)
        job.process = exchange.start_one(limit, self._done)

    def _done(self, outcome: Outcome) -> None:
        """A client's exchange is over (completed or left): its slot is free."""
        client = outcome.client
        job = self.jobs.pop(client)
        self.in_flight[client] = False
        row = int(self.pool_row[client])
        if row >= 0:  # idle again in the current pool
            busy = self._busy_rows
            del busy[bisect.bisect_left(busy, row)]
        self.arrived.append(
            _Arrival(outcome, job.version, job.exchange.start_s, job.pool_features, job.row)
        )
        self.wakeup.fire()

    def _stop_in_flight(self) -> Generator[simpy.Event, Any, None]:
        """At the end: cancel the clients still training (``cancel`` in the timeline)."""
        for job in list(self.jobs.values()):
            if job.process is not None and job.process.is_alive:
                job.process.interrupt("enough")
        if self.jobs:
            yield LateTimeout(self.env, 0.0)
        for arrival in self._drain():
            self._discard(arrival)

    # -- arrivals and aggregation -------------------------------------------------------

    def _discard(self, arrival: _Arrival) -> None:
        """An arrival after the last version (or cancelled at the end): counted, not applied."""
        self._forget(arrival)
        self._count_outcomes([arrival.outcome])

    def _forget(self, arrival: _Arrival) -> None:
        if self.learns:
            with self._training():
                self.learner.cancel_update(arrival.outcome.client)

    def _arrive(self, arrival: _Arrival) -> bool:
        """Take an arrival; whether the buffer is full (aggregate now)."""
        self.resolved.append(arrival)
        if not arrival.outcome.completed:
            self._forget(arrival)
            return False
        if self.learns:  # no result without a model: the feedback's losses stay NaN
            with self._training():
                arrival.result = self.learner.finish_update(arrival.outcome.client)
        self.buffer.append(arrival)
        return len(self.buffer) >= self.rule.buffer_size

    def _aggregate(self) -> Generator[simpy.Event, Any, None]:
        env = self.env
        applied, self.buffer = self.buffer, []
        # Python lists: a version applies a handful of updates (one under FedAsync).
        completed = [a.outcome.client for a in applied]
        versions = [a.version for a in applied]
        staleness = [self.version - v for v in versions]
        if self.learns:  # timing only (learning: none): no model to apply anything to
            clients = np.array(completed, dtype=np.int64)
            coefficients = self.rule.coefficients(
                self.learner.n_samples[clients], np.array(staleness, dtype=np.int64)
            )
            results = [a.result for a in applied if a.result is not None]
            with self._training():
                self.learner.apply_updates(results, versions, coefficients, self.rule.relative_to)
        if self.config.aggregation_time_s > 0:
            yield env.timeout(self.config.aggregation_time_s)
        record = RoundRecord(
            round=self.version,
            t_start_s=self.version_start_s,
            lr=self.learner.lr_at(self.version),
            staleness_mean=sum(staleness) / len(staleness),  # exact sum, one division
            staleness_max=max(staleness),
            staleness=staleness,
        )
        self.records.append(record)
        resolved, self.resolved = self.resolved, []
        outcomes = [a.outcome for a in resolved]
        record.selected = [o.client for o in outcomes]
        record.completed = completed
        self.timeline.record(
            env.now,
            "aggregate",
            record.round,
            bits=len(completed) * self.model_size_bits,
            duration_s=self.config.aggregation_time_s,
        )
        self._end_record(record, outcomes)
        for arrival in resolved:
            self.reported.observe([arrival.outcome], arrival.start_s)
        self._observe(record, resolved, applied)
        if self.on_round is not None:
            self.on_round(record)
        self.version += 1
        self.version_start_s = env.now
        self.energy.start_round()
        if not self._finished(self.version):
            self.timeline.record(env.now, "round_start", self.version)

    def _observe(
        self,
        record: RoundRecord,
        resolved: list[_Arrival],
        applied: list[_Arrival],
    ) -> None:
        if not self.strategy.observes:
            return  # e.g. random: one feedback per version would be built for nobody
        starts = np.array([a.start_s for a in resolved])
        outcomes = [a.outcome for a in resolved]
        results = [a.result for a in applied if a.result is not None]
        result = _concatenate(results, self.learner.n_samples)
        loss = dict(zip(result.clients.tolist(), result.loss_mean.tolist(), strict=True))
        with self._training():
            signals = self.signals.feedback(result, record.selected)
        features = _stack(resolved)
        self.strategy.observe(round_feedback(record, outcomes, starts, loss, features, signals))


def _read_only(values: np.ndarray) -> np.ndarray:
    """``values``, read-only (handed to strategies as is)."""
    values.setflags(write=False)
    return values


def _concatenate(results: list[LocalResult], n_samples: np.ndarray) -> LocalResult:
    """One result of the applied updates (the states are not needed by the feedback)."""
    if not results:
        return LocalResult.untrained(np.zeros(0, dtype=np.int64), n_samples)
    return LocalResult(
        np.concatenate([r.clients for r in results]),
        {},
        np.concatenate([r.n_samples for r in results]),
        np.concatenate([np.asarray(r.loss_mean, dtype=float) for r in results]),
        np.concatenate([np.asarray(r.loss_std, dtype=float) for r in results]),
    )


def _stack(arrivals: list[_Arrival]) -> Mapping[str, np.ndarray]:
    """The features the strategy saw of each arrival's client, one row per arrival."""
    if not arrivals:
        return {}
    return {
        name: np.stack([np.asarray(a.pool_features[name][a.row]) for a in arrivals])
        for name in arrivals[0].pool_features
    }


__all__ = ["AsyncServer"]
