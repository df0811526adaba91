"""Hierarchical FL: HierFAVG (Liu, Zhang, Song, Letaief, "Client-Edge-Cloud Hierarchical
Federated Learning", IEEE ICC 2020, Alg. 1) on the simulated clock.

Every cell of the radio network has an edge aggregator (at the topology's edge server,
which the clients' models reach over the radio and the BS -> edge backhaul). A *cloud
round* (one row of ``rounds.parquet``, one global model version) is ``fl.kappa2`` *edge
rounds* and a cloud aggregation:

- an edge round is a synchronous round in every cell at once: one resource request, then
  for each edge the strategy selects up to ``fl.clients_per_round`` of that cell's
  candidates (each edge's selection is a round from the strategy's point of view: its
  ``ctx.round`` counts selections), the clients download their edge's model, run
  ``fl.kappa1`` local updates back to back and upload; each edge then averages its
  arrived updates (FedAvg weights) into its model;
- the cloud aggregation: every edge sends its model over the edge -> cloud link
  (``cell.backhaul.edge_cloud_latency_s`` and ``_capacity_bps``, shared by the edges'
  models), the cloud averages the edge models weighted by the data of their cells'
  clients (Alg. 1's D^l), and sends the result back to the edges the same way.

With ``kappa2 = 1`` and one cell this is FedAvg with ``kappa1`` local updates per round
plus the backhaul round trip. The devices' and the network's per-round draws happen per
edge round.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from netfl.fl.exchange import Exchange, Outcome
from netfl.fl.feedback import round_feedback
from netfl.fl.server import Server
from netfl.radio.topology import BackhaulLink
from netfl.recorder.tables import RoundRecord


class HierarchicalServer(Server):
    """Runs cloud rounds (``_round``) until ``fl.rounds`` or the time budget."""

    def __init__(
        self,
        env: simpy.Environment,
        *,
        edges: np.ndarray,
        cloud_link: BackhaulLink,
        **kwargs: Any,
    ) -> None:
        super().__init__(env, **kwargs)
        self.edge_of = np.asarray(edges, dtype=np.int64)
        self.edge_ids = np.unique(self.edge_of)
        n_samples = np.asarray(self.learner.n_samples, dtype=float)
        self.edge_data = np.array([n_samples[self.edge_of == e].sum() for e in self.edge_ids])
        self.cloud_link = cloud_link
        self.n_edge_rounds = 0
        self.n_selections = 0

    # -- a cloud round ------------------------------------------------------------------

    def _round(self, r: int) -> Generator[simpy.Event, Any, None]:
        """A cloud round: ``kappa2`` edge rounds, then the cloud aggregation."""
        env = self.env
        record = RoundRecord(round=r, t_start_s=env.now, lr=self.learner.lr_at(r))
        self.records.append(record)
        self.timeline.record(env.now, "round_start", r)
        self.energy.start_round()
        cloud = self.learner.model_state()
        models = {int(e): cloud for e in self.edge_ids}
        outcomes: list[Outcome] = []
        for _ in range(self.config.kappa2):
            if self._past_budget():
                break
            outcomes += yield from self._edge_round(r, models)
        if not self._past_budget():
            yield from self._cloud_sync(r)
        with self._training():
            states = [models[int(e)] for e in self.edge_ids]
            if all(s is not None for s in states):
                self.learner.load_model_state(self.learner.average_states(states, self.edge_data))
        completed = [o.client for o in outcomes if o.completed]
        self.timeline.record(
            env.now, "aggregate", r, bits=len(self.edge_ids) * self.model_size_bits
        )
        record.selected = [o.client for o in outcomes]
        record.completed = completed
        self._end_record(record, outcomes)
        if self.on_round is not None:
            self.on_round(record)

    def _cloud_sync(self, r: int) -> Generator[simpy.Event, Any, None]:
        """Every edge's model up the edge -> cloud link, then the cloud's model down."""
        env, start = self.env, self.env.now
        for _ in ("up", "down"):
            carries = [
                env.process(self.cloud_link.carry(self.model_size_bits)) for _ in self.edge_ids
            ]
            yield env.all_of(carries)
        self.timeline.record(
            env.now,
            "cloud_sync",
            r,
            bits=2 * len(self.edge_ids) * self.model_size_bits,
            duration_s=env.now - start,
        )

    # -- an edge round ------------------------------------------------------------------

    def _edge_round(
        self, r: int, models: dict[int, Any]
    ) -> Generator[simpy.Event, Any, list[Outcome]]:
        env = self.env
        q, start_s = self.n_edge_rounds, env.now
        self.n_edge_rounds += 1
        self.network.start_round(q)
        self.devices.start_round(q)
        limit = self._limit(start_s)
        candidates = yield from self.request.run(r, limit)
        features = self._features(candidates)
        picks = []
        # Candidates grouped by edge in one stable sort (each group stays sorted by id).
        edges = self.edge_of[candidates]
        order = np.argsort(edges, kind="stable")
        present, starts = np.unique(edges[order], return_index=True)
        for edge, mine in zip(present.tolist(), np.split(order, starts[1:]), strict=True):
            ctx = self._context(
                self.n_selections,
                candidates[mine],
                {name: v[mine] for name, v in features.items()},
                budget=self.config.clients_per_round,
            )
            self.n_selections += 1
            polled = yield from self._poll(ctx, limit)
            if polled is not ctx.features:
                ctx = self._context(ctx.round, ctx.candidates, polled, budget=ctx.budget)
            selected = yield from self._select(ctx, r)
            if selected:
                picks.append((edge, ctx, selected))
        if not picks:
            yield env.timeout(self._empty_round_wait_s(start_s))
            return []
        self.devices.note_selected(q, np.concatenate([np.asarray(s) for _, _, s in picks]))
        exchanges = [
            Exchange(self.parts, r, selected, self.plan, target=len(selected))
            for _, _, selected in picks
        ]
        runs = [env.process(exchange.run(limit)) for exchange in exchanges]
        yield env.all_of(runs)
        outcomes: list[Outcome] = []
        for (edge, ctx, selected), exchange, run in zip(picks, exchanges, runs, strict=True):
            arrived: list[Outcome] = run.value or []
            outcomes += arrived
            self._edge_aggregate(r, edge, models, ctx, selected, exchange, arrived, start_s)
        return outcomes

    def _edge_aggregate(
        self,
        r: int,
        edge: int,
        models: dict[int, Any],
        ctx: Any,
        selected: list[int],
        exchange: Exchange,
        outcomes: list[Outcome],
        start_s: float,
    ) -> None:
        """The edge averages its arrived updates; its strategy round ends."""
        env = self.env
        clients = np.array([o.client for o in outcomes if o.completed], dtype=np.int64)
        steps = self._steps_done(o for o in outcomes if o.completed)
        with self._training():
            self.learner.load_model_state(models[edge])
            result = self.signals.local_update(r, clients, self.signals.wants, steps)
            self.learner.aggregate(result, np.ones(len(clients), dtype=bool))
            models[edge] = self.learner.model_state()
        self.timeline.record(
            env.now, "edge_aggregate", r, edge, bits=len(clients) * self.model_size_bits
        )
        self.reported.observe(outcomes, exchange.start_s)
        edge_record = RoundRecord(round=ctx.round, t_start_s=start_s, t_end_s=env.now)
        edge_record.selected = list(selected)
        rows = np.searchsorted(ctx.candidates, selected)  # candidates are sorted
        chosen = {name: np.asarray(v)[rows] for name, v in ctx.features.items()}
        loss = dict(zip(clients.tolist(), np.asarray(result.loss_mean).tolist(), strict=True))
        with self._training():
            signals = self.signals.feedback(result, edge_record.selected)
        self.strategy.observe(
            round_feedback(edge_record, outcomes, exchange.start_s, loss, chosen, signals)
        )
