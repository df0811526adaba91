"""Scenario section `cell`: geometry of the hexagonal cells (one site or a grid of 1, 7 or
19 sites of 1 or 3 sectors), the devices' indoor share, the sector antennas, the backhaul."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from netfl.config.base import (
    BitsPerSecond,
    Meters,
    PositiveInt,
    PositiveMeters,
    Probability,
    Seconds,
    StrictModel,
    to_si,
)

SQRT3 = math.sqrt(3.0)
SITE_COUNTS = (1, 7, 19)  # 0, 1 or 2 rings of hexagonal sites
SECTOR_COUNTS = (1, 3)  # omni, or 3 sectors at 30/150/270 degrees (TR 38.901 Sec. 7.8)


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


#: The default network: the TR 36.873 3D-UMi phase-1 calibration layout (TR 36.873 V12.5.0
#: Table 8.2-1 and Table 6-1): 19 sites x 3 sectors, wrap-around, ISD 200 m, BS 10 m, 80%
#: indoor devices with the TR 36.873 O2I loss, one 8 dBi element per sector (K = M = 1);
#: ``netfl calibrate tr36873_umi`` checks it against the 3GPP reference (docs/radio.md).
DEFAULT_INTER_SITE_DISTANCE_M = 200.0


class CellConfig(StrictModel):
    """The network's layout: hexagonal sites of omni or sectored cells, where the devices
    are, the sector antennas and the backhaul. The defaults are the calibrated 3GPP network
    (:data:`DEFAULT_INTER_SITE_DISTANCE_M`); an isolated cell is ``sites: 1, sectors: 1``."""

    radius_m: PositiveMeters = Field(
        default=DEFAULT_INTER_SITE_DISTANCE_M / SQRT3,
        description=(
            "Hexagon circumradius (site to corner), metres (default: ISD 200 m / sqrt(3), the"
            " TR 36.873 3D-UMi calibration)."
        ),
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
    sites: int = Field(
        default=19,
        description=(
            "Sites of the hexagonal layout: 1 (an isolated site), 7 (one ring) or 19 (two"
            " rings), ISD apart (netfl/map/layout.py, docs/radio.md)."
        ),
    )
    sectors: int = Field(
        default=3,
        description=(
            "Cells per site: 1 (omni) or 3 (boresights 30, 150 and 270 degrees, TR 36.814"
            " Fig. A.2.1.1-2 / TR 38.901 Sec. 7.8, with the 3GPP sector antenna)."
        ),
    )
    device_sites: Literal["all", "centre"] = Field(
        default="centre",
        description=(
            "Where the FL devices are dropped: over every site's hexagon, or over the centre"
            " site's alone (a single-cell-style study: the other sites' cells interfere and"
            " carry the background traffic). Each device is served by its strongest cell."
        ),
    )
    wrap_around: bool | None = Field(
        default=None,
        validate_default=True,
        description=(
            "Wrap-around of the 19-site layout: each device sees the nearest of the 7 images"
            " of every site, so every cell has two full rings of interferers (needs sites: 19;"
            " null: on for 19 sites, off otherwise)."
        ),
    )
    indoor_fraction: Probability = Field(
        default=0.8,
        description=(
            "Share of the devices indoors, in [0, 1]: on floor n_fl (1..N_fl, N_fl uniform in"
            " 4..8) at 3 (n_fl - 1) + 1.5 m, with the o2i_model loss (TR 36.873 Table 8.2-1"
            " and TR 38.901 Sec. 7.8: 0.8). Needs a 3GPP path-loss model (heights)."
        ),
    )
    antenna_elements: PositiveInt = Field(
        default=1,
        le=32,
        description=(
            "Vertically stacked elements per sector antenna, 0.5 wavelength apart (TR 36.873"
            " Sec. 7.1.1; 1: the element alone, 10: the TR 38.901 7.8.1 calibration). Needs"
            " sectors: 3. At most 32, a column 15.5 wavelengths tall (2.3 m at 2 GHz): beyond"
            " it the array gain (10 log10 of the elements) leaves any sector antenna's."
        ),
    )
    antenna_electrical_downtilt_deg: float = Field(
        default=0.0,
        ge=-90.0,
        le=90.0,
        description=(
            "Electrical downtilt of the sector antenna's column below the horizon, degrees"
            " (TR 38.901 7.8.1: 12). Needs sectors: 3 and antenna_elements above 1."
        ),
    )
    antenna_mechanical_downtilt_deg: float = Field(
        default=0.0,
        ge=-90.0,
        le=90.0,
        description=(
            "Mechanical downtilt of the sector antenna below the horizon, degrees. Needs"
            " sectors: 3."
        ),
    )
    o2i_model: Literal["low_loss", "high_loss", "mixed", "tr36873"] = Field(
        default="tr36873",
        description=(
            "Building penetration loss of indoor devices (indoor_fraction): TR 38.901 Table"
            " 7.4.3-2 low-loss or high-loss model, `mixed` (high-loss for"
            " o2i_high_loss_fraction of them, TR 38.901 Sec. 7.8), or `tr36873` (TR 36.873"
            " Table 7.2-1: 20 dB wall + 0.5 d_in, indoor shadowing 7 dB)."
        ),
    )
    o2i_high_loss_fraction: Probability = Field(
        default=0.5,
        description="Share of indoor devices with the high-loss model under o2i_model: mixed.",
    )
    backhaul: BackhaulConfig = Field(
        default_factory=BackhaulConfig, description="BS -> edge -> cloud links."
    )

    @property
    def n_cells(self) -> int:
        return self.sites * self.sectors

    @field_validator("sites")
    @classmethod
    def _sites(cls, value: int) -> int:
        if value not in SITE_COUNTS:
            raise ValueError(f"sites must be 1, 7 or 19, not {value}")
        return value

    @field_validator("sectors")
    @classmethod
    def _sectors(cls, value: int) -> int:
        if value not in SECTOR_COUNTS:
            raise ValueError(f"sectors must be 1 (omni) or 3, not {value}")
        return value

    @field_validator("wrap_around")
    @classmethod
    def _wrap_around(cls, value: bool | None, info: ValidationInfo) -> bool | None:
        sites = info.data.get("sites")
        if value and sites is not None and sites != 19:
            raise ValueError(f"wrap_around needs sites: 19, not {sites}")
        if value is None and sites is not None:
            return sites == 19
        return value

    @field_validator(
        "antenna_elements", "antenna_electrical_downtilt_deg", "antenna_mechanical_downtilt_deg"
    )
    @classmethod
    def _antenna(cls, value: float, info: ValidationInfo) -> float:
        default = 1 if info.field_name == "antenna_elements" else 0.0
        sectors = info.data.get("sectors")
        if value != default and sectors == 1:
            raise ValueError(
                f"{info.field_name} shapes the 3GPP sector antenna; it needs sectors: 3"
                " (omni cells use radio.bs_antenna_gain_dbi)"
            )
        elements = info.data.get("antenna_elements")
        if info.field_name == "antenna_electrical_downtilt_deg" and value and elements == 1:
            raise ValueError(
                "antenna_electrical_downtilt_deg steers a column: it needs antenna_elements"
                " above 1 (use antenna_mechanical_downtilt_deg for a single element)"
            )
        return value

    @model_validator(mode="before")
    @classmethod
    def _radius_from_isd(cls, data: Any) -> Any:
        if isinstance(data, dict) and "interfering_rings" in data:
            raise PydanticCustomError(
                "removed_key",
                "interfering_rings (ring base stations at median path loss) was replaced by a"
                " layout that the engine simulates: set cell.sites: 7 or 19 (and"
                " cell.device_sites: centre to keep the devices in the centre cell); the other"
                " cells interfere with what they carry (traffic.sources runs in every cell)",
            )
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
