"""Elaboration: build every component of a run from the scenario, before time starts.

Each component draws from its own named random stream (:mod:`netfl.rng`), so changing
one component (say, the strategy) leaves the others' draws unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from netfl.config import Scenario
from netfl.fl.device import FixedComputeDevices
from netfl.fl.population import Population, build_population
from netfl.fl.server import Server
from netfl.learning.evaluation import EvalSchedule
from netfl.learning.learner import Learner, NullLearner
from netfl.radio.build import build_radio
from netfl.radio.network import Network
from netfl.registry import strategies
from netfl.rng import Streams
from netfl.selection.base import PopulationInfo, Strategy, make_strategy
from netfl.trace.tables import RoundRecord
from netfl.trace.timeline import Timeline


@dataclass
class World:
    """Everything a run needs, built and seeded, not yet started."""

    scenario: Scenario
    env: simpy.Environment
    timeline: Timeline
    population: Population
    network: Network
    learner: Learner
    strategy: Strategy
    server: Server
    client_columns: dict[str, Any]


def _learner(scenario: Scenario, population: Population, streams: Streams) -> tuple[Learner, float]:
    if scenario.learning is None:
        assert population.requested_samples is not None  # enforced by cross_checks
        assert scenario.fl.model_size_bits is not None
        return NullLearner(population.requested_samples), scenario.fl.model_size_bits
    from netfl.learning.build import build_learner

    learner = build_learner(scenario.learning, population, streams)
    bits = scenario.fl.model_size_bits or learner.model_size_bits
    return learner, bits


def _eval_schedule(scenario: Scenario) -> EvalSchedule:
    learning = scenario.learning
    if learning is None:
        return EvalSchedule(rounds=scenario.fl.rounds)
    return EvalSchedule(learning.eval_every_rounds, learning.eval_every_s, scenario.fl.rounds)


def build_world(scenario: Scenario, on_round: Callable[[RoundRecord], None] | None = None) -> World:
    """Build the SimPy environment and every component of the run."""
    streams = Streams(scenario.seed)
    env = simpy.Environment()
    timeline = Timeline()
    population = build_population(scenario.devices, streams.get("devices.population"))
    n = population.n_clients
    radio = build_radio(scenario, env, streams, timeline, n)
    network = radio.network
    devices = FixedComputeDevices(population.compute_sps)
    learner, model_size_bits = _learner(scenario, population, streams)

    strategy = make_strategy(strategies().load(scenario.selection.name), scenario.selection.params)
    strategy.setup(
        PopulationInfo(
            n_clients=n,
            budget=scenario.fl.clients_per_round,
            n_samples=learner.n_samples,
            rounds=scenario.fl.rounds,
            deadline_s=scenario.fl.deadline_s,
        ),
        streams.get("selection"),
    )
    server = Server(
        env,
        config=scenario.fl,
        model_size_bits=model_size_bits,
        network=network,
        devices=devices,
        learner=learner,
        strategy=strategy,
        timeline=timeline,
        request_rng=streams.get("fl.request"),
        eval_schedule=_eval_schedule(scenario),
        on_round=on_round,
    )
    client_columns: dict[str, Any] = {
        "client": np.arange(n),
        "group": population.group.astype(str),
        **radio.columns,
        "n_samples": learner.n_samples,
        "compute_sps": population.compute_sps,
        **learner.client_columns(),
    }
    return World(
        scenario, env, timeline, population, network, learner, strategy, server, client_columns
    )
