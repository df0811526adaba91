"""The whole scenario: one frozen, validated model made of the sections."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator

from netfl.config.base import StrictModel
from netfl.config.cell import CellConfig
from netfl.config.devices import DevicesConfig
from netfl.config.fl import FLConfig
from netfl.config.learning import LearningConfig, learning_problems
from netfl.config.output import OutputConfig
from netfl.config.radio import RadioConfig, default_radio
from netfl.config.selection import SelectionConfig
from netfl.config.traffic import TrafficConfig
from netfl.errors import Problem

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class Scenario(StrictModel):
    """A complete simulation scenario: everything a run depends on, and nothing else."""

    name: str = Field(
        default="scenario",
        description="Scenario name; run directories are named `<name>-<UTC time>`.",
    )
    seed: int = Field(
        default=0,
        ge=0,
        description="The one seed: every component draws from its own stream derived from it.",
    )
    cell: CellConfig = Field(default_factory=CellConfig, description="The cell's geometry.")
    radio: RadioConfig = Field(default_factory=default_radio, description="The radio links.")
    devices: DevicesConfig = Field(
        default_factory=DevicesConfig, description="The device population."
    )
    traffic: TrafficConfig = Field(default_factory=TrafficConfig, description="Background traffic.")
    fl: FLConfig = Field(default_factory=FLConfig, description="The FL protocol.")
    selection: SelectionConfig = Field(
        default_factory=SelectionConfig, description="The client-selection strategy."
    )
    learning: LearningConfig | None = Field(
        default_factory=LearningConfig,
        description="Real training, or `none` for timing-only studies.",
    )
    output: OutputConfig = Field(default_factory=OutputConfig, description="Output.")

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(
                "use letters, digits, '_', '-' and '.' only (it names the run directory)"
            )
        return value

    @field_validator("learning", mode="before")
    @classmethod
    def _none_string(cls, value: Any) -> Any:
        # YAML 1.1 reads an unquoted `off` (and `no`, `false`) as False.
        if value is False:
            return None
        if isinstance(value, str) and value.strip().lower() in {"none", "off", "null"}:
            return None
        return value


def cross_checks(scenario: Scenario) -> list[Problem]:
    """Constraints between sections that a single field cannot express.

    Only what the schema itself knows: checks that need the radio, the registries or the
    datasets run above it, in :func:`netfl.validation.scenario_problems`."""
    problems: list[Problem] = []
    n_clients = scenario.devices.n_clients
    if scenario.fl.clients_per_round > n_clients:
        problems.append(
            Problem(
                "fl.clients_per_round",
                f"{scenario.fl.clients_per_round} is more than the population"
                f" ({n_clients} devices)",
            )
        )
    if scenario.fl.is_async and scenario.fl.concurrency_in_force > n_clients:
        key = "concurrency" if scenario.fl.concurrency is not None else "clients_per_round"
        problems.append(
            Problem(
                f"fl.{key}",
                f"{scenario.fl.concurrency_in_force} clients training at once is more than the"
                f" population ({n_clients} devices)",
            )
        )
    if scenario.fl.protocol == "hierarchical" and scenario.cell.backhaul.aggregator != "edge":
        problems.append(
            Problem(
                "cell.backhaul.aggregator",
                "must be edge under fl.protocol hierarchical: clients reach their edge"
                " aggregator, the edges reach the cloud",
            )
        )
    if scenario.learning is None and scenario.fl.model_size_bits is None:
        problems.append(
            Problem(
                "fl.model_size_bits",
                "required when learning is none (there is no model to measure)",
            )
        )
    with_sizes = [g.n_samples is not None for g in scenario.devices.groups]
    if any(with_sizes) and not all(with_sizes):
        index = with_sizes.index(False)
        problems.append(
            Problem(
                f"devices.groups.{index}.n_samples",
                "set n_samples for every group or for none",
            )
        )
    elif scenario.learning is None:
        for index, group in enumerate(scenario.devices.groups):
            if group.n_samples is None:
                problems.append(
                    Problem(
                        f"devices.groups.{index}.n_samples",
                        "required when learning is none (compute time depends on data size)",
                    )
                )
    problems += learning_problems(scenario.learning, scenario.fl, scenario.devices)
    return problems
