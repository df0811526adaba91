"""The FL server as a SimPy process: one round after another.

A round: resource request -> client selection -> distribution -> local update -> upload
-> aggregation -> evaluation. Every step is recorded in the timeline with the simulated
time it happened. Real training happens at aggregation, for exactly the clients whose
uploads arrived in time (the model only changes at aggregation, so this is equivalent to
training when the update is scheduled, and trains each client once).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from netfl.config.fl import FLConfig
from netfl.fl.device import FixedComputeDevices
from netfl.learning.evaluation import EvalSchedule
from netfl.learning.learner import Learner
from netfl.radio.network import Network, Transfer
from netfl.selection.base import RoundFeedback, SelectionContext, Strategy
from netfl.trace.tables import RoundRecord
from netfl.trace.timeline import Timeline


class StrategyContractError(RuntimeError):
    """A strategy returned an invalid selection."""


@dataclass
class ClientOutcome:
    """What happened to one selected client in one round."""

    client: int
    download: Transfer | None = None
    update_time_s: float = math.nan
    upload: Transfer | None = None

    @property
    def arrived(self) -> bool:
        return self.upload is not None


class Server:
    """Runs rounds until the round count or the simulated-time budget is reached."""

    def __init__(
        self,
        env: simpy.Environment,
        *,
        config: FLConfig,
        model_size_bits: float,
        network: Network,
        devices: FixedComputeDevices,
        learner: Learner,
        strategy: Strategy,
        timeline: Timeline,
        request_rng: np.random.Generator,
        eval_schedule: EvalSchedule | None = None,
        on_round: Callable[[RoundRecord], None] | None = None,
    ) -> None:
        self.env = env
        self.config = config
        self.model_size_bits = model_size_bits
        self.network = network
        self.devices = devices
        self.learner = learner
        self.strategy = strategy
        self.timeline = timeline
        self.request_rng = request_rng
        self.eval_schedule = eval_schedule or EvalSchedule(rounds=config.rounds)
        self.on_round = on_round
        self.n_clients = len(learner.n_samples)
        # Last observed times, reported in the resource request (0 before the first
        # participation, as in 002_27b575cdfe8e08e6.txt Sec. II).
        self.reported_update_s = np.zeros(self.n_clients)
        self.reported_upload_s = np.zeros(self.n_clients)
        self.n_selected = np.zeros(self.n_clients, dtype=np.int64)
        self.n_completed = np.zeros(self.n_clients, dtype=np.int64)
        self.records: list[RoundRecord] = []

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
        budget = self.config.time_budget_s
        return budget is not None and self.env.now >= budget

    def _round(self, r: int) -> Generator[simpy.Event, Any, None]:
        env = self.env
        record = RoundRecord(round=r, t_start_s=env.now, lr=self.learner.lr_at(r))
        self.records.append(record)
        self.timeline.record(env.now, "round_start", r)
        self.network.start_round(r)
        self.devices.start_round(r)
        candidates = self._resource_request(r)
        selected = self._select(r, candidates)
        record.selected = selected
        if not selected:
            yield env.timeout(self.config.deadline_s or self.config.empty_round_wait_s)
            self._close_round(record, [], {})
            return
        outcomes = {c: ClientOutcome(c) for c in selected}
        procs = {c: env.process(self._client_round(r, outcomes[c])) for c in selected}
        yield from self._wait(record, procs)
        self._close_round(record, selected, outcomes)

    def _wait(
        self, record: RoundRecord, procs: dict[int, simpy.Process]
    ) -> Generator[simpy.Event, Any, None]:
        env = self.env
        everyone = env.all_of(list(procs.values()))
        limits = []
        if self.config.deadline_s is not None:
            limits.append(record.t_start_s + self.config.deadline_s)
        if self.config.time_budget_s is not None:
            limits.append(self.config.time_budget_s)
        if limits:
            yield everyone | env.timeout(max(0.0, min(limits) - env.now))
        else:
            yield everyone
        for client, proc in procs.items():
            if proc.is_alive:
                proc.interrupt("deadline")
                self.timeline.record(env.now, "deadline_miss", record.round, client)

    # -- steps --------------------------------------------------------------------------

    def _resource_request(self, r: int) -> np.ndarray:
        """ceil(K C) clients drawn uniformly, fresh each round (002 Sec. II)."""
        k = math.ceil(self.n_clients * self.config.request_fraction - 1e-9)
        candidates = np.sort(self.request_rng.choice(self.n_clients, size=k, replace=False))
        self.timeline.record_many(self.env.now, "request", r, candidates.tolist())
        return candidates

    def _select(self, r: int, candidates: np.ndarray) -> list[int]:
        ctx = SelectionContext(
            round=r,
            now_s=self.env.now,
            candidates=candidates,
            budget=self.config.clients_per_round,
            update_time_s=self.reported_update_s[candidates],
            upload_time_s=self.reported_upload_s[candidates],
            n_samples=self.learner.n_samples[candidates],
            deadline_s=self.config.deadline_s,
        )
        chosen = [int(c) for c in self.strategy.select(ctx)]
        allowed = set(candidates.tolist())
        if len(set(chosen)) != len(chosen) or not set(chosen) <= allowed:
            raise StrategyContractError(
                f"round {r}: the strategy selected {chosen}, which are not distinct candidates"
            )
        if len(chosen) > ctx.budget:
            raise StrategyContractError(
                f"round {r}: the strategy selected {len(chosen)} clients, budget {ctx.budget}"
            )
        self.timeline.record_many(self.env.now, "select", r, chosen)
        return chosen

    def _client_round(self, r: int, out: ClientOutcome) -> Generator[simpy.Event, Any, None]:
        env, c, bits = self.env, out.client, self.model_size_bits
        step: simpy.Process | None = None
        try:
            self.timeline.record(env.now, "download_start", r, c, bits=bits)
            step = self.network.download(env, c, bits)
            out.download = yield step
            assert out.download is not None
            self.timeline.record(
                env.now,
                "download_end",
                r,
                c,
                bits=bits,
                rate_bps=out.download.rate_bps,
                duration_s=out.download.duration_s,
            )
            n = int(self.learner.update_samples[c])  # E n_k, or tau b for local steps
            self.timeline.record(env.now, "compute_start", r, c)
            step = self.devices.compute(env, c, n, 1)
            out.update_time_s = yield step
            self.timeline.record(env.now, "compute_end", r, c, duration_s=out.update_time_s)
            self.timeline.record(env.now, "upload_start", r, c, bits=bits)
            step = self.network.upload(env, c, bits)
            upload = yield step
            assert upload is not None
            out.upload = upload
            self.timeline.record(
                env.now,
                "upload_end",
                r,
                c,
                bits=bits,
                rate_bps=upload.rate_bps,
                duration_s=upload.duration_s,
            )
        except simpy.Interrupt:
            if step is not None and step.is_alive:
                step.interrupt("cancelled")

    def _close_round(
        self, record: RoundRecord, selected: list[int], outcomes: dict[int, ClientOutcome]
    ) -> None:
        env, r = self.env, record.round
        arrived = [c for c in selected if outcomes[c].arrived]
        record.completed = arrived
        clients = np.asarray(arrived, dtype=np.int64)
        result = self.learner.local_update(r, clients)
        self.learner.aggregate(result, np.ones(len(clients), dtype=bool))
        self.timeline.record(env.now, "aggregate", r, bits=len(arrived) * self.model_size_bits)
        if self.eval_schedule.due(r, env.now):
            self._evaluate(record)
        record.t_end_s = env.now
        self.timeline.record(env.now, "round_end", r, duration_s=env.now - record.t_start_s)
        self._feedback(record, selected, outcomes, result.loss_mean, clients)
        if self.on_round is not None:
            self.on_round(record)

    def _evaluate(self, record: RoundRecord) -> None:
        evaluation = self.learner.evaluate()
        record.accuracy, record.loss = evaluation.accuracy, evaluation.loss
        self.timeline.record(
            self.env.now,
            "evaluate",
            record.round,
            accuracy=evaluation.accuracy,
            loss=evaluation.loss,
        )
        if evaluation.client_loss is not None:  # learning.fairness_loss
            for client, loss in enumerate(evaluation.client_loss.tolist()):
                self.timeline.record(self.env.now, "client_loss", record.round, client, loss=loss)

    def _final_evaluation(self) -> None:
        if self.records and math.isnan(self.records[-1].accuracy):
            self._evaluate(self.records[-1])

    def _feedback(
        self,
        record: RoundRecord,
        selected: list[int],
        outcomes: dict[int, ClientOutcome],
        arrived_loss: np.ndarray,
        arrived: np.ndarray,
    ) -> None:
        k = len(selected)
        download = np.full(k, np.nan)
        update = np.full(k, np.nan)
        upload = np.full(k, np.nan)
        exchange = np.full(k, np.nan)
        loss = np.full(k, np.nan)
        loss_of = dict(zip(arrived.tolist(), arrived_loss.tolist(), strict=True))
        for i, c in enumerate(selected):
            out = outcomes[c]
            self.n_selected[c] += 1
            if out.download is not None:
                download[i] = out.download.duration_s
            update[i] = out.update_time_s
            if out.upload is not None:
                upload[i] = out.upload.duration_s
                exchange[i] = out.upload.end_s - record.t_start_s
                self.n_completed[c] += 1
                self.reported_update_s[c] = out.update_time_s
                self.reported_upload_s[c] = out.upload.duration_s
                loss[i] = loss_of.get(c, np.nan)
        feedback = RoundFeedback(
            round=record.round,
            selected=np.asarray(selected, dtype=np.int64),
            completed=np.array([outcomes[c].arrived for c in selected], dtype=bool),
            download_time_s=download,
            update_time_s=update,
            upload_time_s=upload,
            exchange_time_s=exchange,
            round_time_s=record.t_end_s - record.t_start_s,
            local_loss=loss,
            global_accuracy=record.accuracy,
            global_loss=record.loss,
        )
        self.strategy.observe(feedback)
