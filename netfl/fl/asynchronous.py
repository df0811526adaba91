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
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from netfl.fl.exchange import Exchange, LateTimeout, Outcome
from netfl.fl.feedback import round_feedback
from netfl.fl.protocols import AggregationRule
from netfl.fl.server import Server
from netfl.learning.interface import LocalResult
from netfl.trace.tables import RoundRecord

#: Consecutive empty refills (nobody training, nobody startable) before a run without a
#: time budget gives up instead of waiting for ever.
MAX_IDLE_TRIES = 10_000


@dataclass
class _Job:
    """A client in flight: the version it trains on and what the strategy saw of it."""

    version: int
    exchange: Exchange
    features: dict[str, np.ndarray]
    process: simpy.Process | None = None


@dataclass
class _Arrival:
    outcome: Outcome
    version: int
    start_s: float
    features: dict[str, np.ndarray]
    result: LocalResult | None = None


class AsyncServer(Server):
    """Runs global model versions until ``fl.rounds`` or the time budget."""

    def __init__(self, env: simpy.Environment, *, rule: AggregationRule, **kwargs: Any) -> None:
        super().__init__(env, **kwargs)
        self.rule = rule
        self.concurrency = self.config.concurrency_in_force
        self.version = 0
        self.version_start_s = 0.0
        self.jobs: dict[int, _Job] = {}
        self.in_flight = np.zeros(self.n_clients, dtype=bool)
        self.arrived: list[_Arrival] = []
        self.wakeup = env.event()  # fires at the first arrival after the server waited
        self.buffer: list[_Arrival] = []
        self.resolved: list[_Arrival] = []  # since the previous version
        self.n_started = 0
        self.n_selections = 0
        self.epoch = -1
        self.n_idle = 0  # consecutive refills that started nobody with nobody training
        self.pool = np.zeros(0, dtype=np.int64)
        self.pool_features: dict[str, np.ndarray] = {}

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
            if not self.arrived:
                yield self.wakeup
            yield LateTimeout(env, 0.0)  # every arrival of this instant, then refill
            for arrival in self._drain():
                if self._finished(self.version):  # the last version is out: not applied
                    self._discard(arrival)
                    continue
                yield from self._arrive(arrival)
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
            self.wakeup = self.env.event()
        return items

    # -- starting clients ---------------------------------------------------------------

    def _refill(self) -> Generator[simpy.Event, Any, None]:
        free = self.concurrency - len(self.jobs)
        if free <= 0 or self._finished(self.version):
            return
        idle = ~self.in_flight[self.pool]
        turned = self.n_started >= (self.epoch + 1) * self.concurrency
        if self.epoch < 0 or turned or (not self.jobs and not idle.any()):
            yield from self._new_epoch()  # an exhausted pool with nobody training: ask again
            idle = ~self.in_flight[self.pool]
        candidates = self.pool[idle]
        features = {name: values[idle] for name, values in self.pool_features.items()}
        ctx = self._context(self.n_selections, candidates, features, budget=free)
        self.n_selections += 1
        yield from self._poll(ctx, None)  # async strategies poll nobody (the log records it)
        selected = yield from self._select(ctx, self.version)
        if not selected:
            return
        self.devices.note_selected(self.epoch, np.asarray(selected))
        rows = np.searchsorted(ctx.candidates, selected)  # candidates are sorted
        for client, row in zip(selected, rows.tolist(), strict=True):
            self._start(client, {name: v[row] for name, v in ctx.features.items()})

    def _new_epoch(self) -> Generator[simpy.Event, Any, None]:
        """The per-round draws and the resource request, once per ``concurrency`` starts."""
        self.epoch += 1
        self.network.start_round(self.epoch)
        self.devices.start_round(self.epoch)
        self.pool = yield from self.request.run(self.version, self._limit(self.env.now))
        self.pool_features = dict(self._features(self.pool))

    def _start(self, client: int, features: dict[str, np.ndarray]) -> None:
        exchange = Exchange(self.parts, self.version, [client], self.plan, target=1)
        self.jobs[client] = _Job(self.version, exchange, features)
        self.in_flight[client] = True
        self.n_started += 1
        with self._training():
            self.learner.start_update(self.version, client)
        job = self.jobs[client]
        job.process = exchange.start_one(self._limit(self.env.now), self._done)

    def _done(self, outcome: Outcome) -> None:
        """A client's exchange is over (completed or left): its slot is free."""
        job = self.jobs.pop(outcome.client)
        self.in_flight[outcome.client] = False
        self.arrived.append(_Arrival(outcome, job.version, job.exchange.start_s, job.features))
        if not self.wakeup.triggered:
            self.wakeup.succeed()

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
        with self._training():
            self.learner.cancel_update(arrival.outcome.client)

    def _arrive(self, arrival: _Arrival) -> Generator[simpy.Event, Any, None]:
        self.resolved.append(arrival)
        if not arrival.outcome.completed:
            self._forget(arrival)
            return
        with self._training():
            arrival.result = self.learner.finish_update(arrival.outcome.client)
        self.buffer.append(arrival)
        if len(self.buffer) >= self.rule.buffer_size:
            yield from self._aggregate()

    def _aggregate(self) -> Generator[simpy.Event, Any, None]:
        env = self.env
        applied, self.buffer = self.buffer, []
        clients = np.array([a.outcome.client for a in applied], dtype=np.int64)
        versions = [a.version for a in applied]
        staleness = self.version - np.asarray(versions, dtype=np.int64)
        coefficients = self.rule.coefficients(self.learner.n_samples[clients], staleness)
        results = [a.result for a in applied if a.result is not None]
        with self._training():
            self.learner.apply_updates(results, versions, coefficients, self.rule.relative_to)
        if self.config.aggregation_time_s > 0:
            yield env.timeout(self.config.aggregation_time_s)
        record = RoundRecord(
            round=self.version,
            t_start_s=self.version_start_s,
            lr=self.learner.lr_at(self.version),
            staleness_mean=float(np.mean(staleness)),
            staleness_max=int(np.max(staleness)),
            staleness=staleness.tolist(),
        )
        self.records.append(record)
        resolved, self.resolved = self.resolved, []
        outcomes = [a.outcome for a in resolved]
        record.selected = [o.client for o in outcomes]
        record.completed = clients.tolist()
        self.timeline.record(
            env.now,
            "aggregate",
            record.round,
            bits=len(clients) * self.model_size_bits,
            duration_s=self.config.aggregation_time_s,
        )
        self._end_record(record, outcomes)
        starts = np.array([a.start_s for a in resolved])
        for arrival in resolved:
            self.reported.observe([arrival.outcome], arrival.start_s)
        self._observe(record, resolved, applied, starts)
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
        starts: np.ndarray,
    ) -> None:
        if not self.strategy.observes:
            return  # e.g. random: one feedback per version would be built for nobody
        outcomes = [a.outcome for a in resolved]
        results = [a.result for a in applied if a.result is not None]
        result = _concatenate(results, self.learner.n_samples)
        loss = dict(zip(result.clients.tolist(), result.loss_mean.tolist(), strict=True))
        with self._training():
            signals = self.signals.feedback(result, record.selected)
        features = _stack([a.features for a in resolved])
        self.strategy.observe(round_feedback(record, outcomes, starts, loss, features, signals))


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


def _stack(rows: list[dict[str, np.ndarray]]) -> Mapping[str, np.ndarray]:
    if not rows:
        return {}
    return {name: np.stack([np.asarray(r[name]) for r in rows]) for name in rows[0]}


__all__ = ["AsyncServer"]
