"""Scenario section `cell`: geometry of the hexagonal LTE cell and its backhaul."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from netfl.config.base import (
    BitsPerSecond,
    Meters,
    NonNegativeInt,
    PositiveInt,
    PositiveMeters,
    Probability,
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
    """Geometry of the hexagonal cell (the base station at the centre) or, with more than one
    site or with sectors, of a multi-cell layout (docs/radio.md, "Multi-cell layouts")."""

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
    sites: int = Field(
        default=1,
        description=(
            "Base-station sites on the hexagonal grid: 1, 7 or 19 (ISD = sqrt(3) radius_m)."
            " More than one site, sectors: 3 or indoor_fraction > 0 selects the multi-cell"
            " model: every site's cells schedule their own RBs, each device is served by its"
            " strongest cell, and interference follows the transfers in flight."
        ),
    )
    sectors: int = Field(
        default=1,
        description=(
            "Cells per site: 1 (omni antenna) or 3 (3GPP sector antennas, boresights 30/150/270"
            " degrees, TR 38.901 Table 7.3-1 element pattern)."
        ),
    )
    wrap_around: bool = Field(
        default=False,
        description=(
            "Wrap the 19-site layout around (each device sees the nearest image of every"
            " site), so edge cells see two full rings of interferers. Needs sites: 19."
        ),
    )
    indoor_fraction: Probability = Field(
        default=0.0,
        description=(
            "Fraction of devices indoors, in [0, 1]: on floor n of a 4-8 floor building"
            " (3 (n - 1) + 1.5 m high) with TR 38.901 outdoor-to-indoor loss (o2i_model) and a"
            " uniform indoor distance; the others at ue_height_m (multi-cell model)."
        ),
    )
    o2i_model: Literal["low_loss", "high_loss"] = Field(
        default="low_loss",
        description="TR 38.901 Table 7.4.3-2 building penetration model of indoor devices.",
    )
    sector_antenna_elements: PositiveInt = Field(
        default=1,
        description=(
            "Vertical elements per sector antenna (sectors: 3); more than one steers the"
            " beam down by sector_downtilt_deg (10 in the TR 38.901 calibration)."
        ),
    )
    sector_downtilt_deg: float = Field(
        default=0.0,
        ge=0.0,
        le=90.0,
        description=(
            "Electrical downtilt of the sector antennas below the horizon, degrees (12 in the"
            " TR 38.901 calibration); needs sector_antenna_elements > 1."
        ),
    )

    @field_validator("sites")
    @classmethod
    def _sites(cls, value: int) -> int:
        if value not in (1, 7, 19):
            raise ValueError(f"{value} is not a hexagonal layout; use 1, 7 or 19 sites")
        return value

    @field_validator("sectors")
    @classmethod
    def _sectors(cls, value: int) -> int:
        if value not in (1, 3):
            raise ValueError(f"{value} sectors are not supported; use 1 (omni) or 3")
        return value

    @field_validator("wrap_around")
    @classmethod
    def _wrap(cls, value: bool, info: ValidationInfo) -> bool:
        sites = info.data.get("sites", 1)
        if value and sites != 19:
            raise ValueError(f"wrap-around needs sites: 19 (this layout has {sites})")
        return value

    @field_validator("sector_antenna_elements")
    @classmethod
    def _elements(cls, value: int, info: ValidationInfo) -> int:
        if value > 1 and info.data.get("sectors", 1) != 3:
            raise ValueError("more than one element per antenna needs sectors: 3")
        return value

    @field_validator("sector_downtilt_deg")
    @classmethod
    def _tilt(cls, value: float, info: ValidationInfo) -> float:
        if value > 0 and info.data.get("sector_antenna_elements", 1) == 1:
            raise ValueError("an electrical downtilt needs sector_antenna_elements > 1")
        return value

    @property
    def multicell(self) -> bool:
        """True when the scenario uses the multi-cell layout model."""
        return self.sites > 1 or self.sectors > 1 or self.indoor_fraction > 0

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
        problems = []
        if self.multicell and self.interfering_rings > 0:
            problems.append(
                "interfering_rings: the multi-cell model (sites, sectors, indoor_fraction)"
                " simulates every site's interference itself; leave interfering_rings at 0"
            )
        if self.multicell and self.drop != "uniform_area":
            problems.append("drop: the multi-cell model drops devices uniformly over the area")
        if problems:
            raise ValueError("; ".join(problems))
        inradius = self.radius_m * SQRT3 / 2
        if self.min_distance_m >= inradius:
            raise ValueError(
                f"min_distance_m ({self.min_distance_m:g}) must be below the hexagon's"
                f" inradius ({inradius:g} m)"
            )
        return self
