"""Scenario section `fl`: the federated-learning protocol, rounds and deadlines."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_validator

from netfl.config.base import (
    Bits,
    NonNegativeBits,
    NonNegativeFloat,
    PositiveInt,
    PositiveSeconds,
    Probability,
    Seconds,
    StrictModel,
)

#: The distribution step each protocol uses unless ``fl.distribution`` says otherwise.
DEFAULT_DISTRIBUTION = {"fedcs": "multicast", "fedavg": "unicast"}


class FLConfig(StrictModel):
    """The federated-learning protocol: rounds, budgets and deadlines."""

    protocol: Literal["fedavg", "fedcs"] = Field(
        default="fedavg",
        description=(
            "fedavg: synchronous FedAvg, selected clients upload in parallel as soon as they"
            " are ready. fedcs: the FedCS protocol (Yoshida et al. 2020 Sec. II), uploads one"
            " after another in"
            " the selection order (scheduled upload)."
        ),
    )
    rounds: PositiveInt | None = Field(
        default=20, description="Number of rounds to run (null: until time_budget_s)."
    )
    time_budget_s: PositiveSeconds | None = Field(
        default=None,
        description="Simulated-time budget T_final; no round starts after it and a running"
        " round is cut at it (null: none).",
    )
    clients_per_round: PositiveInt = Field(
        default=5,
        description="Updates aggregated per round (S_round, m); the strategy selects"
        " ceil(m (1 + over_selection)).",
    )
    over_selection: NonNegativeFloat = Field(
        default=0.0,
        description="Over-selection fraction o: select ceil(m (1 + o)) clients and close the"
        " round when the first m updates have arrived (the others are cancelled).",
    )
    request_fraction: Probability = Field(
        default=1.0,
        gt=0,
        description=(
            "Fraction C of the population asked in the Resource Request step; ceil(K*C)"
            " random clients are asked and those available become the round's candidates."
        ),
    )
    request_time_s: Seconds = Field(
        default=0.0,
        description="Fixed duration of the Resource Request step (broadcast, processing), s.",
    )
    request_response_bits: NonNegativeBits = Field(
        default=0.0,
        description="Size of each candidate's resource report, uploaded through the network"
        " in parallel after request_time_s (0: free).",
    )
    selection_time_s: Seconds = Field(
        default=0.0, description="Time the server spends computing the selection, s."
    )
    distribution: Literal["multicast", "unicast", "instant"] | None = Field(
        default=None,
        description="How the model reaches the selected clients: multicast (all at the"
        " slowest one's rate, as in FedCS), unicast (each at its own rate), instant (free)."
        " null: multicast for fedcs, unicast for fedavg.",
    )
    loss_eval_epochs: NonNegativeFloat = Field(
        default=1 / 3,
        description="Device work of evaluating the model's loss on its data when a strategy"
        " polls for it (pow-d), in passes of training over the data (a forward pass costs"
        " about a third of a training pass).",
    )
    oracle_exchange_time: bool = Field(
        default=False,
        description="Report each candidate's expected exchange time this round as the"
        " feature expected_exchange_time_s (oracle knowledge: Huang et al. 2021's FedCS(3)"
        " baseline).",
    )
    aggregation_time_s: Seconds = Field(
        default=0.0, description="Time the server spends aggregating, s."
    )
    deadline_s: PositiveSeconds | None = Field(
        default=None,
        description=(
            "Round deadline T_round, from the round's start; later uploads are discarded"
            " (null: wait for every selected client)."
        ),
    )
    empty_round_wait_s: PositiveSeconds = Field(
        default=1.0,
        description=(
            "When a round selects nobody (no candidate available), the server waits this"
            " long before the next round (or until the round deadline, if set)."
        ),
    )
    checkpoint_every: PositiveInt | None = Field(
        default=None,
        description=(
            "Write a checkpoint to the run directory's checkpoint/ every this many rounds,"
            " and at the last completed round when the run is interrupted or fails, so"
            " `netfl simulate --resume RUN_DIR` can continue it (null: never)."
        ),
    )
    model_size_bits: Bits | None = Field(
        default=None,
        description=(
            "Size of the model on the air, bits (null: 32 bits times the learning model's"
            " parameter count; required when learning is none)."
        ),
    )

    @model_validator(mode="after")
    def _stops(self) -> FLConfig:
        if self.rounds is None and self.time_budget_s is None:
            raise ValueError("set rounds, time_budget_s, or both: otherwise the run never ends")
        return self

    @property
    def distribution_mode(self) -> str:
        """The distribution step in force (the protocol's default when not set)."""
        return self.distribution or DEFAULT_DISTRIBUTION[self.protocol]

    @property
    def selection_budget(self) -> int:
        """How many clients the strategy selects: ceil(m (1 + o))."""
        # The tolerance keeps 10 x (1 + 0.1) at 11, not 12, despite rounding.
        return math.ceil(self.clients_per_round * (1 + self.over_selection) - 1e-9)
