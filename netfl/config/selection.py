"""Scenario section `selection`: the client-selection strategy and its parameters."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from netfl.config.base import StrictModel


class SelectionConfig(StrictModel):
    """The client-selection strategy."""

    name: str = Field(
        default="random",
        description=(
            "Registered strategy name (`netfl list`), or `package.module:Class` for your own."
        ),
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="Constructor parameters of the strategy (checked against its signature).",
    )
