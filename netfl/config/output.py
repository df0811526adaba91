"""Scenario section `output`: where the run directory goes."""

from __future__ import annotations

from pydantic import Field

from netfl.config.base import PositiveInt, StrictModel


class OutputConfig(StrictModel):
    """Where and how the run directory is written."""

    root: str = Field(
        default="runs",
        description="Parent folder of run directories (`runs/<name>-<UTC time>/`).",
    )
    progress_every_rounds: PositiveInt = Field(
        default=1, description="Log-line interval when the output is not a terminal."
    )
