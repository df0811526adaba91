"""Scenario section `fl`: the federated-learning protocol, rounds and deadlines."""

from __future__ import annotations

from pydantic import Field, model_validator

from netfl.config.base import Bits, PositiveInt, PositiveSeconds, Probability, StrictModel


class FLConfig(StrictModel):
    """The federated-learning protocol: rounds, budgets and deadlines."""

    rounds: PositiveInt | None = Field(
        default=20, description="Number of rounds to run (null: until time_budget_s)."
    )
    time_budget_s: PositiveSeconds | None = Field(
        default=None,
        description="Simulated-time budget T_final; no round starts after it (null: none).",
    )
    clients_per_round: PositiveInt = Field(
        default=5, description="Clients selected per round (S_round, m)."
    )
    request_fraction: Probability = Field(
        default=1.0,
        gt=0,
        description=(
            "Fraction C of the population asked in the Resource Request step; ceil(K*C)"
            " random clients become the round's candidates."
        ),
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
