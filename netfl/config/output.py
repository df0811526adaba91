"""Scenario section `output`: where the run directory goes."""

from __future__ import annotations

from pydantic import Field

from netfl.config.base import PositiveInt, PositiveSeconds, StrictModel


class OutputConfig(StrictModel):
    """Where and how the run directory is written."""

    root: str = Field(
        default="runs",
        description="Parent folder of run directories (`runs/<name>-<UTC time>/`).",
    )
    progress_every_rounds: PositiveInt = Field(
        default=1, description="Log-line interval when the output is not a terminal."
    )
    trajectory_every_s: PositiveSeconds | None = Field(
        default=10.0,
        description="Moving devices' positions are timeline rows (kind `position`, columns"
        " `x_m`, `y_m`) every this many simulated seconds (null: none).",
    )
