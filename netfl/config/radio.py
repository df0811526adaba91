"""Scenario section `radio`: how model downloads and uploads take time.

Two models, chosen by ``radio.model``:

- ``lte`` (default): an LTE cell. Each device's link budget (ITU-R M.2135-1 path loss,
  shadowing, noise) gives its SINR and, through a rate mapping, the rate of each resource
  block (RB); transfers share the RBs of their direction under a scheduling policy,
  together with background traffic (section ``traffic``).
- ``fixed``: each device has its own constant rates drawn once; transfers never interact.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator

from channel_models.protocol import OutOfRange
from channel_models.rate import LteCqi, ShannonWithLoss
from netfl.config.base import Hertz, NonNegativeFloat, PositiveFloat, PositiveInt, StrictModel
from netfl.config.dist import Distribution, Uniform

#: LTE channel bandwidth (Hz) -> resource blocks (3GPP TS 36.101 Table 5.6-1).
LTE_RB_PER_BANDWIDTH = {1.4e6: 6, 3e6: 15, 5e6: 25, 10e6: 50, 15e6: 75, 20e6: 100}
RB_BANDWIDTH_HZ = 180e3
"""One RB: 12 subcarriers x 15 kHz."""

# The radio model's choices are defined here, once; netfl.radio imports them.
Policy = Literal["fifo", "equal", "proportional_fair"]
"""How a direction's RBs are shared by concurrent transfers."""
FastFading = Literal["none", "rayleigh", "rayleigh_block"]

Decibels = Annotated[float, Field(allow_inf_nan=False, ge=-200.0, le=200.0)]
"""A finite level or gain in dB (dBm, dBi): any finite dBm value is a positive power."""
PowerDbm = Annotated[float, Field(allow_inf_nan=False, ge=-50.0, le=80.0)]
"""A transmit power in dBm, between 10 nW (-50 dBm) and 100 kW (80 dBm)."""


class FixedRadioConfig(StrictModel):
    """``model: fixed``: each device has its own constant rates, drawn once.

    No channel and no sharing of resource blocks: a placeholder for studies that do not
    need the radio.
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


class LinkConfig(StrictModel):
    """One direction of the LTE cell: its band, transmit side and scheduling policy."""

    bandwidth_hz: Hertz = Field(
        default=10e6,
        description="LTE channel bandwidth: 1.4, 3, 5, 10, 15 or 20 MHz (6 to 100 RBs).",
    )
    n_rb: PositiveInt | None = Field(
        default=None,
        description=(
            "Resource blocks the cell schedules in this direction (null: all RBs of"
            " bandwidth_hz; fewer models a partial band, e.g. the MAB-CS paper's 10 RBs)."
        ),
    )
    rb_per_flow: PositiveInt | None = Field(
        default=None,
        description="Most RBs one transfer may use at a time (null: all of them).",
    )
    tx_power_dbm: PowerDbm = Field(
        default=23.0,
        description=(
            "Transmit power, dBm, spread over tx_power_rbs RBs; the power spectral"
            " density stays fixed when a transfer gets more or fewer RBs (LTE uplink power"
            " control, fixed downlink energy per resource element)."
        ),
    )
    tx_power_rbs: PositiveInt | None = Field(
        default=None,
        description="RBs that tx_power_dbm covers (null: rb_per_flow, or all RBs).",
    )
    noise_figure_db: NonNegativeFloat = Field(default=5.0, description="Receiver noise figure, dB.")
    scheduler: Policy = Field(
        default="equal",
        description=(
            "How active transfers share the RBs: `fifo` (in arrival order, each up to"
            " rb_per_flow; FedCS's scheduled uploads), `equal` (round robin: equal RB"
            " shares, the MAB-CS system model), `proportional_fair` (equal RB shares plus"
            " multi-user diversity gain under Rayleigh fast fading)."
        ),
    )

    @field_validator("bandwidth_hz")
    @classmethod
    def _standard(cls, value: float) -> float:
        for standard in LTE_RB_PER_BANDWIDTH:
            if abs(value - standard) < 1.0:
                return standard
        options = ", ".join(f"{b / 1e6:g} MHz" for b in LTE_RB_PER_BANDWIDTH)
        raise ValueError(
            f"{value / 1e6:g} MHz is not an LTE channel bandwidth ({options}); for another"
            " number of RBs set n_rb"
        )

    @field_validator("n_rb", "rb_per_flow", "tx_power_rbs")
    @classmethod
    def _fits(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is None or "bandwidth_hz" not in info.data:
            return value
        band_rb = LTE_RB_PER_BANDWIDTH[info.data["bandwidth_hz"]]
        available = info.data.get("n_rb") or band_rb
        if info.field_name == "n_rb":
            available = band_rb
        if value > available:
            raise ValueError(
                f"{value} RBs is more than the band has ({available} RBs)"
                if info.field_name != "n_rb"
                else f"{value} RBs is more than {info.data['bandwidth_hz'] / 1e6:g} MHz"
                f" has ({band_rb} RBs)"
            )
        return value

    @property
    def rb_count(self) -> int:
        return self.n_rb or LTE_RB_PER_BANDWIDTH[self.bandwidth_hz]

    @property
    def flow_rb_cap(self) -> int:
        return self.rb_per_flow or self.rb_count

    @property
    def power_rbs(self) -> int:
        return self.tx_power_rbs or self.flow_rb_cap


class ShannonConfig(StrictModel):
    """Shannon capacity, ``B log2(1 + SINR)``."""

    kind: Literal["shannon"] = Field(default="shannon", description="Rate mapping.")


class ShannonWithLossConfig(StrictModel):
    """Shannon with loss (Akdeniz et al. 2014): ``B min(log2(1 + 10^(-Δ/10) SINR), ρ_max)``."""

    kind: Literal["shannon_with_loss"] = Field(
        default="shannon_with_loss", description="Rate mapping."
    )
    loss_db: NonNegativeFloat = Field(
        default=ShannonWithLoss.loss_db, description="Implementation loss Δ, dB."
    )
    max_spectral_efficiency: PositiveFloat = Field(
        default=ShannonWithLoss.max_efficiency_bps_hz,
        description="Spectral-efficiency cap ρ_max, bit/s/Hz.",
    )


class LteCqiConfig(StrictModel):
    """LTE CQI table (TS 36.213 Table 7.2.3-1) chosen by the Shannon gap for a target BER."""

    kind: Literal["lte_cqi"] = Field(default="lte_cqi", description="Rate mapping.")
    target_ber: PositiveFloat = Field(
        default=LteCqi.target_ber, lt=0.2, description="Target bit error rate that sets the gap."
    )


RateMappingConfig = Annotated[
    ShannonConfig | ShannonWithLossConfig | LteCqiConfig, Field(discriminator="kind")
]


class LteRadioConfig(StrictModel):
    """``model: lte``: an LTE cell whose resource blocks the transfers share.

    Defaults follow the ITU-R M.2135-1 Urban Micro evaluation setting.
    """

    model: Literal["lte"] = Field(default="lte", description="Radio model.")
    channel_model: str = Field(
        default="umi_nlos",
        description=(
            "Path-loss model (`netfl list channel-models`), or `package.module:attribute`."
        ),
    )
    carrier_frequency_hz: Hertz = Field(default=2.5e9, description="Carrier frequency, Hz.")
    out_of_range: OutOfRange = Field(
        default="refuse",
        description=(
            "Distances outside the path-loss model's validity: refuse the scenario, or"
            " clip them to the valid range (never extrapolate)."
        ),
    )
    rate_mapping: RateMappingConfig = Field(
        default_factory=ShannonWithLossConfig, description="SINR -> rate mapping."
    )
    bs_antenna_gain_dbi: Decibels = Field(default=0.0, description="BS antenna gain, dBi.")
    ue_antenna_gain_dbi: Decibels = Field(default=0.0, description="Device antenna gain, dBi.")
    shadowing: bool = Field(
        default=True,
        description="Log-normal shadowing, drawn once per device (the model's sigma).",
    )
    fast_fading: FastFading = Field(
        default="none",
        description=(
            "`rayleigh`: rates average over Rayleigh fading during a transfer (and"
            " proportional fair gains multi-user diversity); `rayleigh_block`: one Rayleigh"
            " fade drawn per transfer; `none`: the median channel."
        ),
    )
    ul_interference_db: NonNegativeFloat = Field(
        default=0.0,
        description="Uplink interference over thermal noise at the BS, dB (other cells' UEs).",
    )
    fluctuation_eta: float | None = Field(
        default=None,
        lt=2.0,
        description=(
            "MAB-CS resource fluctuation η (eqs. 8-11 in 002_27b575cdfe8e08e6.txt): each"
            " round a device's throughput is drawn from a normal with mean θ and variance"
            " θ^η (bit/s) truncated to θ ± σ (null: no fluctuation)."
        ),
    )
    record_rb_allocations: bool = Field(
        default=False,
        description=(
            "Log every change of a transfer's RBs in the timeline (`rb_allocation` rows with"
            " `n_rb`, `n_rb_total`, `flow`, `direction`) for RB occupancy analysis; it adds"
            " rows for every concurrent transfer at each arrival and departure."
        ),
    )
    uplink: LinkConfig = Field(default_factory=LinkConfig, description="Uplink (device -> BS).")
    downlink: LinkConfig = Field(
        default_factory=lambda: LinkConfig(tx_power_dbm=41.0, noise_figure_db=7.0),
        description="Downlink (BS -> device).",
    )


def _default_model(value: Any) -> Any:
    if isinstance(value, dict) and "model" not in value:
        return {**value, "model": "lte"}
    return value


RadioConfig = Annotated[
    LteRadioConfig | FixedRadioConfig,
    Field(discriminator="model"),
    BeforeValidator(_default_model),
]
"""``radio`` section: ``model: lte`` (default) or ``model: fixed``."""


def default_radio() -> LteRadioConfig:
    return LteRadioConfig()
