"""Wall time of a run: start-up, training, events and writing, at measured costs.

``wall = start-up + rounds x (the round's training + evaluation) + the events + writing``:

- start-up: Python with netfl's libraries (:data:`STARTUP_S`; torch and the dataset with
  learning, :data:`LEARNING_STARTUP_S`), and the radio's drop of the devices' links
  (:data:`LINK_S`, a device and cell);
- training: the local updates' samples at the model's cost a sample
  (:data:`SAMPLE_S`, the batched backend on CPU, one thread) and a fixed cost a round
  (:data:`ROUND_S`: the batched plan, the aggregation, the evaluation of the global
  model);
- events: the protocol's timeline rows (:data:`ROW_S`), the background transfers, each a
  flow start and end the radio update recomputes the cells' links for (:data:`FLOW_S`),
  and the moving devices, whose positions, channels and handover the radio update
  advances every ``radio.update_interval_s`` (:data:`MOVE_S` a device and update);
- writing: the rows again (:data:`WRITE_ROW_S`).

The costs are CPU seconds fitted to runs of the shipped scenarios on the development
machines (shared 2-core VMs, Python 3.11, torch 2.13 CPU; docs/benchmarks.md, "How
long, how much"): the wall time of an idle machine like it. A faster machine takes
proportionally less; a machine shared with other work more wall time than CPU time.
The model's size (:data:`MODEL_PARAMETERS`, for ``fl.model_size_bits`` when it is not
given) is that of netfl's own models; a plug-in model's is unknown before it is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from netfl.config import Scenario
from netfl.resources import rows_per_round

if TYPE_CHECKING:
    from netfl.forecast.rounds import RoundTime
    from netfl.forecast.rows import Rows

#: Parameters of netfl's models on the datasets they are registered for (the ``netfl
#: list models`` summaries; tests/test_forecast.py builds each and counts).
MODEL_PARAMETERS = {
    "digits_mlp": 4_810,
    "logistic_regression": 610,
    "mlp_64_30": 52_500,
    "fedcs_cifar_cnn": 4_583_146,
    "rbcsf_fmnist_cnn": 431_080,
    "rbcsf_cifar_cnn": 1_756_426,
    "gpfl_cifar_cnn": 122_570,
}
#: CPU seconds a training sample costs (forward and backward, batched backend, one
#: thread): docs/benchmarks.md, "Training" (50 clients: digits MLP 2,224 client-epochs/s
#: of 100 samples; the Fashion-MNIST CNN 31; the FedCS CIFAR-10 CNN 5.9 of 50); the others
#: scaled by their parameters from the nearest measured model of their kind.
SAMPLE_S = {
    "digits_mlp": 4.5e-6,
    "logistic_regression": 3.0e-6,
    "mlp_64_30": 1.2e-5,
    "fedcs_cifar_cnn": 3.4e-3,
    "rbcsf_fmnist_cnn": 3.2e-4,
    "rbcsf_cifar_cnn": 1.3e-3,
    "gpfl_cifar_cnn": 1.5e-4,
}
STARTUP_S = 1.5
LEARNING_STARTUP_S = 5.7
LINK_S = 2.0e-7
ROUND_S = 0.057
ROW_S = 6.0e-6
FLOW_S = 2.8e-4
MOVE_S = 4.7e-5
WRITE_ROW_S = 4.0e-7


@dataclass(frozen=True)
class WallTime:
    """Estimated wall seconds of a run, by part."""

    startup_s: float
    training_s: float
    events_s: float
    write_s: float

    @property
    def total_s(self) -> float:
        return self.startup_s + self.training_s + self.events_s + self.write_s

    def describe(self) -> str:
        parts = (
            ("start-up", self.startup_s),
            ("training", self.training_s),
            ("events", self.events_s),
            ("writing", self.write_s),
        )
        return ", ".join(f"{name} {seconds:,.0f} s" for name, seconds in parts if seconds >= 0.5)


def model_bits(scenario: Scenario) -> float | None:
    """The model's size on the air: ``fl.model_size_bits``, or 32 bits a parameter of one
    of netfl's models (None for a plug-in model)."""
    if scenario.fl.model_size_bits is not None:
        return float(scenario.fl.model_size_bits)
    learning = scenario.learning
    if learning is None or learning.model not in MODEL_PARAMETERS:
        return None
    return 32.0 * MODEL_PARAMETERS[learning.model]


def wall_time(
    scenario: Scenario,
    rounds: float,
    timing: RoundTime | None,
    rows: Rows,
) -> WallTime | None:
    """The :class:`WallTime` of a run of ``rounds`` rounds (None: a plug-in model, whose
    cost a sample is unknown)."""
    learning = scenario.learning
    cell = scenario.cell
    startup = STARTUP_S + LINK_S * scenario.devices.n_clients * cell.sites * cell.sectors
    training = 0.0
    if learning is not None:
        cost = SAMPLE_S.get(learning.model)
        if cost is None:
            return None
        startup += LEARNING_STARTUP_S
        samples = _samples_a_round(scenario, timing)
        training = rounds * (ROUND_S + cost * samples)
    protocol_rows = rows_per_round(scenario)[0] * rounds
    events = ROW_S * (protocol_rows + rows.positions) + FLOW_S * rows.background_flows
    events += MOVE_S * rows.moving_updates
    write = WRITE_ROW_S * (protocol_rows + rows.extra + rows.strategy)
    return WallTime(startup, training, events, write)


def _samples_a_round(scenario: Scenario, timing: RoundTime | None) -> float:
    """Training samples a round: its clients' local updates."""
    from netfl.forecast.rounds import mean_update_samples

    clients = timing.clients if timing is not None else scenario.fl.clients_per_round
    return clients * mean_update_samples(scenario)
