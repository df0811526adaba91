"""The FL server as a SimPy process: one round after another.

A round follows the FedCS protocol (Yoshida et al. 2020 Sec. II): Resource Request
to ceil(K C) random clients (:mod:`netfl.fl.request`: those available answer; the answers
may cost time and uplink bits), an optional poll the strategy asks for, Client Selection
(the strategy; its compute time is configurable), then Distribution, Update and Upload
(:mod:`netfl.fl.exchange`: FedCS uploads one after another, FedAvg in parallel), and
Aggregation. The round ends when every selected client is done, when the first m updates
have arrived (over-selection), or at the round deadline T_round; no round starts after the
budget T_final, and a round running at T_final is cut there. Every step is recorded in the
timeline with the simulated time it happened. Real training happens at aggregation, for
exactly the clients whose uploads arrived in time (the model only changes at aggregation,
so this is equivalent to training when the update is scheduled, and trains each client
once); under ``fl.partial_work`` each for the local steps its device completed in time
(:mod:`netfl.fl.partial`), recorded per client in ``rounds.parquet``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Generator, Iterable, Mapping
from typing import Any

import numpy as np
import simpy

from netfl.config.fl import FLConfig
from netfl.errors import Diverged
from netfl.features import Feature
from netfl.fl.device import Devices
from netfl.fl.energy import EnergyMeter
from netfl.fl.exchange import Exchange, Outcome, Parts, Plan
from netfl.fl.feedback import ReportedTimes, round_feedback
from netfl.fl.partial import PartialWork
from netfl.fl.request import ResourceRequest
from netfl.fl.signals import LearningSignals
from netfl.learning.interface import EvalSchedule, Learner
from netfl.radio.network import Network
from netfl.recorder.strategy import ScoreLog
from netfl.recorder.tables import RoundRecord
from netfl.recorder.timeline import Timeline
from netfl.selection.base import POLL_SIGNALS, SelectionContext, Strategy

#: A polled client's answer to ``poll_loss``: one number (32 bits).
POLL_ANSWER_BITS = 32.0


#: Below this many items a Python loop beats numpy's per-call overhead.
_FEW = 16

_INTEGER = (int, np.integer)


class StrategyContractError(RuntimeError):
    """A strategy returned an invalid selection or poll."""


class _TrainingClock:
    """Times a block spent in the learner (a class: contextlib's generator-based managers
    cost several microseconds, paid several times per update under asynchrony)."""

    __slots__ = ("server", "start")

    def __init__(self, server: Server) -> None:
        self.server = server

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.server.training_s += time.perf_counter() - self.start


class Server:
    """Runs rounds until the round count or the simulated-time budget is reached.

    ``eval_schedule`` says after which rounds the global model is evaluated (default:
    every round).
    """

    def __init__(
        self,
        env: simpy.Environment,
        *,
        config: FLConfig,
        model_size_bits: float,
        network: Network,
        devices: Devices,
        learner: Learner,
        strategy: Strategy,
        timeline: Timeline,
        request_rng: np.random.Generator,
        energy: EnergyMeter | None = None,
        eval_schedule: EvalSchedule | None = None,
        on_round: Callable[[RoundRecord], None] | None = None,
        contexts: np.ndarray | None = None,
    ) -> None:
        self.env = env
        self.config = config
        self.model_size_bits = model_size_bits
        self.network = network
        self.devices = devices
        self.learner = learner
        self.strategy = strategy
        self.timeline = timeline
        self.eval_schedule = eval_schedule or EvalSchedule(rounds=config.rounds)
        self.on_round = on_round
        self.n_clients = len(learner.n_samples)
        self.energy = energy or EnergyMeter.off(self.n_clients)
        self.parts = Parts(env, network, devices, timeline, self.energy)
        # Data contexts computed on the devices (NCCB), one row per client: a feature of
        # the candidates, sent with each client's first resource response.
        self.contexts = contexts
        self.request = ResourceRequest(self.parts, config, request_rng, contexts)
        self.reported = ReportedTimes(self.n_clients)
        self.signals = LearningSignals(learner, strategy.requires)
        self.counts = {
            name: np.zeros(self.n_clients, dtype=np.int64)
            for name in ("selected", "completed", "dropped", "deadline_miss")
        }
        self.records: list[RoundRecord] = []
        #: The main exchange: the model down, one local update, the update up (FedCS's
        #: scheduled upload under fedcs).
        self.plan = Plan(
            download_bits=model_size_bits,
            work_epochs=None,
            upload_bits=model_size_bits,
            distribution=config.distribution_mode,
            sequential=config.protocol == "fedcs",
            partial=self._partial_work() if config.partial_work else None,
        )
        self.score_log = ScoreLog()
        #: Process seconds spent in the learner (local training, polls, aggregation,
        #: evaluation): summary.json's ``wall_training_s``.
        self.training_s = 0.0

    def _training(self) -> _TrainingClock:
        """``with self._training():`` adds the block's process seconds to ``training_s``."""
        return _TrainingClock(self)

    def use(self, strategy: Strategy, learner: Learner) -> None:
        """Talk to ``strategy`` and ``learner`` from the next round on: a checkpointed
        run's stand-ins that record or replay them (:mod:`netfl.checkpoint.pilot`)."""
        self.strategy, self.learner = strategy, learner
        self.signals = LearningSignals(learner, self.signals.wants)

    # -- partial work (fl.partial_work, netfl/fl/partial.py) ------------------------------

    def _partial_work(self) -> PartialWork:
        sgd = self.learner.sgd(0)  # type: ignore[attr-defined]  # steps do not change by round
        n = np.asarray(self.learner.n_samples)

        def steps_within(client: int, samples: float) -> int:
            return int(sgd.steps_within(n[client : client + 1], np.array([samples]))[0])

        return PartialWork(
            planned_steps=sgd.steps_taken(n),
            steps_within=steps_within,
            expected_upload_s=self._expected_upload_s,
            on_steps=self._steps_known if self.config.is_async else None,
        )

    def _expected_upload_s(self, client: int) -> float:
        """The upload time a client expects: what it measured last time it uploaded (its
        report), else the model over its nominal uplink rate this round; times
        ``fl.partial_work_upload_factor``."""
        factor = self.config.partial_work_upload_factor
        measured = float(self.reported.upload_s[client])
        if measured > 0:
            return factor * measured
        current = getattr(self.network, "round_rate_ul_bps", None)
        rate = current(np.array([client]))[0] if current else self.network.rate_ul_bps[client]
        if rate <= 0:  # nominally below the lowest MCS: it cannot count on an upload
            return math.inf
        return factor * self.model_size_bits / float(rate)

    def _steps_known(self, client: int, steps: int) -> None:
        """The asynchronous learner trains lazily: tell it a client's steps once known."""
        self.learner.note_steps(client, steps)

    def _steps_done(self, outcomes: Iterable[Outcome]) -> np.ndarray | None:
        """The local steps each outcome's client did (None without partial work: all)."""
        if self.plan.partial is None:
            return None
        return np.array([o.steps_done for o in outcomes], dtype=np.int64)

    @property
    def n_selected(self) -> np.ndarray:
        return self.counts["selected"]

    def client_totals(self) -> dict[str, np.ndarray]:
        """Per-client counters and energy, for ``clients.parquet``."""
        totals = {f"n_{name}": count for name, count in self.counts.items()}
        totals["energy_tx_j"] = self.energy.tx_j
        totals["energy_compute_j"] = self.energy.compute_j
        return totals

    # -- the main process ---------------------------------------------------------------

    def run(self) -> Generator[simpy.Event, Any, None]:
        round_ = 0
        while not self._finished(round_):
            yield from self._round(round_)
            round_ += 1
        self._final_evaluation()

    def _finished(self, round_: int) -> bool:
        if self.config.rounds is not None and round_ >= self.config.rounds:
            return True
        return self._past_budget()

    def _past_budget(self) -> bool:
        """Whether the simulated-time budget T_final is spent."""
        budget = self.config.time_budget_s
        return budget is not None and self.env.now >= budget

    def _limit(self, t_start_s: float) -> float | None:
        """When the round is cut: its deadline or T_final, whichever comes first."""
        limits = [] if self.config.deadline_s is None else [t_start_s + self.config.deadline_s]
        if self.config.time_budget_s is not None:
            limits.append(self.config.time_budget_s)
        return min(limits) if limits else None

    def _empty_round_wait_s(self, t_start_s: float) -> float:
        """Nobody selected: wait until the deadline, or ``empty_round_wait_s``."""
        until = self.env.now + self.config.empty_round_wait_s
        if self.config.deadline_s is not None:
            until = t_start_s + self.config.deadline_s
        if self.config.time_budget_s is not None:
            until = min(until, self.config.time_budget_s)
        return max(0.0, until - self.env.now)

    def _round(self, r: int) -> Generator[simpy.Event, Any, None]:
        env = self.env
        record = RoundRecord(round=r, t_start_s=env.now, lr=self.learner.lr_at(r))
        self.records.append(record)
        self.timeline.record(env.now, "round_start", r)
        self.network.start_round(r)
        self.devices.start_round(r)
        self.energy.start_round()
        limit = self._limit(record.t_start_s)
        candidates = yield from self.request.run(r, limit)
        ctx = self._context(r, candidates, self._features(candidates))
        features = yield from self._poll(ctx, limit)
        if features is not ctx.features:
            ctx = self._context(r, candidates, features)
        selected = yield from self._select(ctx)
        if not selected:
            yield env.timeout(self._empty_round_wait_s(record.t_start_s))
            self._close_round(record, [], env.now, {})
            return
        self.devices.note_selected(r, np.asarray(selected))
        exchange = Exchange(
            self.parts, r, selected, self.plan, target=self.config.clients_per_round
        )
        outcomes = yield from exchange.run(limit)
        if self.config.aggregation_time_s > 0:
            yield env.timeout(self.config.aggregation_time_s)
        rows = np.searchsorted(ctx.candidates, selected)  # candidates are sorted
        chosen = {name: np.asarray(v)[rows] for name, v in ctx.features.items()}
        self._close_round(
            record, outcomes, exchange.start_s, chosen, self.config.aggregation_time_s
        )

    # -- steps --------------------------------------------------------------------------

    def _features(self, candidates: np.ndarray) -> dict[str, np.ndarray]:
        features = self.devices.features(candidates)
        network_features = getattr(self.network, "features", None)
        if network_features is not None:
            features.update(network_features(candidates))
        if self.config.oracle_exchange_time:
            features[Feature.EXPECTED_EXCHANGE_TIME_S] = self._expected_exchange_s(candidates)
        if self.contexts is not None:
            features[Feature.CONTEXT] = self.contexts[candidates]
        return features

    def _expected_exchange_s(self, clients: np.ndarray) -> np.ndarray:
        """Oracle: each client's expected exchange time this round if selected alone.

        Download (own rate; 0 if instant) + expected update + upload, at the round's rates
        where the network knows them (group links), else the nominal ones.
        """
        bits = self.model_size_bits
        rates = {}
        for way in ("ul", "dl"):
            current = getattr(self.network, f"round_rate_{way}_bps", None)
            nominal = getattr(self.network, f"rate_{way}_bps")
            rates[way] = current(clients) if current is not None else nominal[clients]
        with np.errstate(divide="ignore"):  # a nominal rate of 0: an infinite time
            download = 0.0 if self.config.distribution_mode == "instant" else bits / rates["dl"]
            return download + self.devices.expected_update_s(clients) + bits / rates["ul"]

    def _context(
        self,
        r: int,
        candidates: np.ndarray,
        features: Mapping[str, np.ndarray],
        budget: int | None = None,
    ) -> SelectionContext:
        return SelectionContext(
            round=r,
            now_s=self.env.now,
            candidates=candidates,
            budget=self.config.selection_budget if budget is None else budget,
            update_time_s=self.reported.update_s[candidates],
            upload_time_s=self.reported.upload_s[candidates],
            n_samples=self.learner.n_samples[candidates],
            deadline_s=self.config.deadline_s,
            features=features,
            target=self.config.clients_per_round,
            misses=self.reported.misses[candidates],
        )

    @staticmethod
    def _distinct_candidates(
        ctx: SelectionContext,
        what: str,
        ids: Iterable[Any],
        is_candidate: Callable[[int], bool] | None = None,
    ) -> list[int]:
        """The strategy's ids as ints, if they are distinct integer candidates
        (``is_candidate``: membership without reading ``ctx.candidates``)."""
        ids = list(ids)
        chosen = []
        for c in ids:  # a loop: an asynchronous server checks one or two a selection
            if not isinstance(c, _INTEGER) or isinstance(c, bool):
                raise StrategyContractError(
                    f"round {ctx.round}: the strategy {what} {ids}, which are not integer"
                    " client ids"
                )
            chosen.append(int(c))
        if not chosen:
            return chosen
        if is_candidate is not None:
            known = True
            for c in chosen:
                if not is_candidate(c):
                    known = False
                    break
        else:  # the server's candidates are sorted: membership by binary search, O(k log n)
            candidates = ctx.candidates
            n = len(candidates)
            if len(chosen) <= _FEW:
                known = all(
                    (at := int(candidates.searchsorted(c))) < n and candidates[at] == c
                    for c in chosen
                )
            else:
                rows = np.minimum(np.searchsorted(candidates, chosen), n - 1)
                known = n > 0 and bool(np.all(candidates[rows] == chosen))
        if len(set(chosen)) != len(chosen) or not known:
            raise StrategyContractError(
                f"round {ctx.round}: the strategy {what} {chosen}, which are not distinct"
                " candidates"
            )
        return chosen

    def _poll(
        self, ctx: SelectionContext, limit: float | None
    ) -> Generator[simpy.Event, Any, Mapping[str, np.ndarray]]:
        """Poll the candidates the strategy names (``choose_polled``), before selection.

        ``poll_signal`` ``"poll_loss"``: the model goes down, the device evaluates its loss
        (``loss_eval_epochs`` passes of work) and sends one number back (32 bits);
        ``"update_vector"``: the model goes down, the device runs a local update and sends
        the update back (model-size bits; not aggregated). The poll ends when every answer
        arrived, or at the round's limit. The answers join the candidates' features
        (``loss`` or ``update_vector``, NaN where unanswered) with ``polled``.
        """
        choose = getattr(self.strategy, "choose_polled", None)
        clients = self._distinct_candidates(ctx, "polled", choose(ctx) if choose else [])
        if not clients:
            return ctx.features
        signal = self.strategy.poll_signal
        if signal not in POLL_SIGNALS:
            raise StrategyContractError(
                f"round {ctx.round}: the strategy polls {clients} but declares no poll signal"
                f" in requires (one of {sorted(POLL_SIGNALS)})"
            )
        loss = signal == "poll_loss"
        plan = Plan(
            download_bits=self.model_size_bits,
            work_epochs=self.config.loss_eval_epochs if loss else None,
            upload_bits=POLL_ANSWER_BITS if loss else self.model_size_bits,
            distribution=self.config.distribution_mode,
            sequential=False,
            prefix="poll_",
        )
        exchange = Exchange(self.parts, ctx.round, clients, plan, target=None)
        outcomes = yield from exchange.run(limit)
        answered = np.array([o.client for o in outcomes if o.completed], dtype=np.int64)
        with self._training():
            answers = self.signals.polled(ctx.round, answered, signal)
        rows = np.searchsorted(ctx.candidates, answered)  # candidates are sorted
        features = dict(ctx.features)
        for name, values in answers.items():
            column = np.full((len(ctx.candidates), *values.shape[1:]), np.nan)
            column[rows] = values
            features[name] = column
        polled = np.zeros(len(ctx.candidates))
        polled[rows] = 1.0
        features[Feature.POLLED] = polled
        return features

    def _select(
        self,
        ctx: SelectionContext,
        round_: int | None = None,
        is_candidate: Callable[[int], bool] | None = None,
    ) -> Generator[simpy.Event, Any, list[int]]:
        """The strategy's choice, checked, timed and logged (``round_``: the timeline's
        round column, default ``ctx.round``; ``is_candidate``: see
        :meth:`_distinct_candidates`)."""
        chosen = self._choose(ctx, is_candidate)
        if self.config.selection_time_s > 0:
            yield self.env.timeout(self.config.selection_time_s)
        self._log_selected(ctx, round_, chosen)
        return chosen

    def _choose(
        self, ctx: SelectionContext, is_candidate: Callable[[int], bool] | None = None
    ) -> list[int]:
        """The strategy's choice, checked, its scores logged (:meth:`_select` without the
        selection's time and its timeline rows)."""
        chosen = self._distinct_candidates(ctx, "selected", self.strategy.select(ctx), is_candidate)
        if len(chosen) > ctx.budget:
            raise StrategyContractError(
                f"round {ctx.round}: the strategy selected {len(chosen)} clients,"
                f" budget {ctx.budget}"
            )
        self.score_log.record(ctx.round, self.env.now, self.strategy.scores())
        return chosen

    def _log_selected(self, ctx: SelectionContext, round_: int | None, chosen: list[int]) -> None:
        self.timeline.record_many(
            self.env.now,
            "select",
            ctx.round if round_ is None else round_,
            chosen,
            duration_s=self.config.selection_time_s,
        )

    # -- closing a round ----------------------------------------------------------------

    def _close_round(
        self,
        record: RoundRecord,
        outcomes: list[Outcome],
        distribution_start_s: float,
        features: Mapping[str, np.ndarray],
        aggregation_s: float = 0.0,
    ) -> None:
        env, r = self.env, record.round
        record.selected = [o.client for o in outcomes]
        record.completed = [o.client for o in outcomes if o.completed]
        clients = np.asarray(record.completed, dtype=np.int64)
        steps = self._steps_done(o for o in outcomes if o.completed)
        with self._training():
            result = self.signals.local_update(r, clients, self.signals.wants, steps)
            self.learner.aggregate(result, np.ones(len(clients), dtype=bool))
        self.timeline.record(
            env.now,
            "aggregate",
            r,
            bits=len(clients) * self.model_size_bits,
            duration_s=aggregation_s,
        )
        self._end_record(record, outcomes)
        self.reported.observe(outcomes, distribution_start_s)
        if self.strategy.observes:  # else no feedback to build (random selection)
            loss = dict(zip(clients.tolist(), np.asarray(result.loss_mean).tolist(), strict=True))
            with self._training():
                signals = self.signals.feedback(result, record.selected)
            self.strategy.observe(
                round_feedback(record, outcomes, distribution_start_s, loss, features, signals)
            )
        if self.on_round is not None:
            self.on_round(record)

    def _end_record(self, record: RoundRecord, outcomes: list[Outcome]) -> None:
        """A round (or global version) is over: evaluate if due, stamp its end and energy,
        log ``round_end``, count its outcomes; :class:`Diverged` once the model or a loss
        is no longer finite (the round recorded, unevaluated)."""
        env = self.env
        # A diverged model is not evaluated: its accuracy would be noise.
        cause = self._divergence()
        if cause is None and self.eval_schedule.due(record.round, env.now):
            self._evaluate(record)
            if not math.isnan(record.accuracy) and not math.isfinite(record.loss):
                cause = f"the global model's test loss is {record.loss:g}"
        record.t_end_s = env.now
        record.energy_tx_j, record.energy_compute_j = self.energy.round_totals()
        partial = self.plan.partial
        if partial is not None:
            clients = np.array([o.client for o in outcomes], dtype=np.int64)
            record.steps_planned = partial.planned_steps[clients].tolist()
            record.steps_done = [max(o.steps_done, 0) for o in outcomes]
        self.timeline.record(
            env.now, "round_end", record.round, duration_s=env.now - record.t_start_s
        )
        self._count(record, outcomes)
        if cause is not None:
            raise Diverged(record.round, cause)

    def _divergence(self) -> str | None:
        with self._training():
            return self.learner.divergence()

    def _count(self, record: RoundRecord, outcomes: list[Outcome]) -> None:
        status = self._count_outcomes(outcomes)
        record.n_dropped = status.count("dropped")
        record.n_deadline_miss = status.count("deadline_miss")

    def _count_outcomes(self, outcomes: list[Outcome]) -> list[str]:
        """Add the outcomes to the per-client counters (a client may appear more than once);
        return their statuses."""
        status = [o.status for o in outcomes]
        if len(outcomes) <= _FEW:  # an asynchronous version's few: numpy costs more
            counts = self.counts
            for out in outcomes:
                counts["selected"][out.client] += 1
                if out.status in counts:
                    counts[out.status][out.client] += 1
            return status
        clients = np.array([o.client for o in outcomes], dtype=np.int64)
        statuses = np.array(status, dtype=str)
        np.add.at(self.counts["selected"], clients, 1)
        for name in ("completed", "dropped", "deadline_miss"):
            np.add.at(self.counts[name], clients[statuses == name], 1)
        return status

    def _evaluate(self, record: RoundRecord) -> None:
        with self._training():
            evaluation = self.learner.evaluate()
        record.accuracy, record.loss = evaluation.accuracy, evaluation.loss
        self.timeline.record(
            self.env.now,
            "evaluate",
            record.round,
            accuracy=evaluation.accuracy,
            loss=evaluation.loss,
        )
        client_loss = getattr(evaluation, "client_loss", None)  # learning.fairness_loss
        if client_loss is not None:
            for client, loss in enumerate(np.asarray(client_loss).tolist()):
                self.timeline.record(self.env.now, "client_loss", record.round, client, loss=loss)

    def _final_evaluation(self) -> None:
        if self.records and math.isnan(self.records[-1].accuracy):
            self._evaluate(self.records[-1])
