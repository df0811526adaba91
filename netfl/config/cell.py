"""Scenario section `cell`: geometry of the hexagonal LTE cell."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from netfl.config.base import Meters, PositiveMeters, StrictModel


class CellConfig(StrictModel):
    """Geometry of the hexagonal cell; the base station sits at the centre."""

    radius_m: PositiveMeters = Field(
        default=500.0, description="Hexagon circumradius (centre to corner), metres."
    )
    min_distance_m: Meters = Field(
        default=10.0, description="Minimum base-station-to-device distance, metres."
    )
    drop: Literal["uniform_area", "uniform_radius"] = Field(
        default="uniform_area",
        description=(
            "How devices are placed: uniformly over the hexagon's area, or with the distance"
            " drawn uniformly in [min_distance_m, radius_m] (users crowd the centre)."
        ),
    )

    @model_validator(mode="after")
    def _inside(self) -> CellConfig:
        if self.min_distance_m >= self.radius_m * 0.866:
            raise ValueError(
                f"min_distance_m ({self.min_distance_m:g}) must be below the hexagon's"
                f" inradius ({self.radius_m * 0.866:g} m)"
            )
        return self
