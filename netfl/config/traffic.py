"""Scenario section `traffic`: background traffic competing with FL for the radio."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from netfl.config.base import Hertz, PositiveInt, Probability, StrictModel
from netfl.config.dist import Constant, Distribution, positive_support

Direction = Literal["uplink", "downlink"]


class FtpSource(StrictModel):
    """3GPP FTP Model 1 (TR 36.814 A.2.1.3.1): Poisson file arrivals, one new user per file.

    Each file's user is dropped in the cell like a device (own random stream) and leaves
    when its file is delivered.
    """

    kind: Literal["ftp1"] = Field(description="FTP Model 1.")
    direction: Direction = Field(default="downlink", description="Direction of the files.")
    arrival_rate_hz: Hertz = Field(description="Poisson arrival rate λ of files, per second.")
    file_size_bits: Distribution = Field(
        default=Constant(value=4.0e6),
        description="File size, bits (3GPP: 0.5 MB = 4e6 bit, or 2 MB); a distribution with"
        " positive support (not normal: a file cannot be negative).",
    )
    rb_per_flow: PositiveInt | None = Field(
        default=None, description="Most RBs one file may use at a time (null: all)."
    )

    @field_validator("file_size_bits")
    @classmethod
    def _positive_size(cls, value: Distribution) -> Distribution:
        if not positive_support(value):
            raise ValueError(
                "file sizes must be positive: use a distribution with positive support"
                " (constant, uniform or truncnormal above 0, lognormal, exponential, choice)"
            )
        return value


class FullBufferSource(StrictModel):
    """Users that always have data, from the start of the run to its end."""

    kind: Literal["full_buffer"] = Field(description="Full-buffer users.")
    direction: Direction = Field(default="downlink", description="Direction of their data.")
    users: PositiveInt = Field(
        default=1,
        le=10_000,
        description="Number of full-buffer users. At most 10,000: each is a flow that every"
        " arrival and departure in the cell reshares the RBs with.",
    )
    rb_per_flow: PositiveInt | None = Field(
        default=None, description="Most RBs one user may use at a time (null: all)."
    )


class ConstantLoadSource(StrictModel):
    """A constant offered load: this fraction of the direction's RBs is always taken."""

    kind: Literal["constant"] = Field(description="Constant load.")
    direction: Direction = Field(default="downlink", description="Direction of the load.")
    load_fraction: Probability = Field(description="Fraction of the RBs taken, in [0, 1].")


Source = Annotated[FtpSource | FullBufferSource | ConstantLoadSource, Field(discriminator="kind")]


class TrafficConfig(StrictModel):
    """Background traffic from users outside the federation (radio.model lte or nr)."""

    sources: list[Source] = Field(
        default_factory=list,
        description="Background traffic sources (`kind`: ftp1, full_buffer, constant).",
    )
    record_flows: bool = Field(
        default=True,
        description=("Log each background transfer in the timeline (background_flow_start/_end)."),
    )
