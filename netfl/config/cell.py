"""Scenario section `cell`: geometry of the hexagonal LTE cell and its backhaul."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from netfl.config.base import (
    BitsPerSecond,
    Meters,
    NonNegativeInt,
    PositiveMeters,
    Seconds,
    StrictModel,
    to_si,
)

SQRT3 = math.sqrt(3.0)


class BackhaulConfig(StrictModel):
    """Links from the base station to the aggregator: BS -> edge server -> cloud.

    A model on its way between the BS and the aggregator crosses each link on the path:
    it waits the link's latency and shares its capacity with the other models crossing it
    (store-and-forward at each node).
    """

    aggregator: Literal["edge", "cloud"] = Field(
        default="edge",
        description=(
            "Where the FL server aggregates: at the edge server next to the BS (MEC) or in"
            " the cloud behind it."
        ),
    )
    bs_edge_latency_s: Seconds = Field(
        default=0.0, description="One-way latency of the BS -> edge link, seconds."
    )
    bs_edge_capacity_bps: BitsPerSecond | None = Field(
        default=None, description="Capacity of the BS -> edge link, bit/s (null: unlimited)."
    )
    edge_cloud_latency_s: Seconds = Field(
        default=0.02, description="One-way latency of the edge -> cloud link, seconds."
    )
    edge_cloud_capacity_bps: BitsPerSecond | None = Field(
        default=1.0e9,
        description="Capacity of the edge -> cloud link, bit/s (null: unlimited).",
    )


class CellConfig(StrictModel):
    """Geometry of the hexagonal cell; the base station sits at the centre."""

    radius_m: PositiveMeters = Field(
        default=500.0, description="Hexagon circumradius (centre to corner), metres."
    )
    inter_site_distance_m: PositiveMeters | None = Field(
        default=None,
        description=(
            "Inter-site distance, metres; sets radius_m = ISD / sqrt(3) (give one of the two)."
        ),
    )
    min_distance_m: Meters = Field(
        default=10.0, description="Minimum base-station-to-device distance, metres."
    )
    drop: Literal["uniform_area", "uniform_radius"] = Field(
        default="uniform_area",
        description=(
            "How devices are placed: uniformly over the hexagon's area, or with the distance"
            " drawn uniformly in [min_distance_m, edge] (users crowd the centre; the"
            " MAB-CS paper's throughput statistics need it, see docs/radio.md)."
        ),
    )
    bs_height_m: PositiveMeters = Field(
        default=10.0, description="Base-station antenna height, metres (M.2135 UMi: 10 m)."
    )
    ue_height_m: PositiveMeters = Field(
        default=1.5, description="Device antenna height, metres (M.2135: 1.5 m)."
    )
    interfering_rings: NonNegativeInt = Field(
        default=0,
        le=3,
        description=(
            "Rings of co-channel cells around the serving cell whose base stations"
            " interfere with the downlink (0: isolated cell; 1: the 7-cell layout)."
        ),
    )
    backhaul: BackhaulConfig = Field(
        default_factory=BackhaulConfig, description="BS -> edge -> cloud links."
    )

    @model_validator(mode="before")
    @classmethod
    def _radius_from_isd(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("radius_m") is not None:
            return data
        try:
            isd = to_si(data.get("inter_site_distance_m"), "length")  # may be "1 km"
        except PydanticCustomError:
            return data  # the field reports it, under its own key
        if isinstance(isd, float) and isd > 0:
            data = {**data, "radius_m": isd / SQRT3}
        return data

    @model_validator(mode="after")
    def _inside(self) -> CellConfig:
        isd = self.inter_site_distance_m
        if isd is not None and not math.isclose(isd / SQRT3, self.radius_m, rel_tol=1e-9):
            raise ValueError(
                f"inter_site_distance_m ({isd:g}) and radius_m ({self.radius_m:g}) disagree"
                f" (radius = ISD / sqrt(3) = {isd / SQRT3:g}); give only one of them"
            )
        inradius = self.radius_m * SQRT3 / 2
        if self.min_distance_m >= inradius:
            raise ValueError(
                f"min_distance_m ({self.min_distance_m:g}) must be below the hexagon's"
                f" inradius ({inradius:g} m)"
            )
        return self
