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
from netfl.event_loop_gc import event_loop_gc
from netfl.fl.build import build_devices, build_server
from netfl.fl.device import Devices
from netfl.fl.population import Population, build_population
from netfl.fl.server import Server
from netfl.learning.interface import Learner, NullLearner
from netfl.radio.build import build_radio
from netfl.radio.network import Network
from netfl.recorder.tables import RoundRecord
from netfl.recorder.timeline import MOBILITY_COLUMNS, RB_COLUMNS, STEP_COLUMNS, Timeline
from netfl.registry import strategies
from netfl.rng import Streams
from netfl.selection.base import PopulationInfo, Strategy, make_strategy


@dataclass
class World:
    """Everything a run needs, built and seeded, not yet started."""

    scenario: Scenario
    env: simpy.Environment
    timeline: Timeline
    population: Population
    network: Network
    devices: Devices
    learner: Learner
    strategy: Strategy
    server: Server
    client_columns: dict[str, Any]

    def run(self) -> None:
        """Run the simulation until the server is done (background traffic never runs out
        of events), with the garbage collector tuned for the event loop
        (:mod:`netfl.event_loop_gc`)."""
        with event_loop_gc():
            self.env.run(until=self.env.process(self.server.run()))


def _learner(scenario: Scenario, population: Population, streams: Streams) -> tuple[Learner, float]:
    if scenario.learning is None:
        assert population.requested_samples is not None  # enforced by cross_checks
        assert scenario.fl.model_size_bits is not None
        return NullLearner(population.requested_samples), scenario.fl.model_size_bits
    from netfl.learning.build import build_learner

    learner = build_learner(
        scenario.learning,
        population.n_clients,
        population.requested_samples,
        streams,
        scenario.fl.aggregation,
    )
    if scenario.fl.protocol == "hierarchical" and hasattr(learner, "local_repeats"):
        learner.local_repeats = scenario.fl.kappa1  # HierFAVG: kappa_1 local updates a job
    bits = scenario.fl.model_size_bits or learner.model_size_bits
    return learner, bits


def build_world(scenario: Scenario, on_round: Callable[[RoundRecord], None] | None = None) -> World:
    """Build the SimPy environment and every component of the run."""
    streams = Streams(scenario.seed)
    env = simpy.Environment()
    # The schema is fixed up front, so the timeline can be written in parts (one schema).
    rb_log = getattr(scenario.radio, "record_rb_allocations", False)
    moving = any(group.mobility.model != "static" for group in scenario.devices.groups)
    optional = (
        *(RB_COLUMNS if rb_log else ()),
        *(MOBILITY_COLUMNS if moving else ()),
        *(STEP_COLUMNS if scenario.fl.partial_work else ()),
    )
    timeline = Timeline(optional=optional)
    population = build_population(scenario.devices, streams)
    n = population.n_clients
    radio = build_radio(scenario, env, streams, timeline, n)
    learner, model_size_bits = _learner(scenario, population, streams)
    devices, network, energy = build_devices(
        scenario, env, population, learner, radio.network, streams
    )

    strategy = make_strategy(strategies().load(scenario.selection.name), scenario.selection.params)
    strategy.setup(
        PopulationInfo(
            n_clients=n,
            budget=scenario.fl.selection_budget,
            n_samples=learner.n_samples,
            rounds=scenario.fl.rounds,
            deadline_s=scenario.fl.deadline_s,
            model_size_bits=model_size_bits,
            target=scenario.fl.clients_per_round,
        ),
        streams.get("selection"),
    )
    server = build_server(
        scenario,
        env,
        devices=devices,
        network=network,
        energy=energy,
        learner=learner,
        model_size_bits=model_size_bits,
        strategy=strategy,
        timeline=timeline,
        streams=streams,
        on_round=on_round,
        client_cells=radio.columns.get("cell"),
    )
    client_columns: dict[str, Any] = {
        "client": np.arange(n),
        "group": population.group.astype(str),
        **radio.columns,
        "n_samples": learner.n_samples,
        "compute_sps": devices.compute_sps,
        "cold_start_s": population.cold_start_s,
        **learner.client_columns(),
    }
    return World(
        scenario,
        env,
        timeline,
        population,
        network,
        devices,
        learner,
        strategy,
        server,
        client_columns,
    )
