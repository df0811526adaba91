"""Scenario section `devices`: the device population, in groups."""

from __future__ import annotations

from pydantic import Field, model_validator

from netfl.config.base import PositiveInt, StrictModel
from netfl.config.dist import Distribution, Uniform


class DeviceGroup(StrictModel):
    """A group of devices that share their parameters' distributions."""

    name: str = Field(default="default", description="Group name (the `group` column).")
    count: PositiveInt = Field(default=20, description="Number of devices in the group.")
    compute_sps: Distribution = Field(
        default=Uniform(dist="uniform", low=10.0, high=100.0),
        description="Mean compute capability, training samples per second (drawn once).",
    )
    n_samples: Distribution | None = Field(
        default=None,
        description=(
            "Training samples per device, drawn once and rounded (null: set by the learning"
            " partition; required when learning is none)."
        ),
    )


class DevicesConfig(StrictModel):
    """The device population: one or more groups."""

    groups: list[DeviceGroup] = Field(
        default_factory=lambda: [DeviceGroup()],
        min_length=1,
        description="Device groups; the population is their concatenation, in order.",
    )

    @model_validator(mode="after")
    def _unique_names(self) -> DevicesConfig:
        names = [g.name for g in self.groups]
        if len(set(names)) != len(names):
            raise ValueError(f"group names must be unique, got {names}")
        return self

    @property
    def n_clients(self) -> int:
        return sum(g.count for g in self.groups)
