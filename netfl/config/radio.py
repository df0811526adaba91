"""Scenario section `radio`: link rates of the devices."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from netfl.config.base import StrictModel
from netfl.config.dist import Distribution, Uniform


class RadioConfig(StrictModel):
    """How fast each device's model download and upload are.

    ``fixed``: each device has its own constant rates drawn once (placeholder model: no
    channel, no sharing of resource blocks).
    """

    model: Literal["fixed"] = Field(default="fixed", description="Radio model.")
    rate_ul_bps: Distribution = Field(
        default=Uniform(dist="uniform", low=1e6, high=5e6),
        description="Uplink rate per device, bit/s (drawn once per device).",
    )
    rate_dl_bps: Distribution = Field(
        default=Uniform(dist="uniform", low=5e6, high=20e6),
        description="Downlink rate per device, bit/s (drawn once per device).",
    )
