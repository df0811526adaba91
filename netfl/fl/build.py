"""Elaboration of the devices and the FL server from a scenario (used by :mod:`netfl.world`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import simpy

from netfl.config import Scenario
from netfl.errors import ScenarioWarning
from netfl.fl.device import Devices
from netfl.fl.energy import EnergyMeter
from netfl.fl.links import GroupLinkNetwork
from netfl.fl.population import Population
from netfl.fl.server import Server
from netfl.learning.interface import EvalSchedule, Learner
from netfl.radio.network import Network
from netfl.recorder.tables import RoundRecord
from netfl.recorder.timeline import Timeline
from netfl.rng import Streams
from netfl.selection.base import Strategy


def update_samples(scenario: Scenario, learner: Learner) -> np.ndarray:
    """Samples one local update processes per client: the learner's ``update_samples``
    where it says (local steps), else local epochs x the client's samples."""
    given = getattr(learner, "update_samples", None)
    repeats = scenario.fl.kappa1 if scenario.fl.protocol == "hierarchical" else 1
    if given is not None:
        return repeats * np.asarray(given, dtype=float)
    epochs = (scenario.learning.local_epochs or 1) if scenario.learning else 1
    return repeats * epochs * np.asarray(learner.n_samples, dtype=float)


def build_devices(
    scenario: Scenario,
    env: simpy.Environment,
    population: Population,
    learner: Learner,
    network: Network,
    streams: Streams,
) -> tuple[Devices, Network, EnergyMeter]:
    """The devices, the network as the server sees it (group links added) and the meter."""
    work = update_samples(scenario, learner)
    devices = Devices(env, scenario.devices, population, learner.n_samples, work, streams)
    if any(g.link is not None for g in scenario.devices.groups):
        network = GroupLinkNetwork(
            network, scenario.devices, population, devices, streams.get("devices.link")
        )
    return devices, network, EnergyMeter.build(scenario.devices, population)


def build_server(
    scenario: Scenario,
    env: simpy.Environment,
    *,
    devices: Devices,
    network: Network,
    energy: EnergyMeter,
    learner: Learner,
    model_size_bits: float,
    strategy: Strategy,
    timeline: Timeline,
    streams: Streams,
    on_round: Callable[[RoundRecord], None] | None = None,
    client_cells: np.ndarray | None = None,
) -> Server:
    """The FL server, evaluating the global model on the scenario's schedule."""
    warn_impossible_deadline(scenario, devices, network, model_size_bits)
    contexts = None
    if "data_context" in strategy.requires:
        from netfl.fl.contexts import device_contexts

        contexts = device_contexts(learner, streams.get("devices.context_hash"))
    kind: type[Server] = Server
    extra: dict[str, Any] = {}
    if scenario.fl.is_async:
        from netfl.fl.asynchronous import AsyncServer
        from netfl.fl.protocols import aggregation_rule

        kind, extra = AsyncServer, {"rule": aggregation_rule(scenario.fl)}
    elif scenario.fl.protocol == "hierarchical":
        from netfl.fl.hierarchical import HierarchicalServer
        from netfl.radio.topology import BackhaulLink

        n = len(learner.n_samples)
        cells = np.zeros(n, dtype=np.int64) if client_cells is None else client_cells
        backhaul = scenario.cell.backhaul
        capacity = backhaul.edge_cloud_capacity_bps
        cloud_link = BackhaulLink(
            env, backhaul.edge_cloud_latency_s, math.inf if capacity is None else capacity
        )
        kind, extra = HierarchicalServer, {"edges": cells, "cloud_link": cloud_link}
    return kind(
        env,
        **extra,
        config=scenario.fl,
        model_size_bits=model_size_bits,
        network=network,
        devices=devices,
        learner=learner,
        strategy=strategy,
        timeline=timeline,
        request_rng=streams.get("fl.request"),
        energy=energy,
        eval_schedule=eval_schedule(scenario),
        on_round=on_round,
        contexts=contexts,
    )


def eval_schedule(scenario: Scenario) -> EvalSchedule:
    """When the global model is evaluated: ``learning.eval_every_rounds``/``_s`` and after
    the last round (only after the last one in timing-only runs)."""
    learning = scenario.learning
    if learning is None:
        return EvalSchedule(rounds=scenario.fl.rounds)
    return EvalSchedule(learning.eval_every_rounds, learning.eval_every_s, scenario.fl.rounds)


def fastest_round_s(
    scenario: Scenario, devices: Devices, network: Network, model_size_bits: float
) -> float:
    """The shortest time from a round's start to the end of its first upload, at nominal
    link rates.

    Request and selection times, plus the fastest client's download and upload at its
    nominal rates and its fastest possible update (:meth:`Devices.fastest_update_s`; under
    partial work, its first local step).
    A lower bound only where no transfer beats its nominal rate: LTE fluctuation and fast
    fading, a group link's bandwidth above its mean or its exchange noise can be faster.
    """
    fl = scenario.fl
    with np.errstate(divide="ignore"):  # a nominal rate of 0 (below MCS 0): never
        download = (
            0.0
            if fl.distribution_mode == "instant"
            else model_size_bits / np.asarray(network.rate_dl_bps, dtype=float)
        )
        upload = model_size_bits / np.asarray(network.rate_ul_bps, dtype=float)
    update = devices.fastest_update_s()
    if fl.partial_work and scenario.learning is not None:  # one local step is enough
        first_step = np.minimum(scenario.learning.batch_size, devices.n_samples)
        update = update * first_step / np.maximum(devices.update_samples, 1.0)
    per_client = download + update + upload
    return fl.request_time_s + fl.selection_time_s + float(np.min(per_client))


def warn_impossible_deadline(
    scenario: Scenario, devices: Devices, network: Network, model_size_bits: float
) -> None:
    """Warn when the round deadline is shorter than any round can be."""
    deadline = scenario.fl.deadline_s
    if deadline is None:
        return
    bound = fastest_round_s(scenario, devices, network, model_size_bits)
    if deadline < bound:
        warnings.warn(
            f"fl.deadline_s: {deadline:g} s is shorter than the fastest possible round"
            f" (about {bound:.3g} s at nominal rates): no update arrives in time unless a"
            " link beats its nominal rate",
            ScenarioWarning,
            stacklevel=2,
        )
