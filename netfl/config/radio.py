"""Scenario section `radio`: how model downloads and uploads take time.

Three models, chosen by ``radio.model``:

- ``lte`` (default): an LTE cell. Each device's link budget (ITU-R M.2135-1 path loss,
  shadowing, noise) gives its SINR and, through a rate mapping, the rate of each resource
  block (RB); transfers share the RBs of their direction under a scheduling policy,
  together with background traffic (section ``traffic``).
- ``nr``: a 5G NR cell (numerology, NR bandwidths, FDD or TDD slot pattern, NR CQI
  tables); the same geometry, channel models, scheduler and traffic as ``lte``.
- ``fixed``: each device has its own constant rates drawn once; transfers never interact.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from channel_models import lte, nr
from channel_models import power_control as pc
from channel_models.protocol import OutOfRange
from channel_models.rate import LteCqi, ShannonWithLoss
from netfl.config.base import (
    Hertz,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    Probability,
    StrictModel,
)
from netfl.config.dist import Distribution, Uniform
from netfl.config.mobility import HandoverConfig

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
            "Transmit power, dBm, spread over tx_power_rbs RBs; the power spectral density"
            " stays fixed when a transfer gets more or fewer RBs (the downlink's fixed energy"
            " per resource element; uplink: radio.uplink_power_control.mode fixed_per_rb"
            " only, open-loop devices have p_cmax_dbm)."
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


class DownlinkConfig(LinkConfig):
    """The LTE cell's downlink: the base station transmits, the device receives.

    Its own defaults, so that a partial ``downlink`` section keeps them (the calibrated
    network's: TR 36.873 V12.5.0 Table 8.2-1, BS 41 dBm in 10 MHz, UE noise figure 9 dB;
    docs/radio.md).
    """

    tx_power_dbm: PowerDbm = Field(
        default=41.0,
        description=(
            "Base-station transmit power, dBm, spread over tx_power_rbs RBs (fixed downlink"
            " energy per resource element; TR 36.873 Table 8.2-1: 41 dBm in 10 MHz)."
        ),
    )
    noise_figure_db: NonNegativeFloat = Field(
        default=9.0,
        description="The device's receiver noise figure, dB (TR 36.873 Table 8.2-1: 9 dB).",
    )


PowerControlMode = Literal["open_loop", "fixed_per_rb"]


class UplinkPowerControlConfig(StrictModel):
    """The devices' PUSCH power (TS 36.213 Sec. 5.1.1.1; NR: TS 38.213 Sec. 7.1.1).

    ``open_loop``: a transfer of ``M`` RBs transmits
    ``min(p_cmax_dbm, p0_dbm + 10 log10(2^mu M) + alpha PL + closed_loop_db)`` (``PL`` the
    device's coupling loss to its serving cell, ``mu`` the NR numerology, 0 in LTE), ``M``
    its allocation of the moment: below the power limit a fixed power per RB, beyond it
    ``p_cmax_dbm`` spread over the RBs it holds (docs/radio.md, "Uplink power control").
    ``fixed_per_rb``: ``uplink.tx_power_dbm`` over ``uplink.tx_power_rbs`` RBs, the same
    power per RB whatever the allocation (netfl before issue 33; the seed papers' cells).
    """

    mode: PowerControlMode = Field(
        default="open_loop",
        description="`open_loop`: the standard's PUSCH power for the RBs a transfer holds (the"
        " keys below); `fixed_per_rb`: uplink.tx_power_dbm over uplink.tx_power_rbs RBs,"
        " whatever the allocation (the seed papers' fixed power per RB).",
    )
    p0_dbm: float = Field(
        default=-106.0,
        allow_inf_nan=False,
        ge=pc.NR_P0_RANGE_DBM[0],
        le=pc.NR_P0_RANGE_DBM[1],
        description="P0_PUSCH, the nominal received power per RB of 180 kHz, dBm: -126 to"
        " 24 in LTE (TS 36.331 p0-NominalPUSCH), -202 to 24 in NR (TS 38.331"
        " p0-NominalWithGrant). Default -106 dBm with alpha 1, the 3GPP LTE system-level"
        " uplink setting (TR 36.814 Table A.2.2-1, as 5G-LENA's 3GPP calibration sets it).",
    )
    alpha: float = Field(
        default=1.0,
        description="Fractional path-loss compensation alpha: 0, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9"
        " or 1 (TS 36.331 / TS 38.331).",
    )
    p_cmax_dbm: float = Field(
        default=23.0,
        allow_inf_nan=False,
        ge=-40.0,
        le=pc.P_CMAX_MAX_DBM,
        description="The device's maximum output power P_CMAX, dBm (23: power class 3, TS"
        " 36.101 / TS 38.101-1; at most 33).",
    )
    closed_loop_db: float = Field(
        default=0.0,
        allow_inf_nan=False,
        ge=-40.0,
        le=40.0,
        description="The closed-loop correction f (accumulated TPC commands, TS 36.213 Sec."
        " 5.1.1.1), dB, held constant: netfl does not model TPC.",
    )

    @field_validator("alpha")
    @classmethod
    def _alpha(cls, value: float) -> float:
        if not any(abs(value - a) < 1e-9 for a in pc.ALPHAS):
            raise ValueError(
                f"{value:g} is not a TS 36.331 alpha: one of 0, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1"
            )
        return value


#: The keys a power-control mode does not use, with the values they may keep (their
#: defaults, as a resolved scenario writes them): any other value is refused, not ignored.
_FIXED_ONLY = {"tx_power_dbm": (None, 23.0), "tx_power_rbs": (None,)}
_OPEN_LOOP_ONLY = ("p0_dbm", "alpha", "p_cmax_dbm", "closed_loop_db")


def _power_keys(data: dict[str, Any]) -> None:
    """Refuse, naming the key, what the scenario's uplink power-control mode would ignore,
    and the keys issue 33 moved (``uplink.p0_dbm``, ``uplink.alpha``)."""
    uplink = data.get("uplink")
    uplink = uplink if isinstance(uplink, dict) else {}
    for key in ("p0_dbm", "alpha"):
        if key in uplink:
            raise PydanticCustomError(
                "removed_key",
                f"uplink.{key} moved to radio.uplink_power_control.{key} (with p_cmax_dbm,"
                " the device's maximum power, in place of uplink.tx_power_dbm)",
            )
    control = data.get("uplink_power_control")
    control = control if isinstance(control, dict) else {}
    mode = control.get("mode", "open_loop")
    if mode == "open_loop":
        ue_power = data.get("ue_tx_power_dbm", 23.0)
        stray = [
            f"uplink.{k}"
            for k, keep in _FIXED_ONLY.items()
            if k in uplink and uplink[k] not in (*keep, ue_power)
        ]
        stray += ["ue_tx_power_dbm"] if ue_power != 23.0 else []
        if stray:
            raise PydanticCustomError(
                "power_control",
                f"{stray[0]}: under radio.uplink_power_control.mode open_loop (the default) a"
                " device's power follows its allocation up to uplink_power_control.p_cmax_dbm;"
                " set that, or mode: fixed_per_rb to spread uplink.tx_power_dbm over"
                " uplink.tx_power_rbs RBs",
            )
    elif mode == "fixed_per_rb":
        defaults = UplinkPowerControlConfig()
        stray = [k for k in _OPEN_LOOP_ONLY if k in control and control[k] != getattr(defaults, k)]
        if stray:
            raise PydanticCustomError(
                "power_control",
                f"uplink_power_control.{stray[0]} applies under mode open_loop; under"
                " fixed_per_rb a device transmits uplink.tx_power_dbm over uplink.tx_power_rbs",
            )


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


class LteTbsConfig(StrictModel):
    """The standard LTE link abstraction: MCS at a BLER target, TS 36.213 transport blocks.

    ``channel_models/lte.py``, docs/radio.md ("LTE link abstraction"): the MCS that meets a
    BLER target, TS 36.213 transport-block sizes, the physical-layer overheads of each
    direction, HARQ, header overhead and the latency of an upload's first uplink grant.
    Cross-checked against ns-3 LENA (``benchmarks/ns3_crosscheck``).
    """

    kind: Literal["lte_tbs"] = Field(default="lte_tbs", description="Rate mapping.")
    target_bler: float = Field(
        default=0.1,
        gt=0.0,
        lt=1.0,
        description="Transport-block error rate link adaptation aims at (TS 36.213 Sec."
        " 7.2.3: the CQI is the highest decoded at a BLER of at most 0.1).",
    )
    implementation_loss_db: tuple[NonNegativeFloat, NonNegativeFloat, NonNegativeFloat] = Field(
        default=lte.VIENNA_LOSS_DB,
        description="dB a code block needs above the finite-blocklength normal"
        " approximation at the target, for QPSK, 16QAM, 64QAM (default: fitted to the"
        " Vienna LTE link-level AWGN curves as tabulated by ns-3 LENA, docs/radio.md).",
    )
    dl_control_symbols: int = Field(
        default=2,
        ge=1,
        le=3,
        description="OFDM symbols of the downlink control region per subframe (CFI, TS"
        " 36.211 Sec. 6.7). Code rates follow from the REs left, whatever the TBS table's own"
        " design assumed (about 120 data REs per PRB, 3 control symbols, for R1-081483's"
        " efficiencies).",
    )
    dl_crs_ports: Literal[1, 2, 4] = Field(
        default=2,
        description="Cell-specific reference-signal antenna ports (TS 36.211 Sec. 6.10.1).",
    )
    ul_srs_period_ms: int = Field(
        default=10,
        ge=0,
        description="One subframe in this many carries the SRS in its last symbol (TS 36.211"
        " Sec. 5.5.3; 0: no SRS).",
    )
    ul_pucch_rb_fraction: float = Field(
        default=0.08,
        ge=0.0,
        lt=1.0,
        description="Share of the uplink RBs kept for the PUCCH at the band edges (TS 36.211"
        " Sec. 5.4.3 places it there; its size is the operator's RRC configuration): 0.08,"
        " 2 RBs at each edge of a 10 MHz carrier, is an assumed typical configuration.",
    )
    packet_payload_bytes: PositiveInt = Field(
        default=lte.PAYLOAD_BYTES,
        description="Payload per IP packet, bytes (1460: TCP over a 1500-byte MTU).",
    )
    packet_header_bytes: int = Field(
        default=lte.HEADER_BYTES,
        ge=0,
        description="Header bytes per IP packet: IPv4 20 + TCP 20 + PDCP 2 (TS 36.323) + RLC"
        " 2 (TS 36.322) + MAC subheader about 2 (TS 36.321: 3 with the 15-bit length, 1 for a"
        " PDU's last).",
    )
    ul_first_grant_latency_s: NonNegativeFloat = Field(
        default=lte.FIRST_GRANT_LATENCY_S,
        description="Wait before an upload's first data: half the 1 ms scheduling-request"
        " period (TS 36.213 Table 10.1.5-1), 4 ms for the eNB to grant and 4 ms from grant"
        " to PUSCH (TS 36.213 Sec. 8.0).",
    )


RateMappingConfig = Annotated[
    ShannonConfig | ShannonWithLossConfig | LteCqiConfig | LteTbsConfig,
    Field(discriminator="kind"),
]


MIN_UPDATE_INTERVAL_S = 1e-3
"""The shortest radio update interval but 0: one LTE subframe (TS 36.211 Sec. 4.1), the
scheduler's time step; an NR slot is at most that (TS 38.211 Sec. 4.3.1). Moving devices
tick every update, so 1e-9 s ticked a billion times a simulated second, and 1e-300 s did
not advance the clock at all (issue 34)."""


def _update_interval(value: float) -> float:
    if 0 < value < MIN_UPDATE_INTERVAL_S:
        raise ValueError(
            f"a radio update every {value:g} s is shorter than a subframe (1 ms, TS 36.211"
            " Sec. 4.1), the scheduler's step: give 0 (at once, at flow events) or at least"
            " 0.001"
        )
    return value


class LteRadioConfig(StrictModel):
    """``model: lte``: an LTE cell whose resource blocks the transfers share.

    Defaults follow the ITU-R M.2135-1 Urban Micro evaluation setting.
    """

    model: Literal["lte"] = Field(default="lte", description="Radio model.")
    channel_model: str = Field(
        default="tr36873_umi",
        description=(
            "Path-loss model (`netfl list channel-models`), or `package.module:attribute`."
        ),
    )
    carrier_frequency_hz: Hertz = Field(
        default=2.0e9,
        description="Carrier frequency, Hz (default 2 GHz, the TR 36.873 calibration's).",
    )
    out_of_range: OutOfRange = Field(
        default="refuse",
        description=(
            "Distances outside the path-loss model's validity: refuse the scenario, or"
            " clip them to the valid range (never extrapolate)."
        ),
    )
    rate_mapping: RateMappingConfig = Field(
        default_factory=LteTbsConfig,
        description="SINR -> rate mapping (default: the standard LTE link abstraction;"
        " scenarios reproducing a paper pin the paper's).",
    )
    bs_antenna_gain_dbi: Decibels = Field(default=0.0, description="BS antenna gain, dBi.")
    ue_antenna_gain_dbi: Decibels = Field(default=0.0, description="Device antenna gain, dBi.")
    shadowing: bool = Field(
        default=True,
        description="Log-normal shadowing, drawn once per device (the model's sigma).",
    )
    shadowing_site_correlation: Probability = Field(
        default=0.5,
        description="Correlation of a device's shadowing between two sites (the sectors of a"
        " site share it): 0.5 in the 3GPP system-level methodology, TR 36.814 Table"
        " A.2.1.1-2; 0 draws every site independently (the 3GPP calibration presets).",
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
        description=(
            "Constant uplink interference over thermal noise at every BS, dB: interference"
            " from outside the layout (the seed papers' isolated cells). The layout's own"
            " cells interfere through the transfers in flight, on top of it."
        ),
    )
    update_interval_s: Annotated[NonNegativeFloat, AfterValidator(_update_interval)] | None = Field(
        default=0.1,
        description=(
            "Radio update: the longest a transfer's rate lags the interference it sees,"
            " s. A flow's SINR is exact at its start; when the other cells' transfers"
            " change, every link in flight is recomputed this long after (0: at once;"
            " null: never, a transfer keeps the SINR it started with). Otherwise at"
            " least 0.001 s, one subframe (the scheduler's step): moving devices advance"
            " every update, and a shorter tick only costs. docs/radio.md, 'Radio update'."
        ),
    )
    fluctuation_eta: float | None = Field(
        default=None,
        lt=2.0,
        description=(
            "MAB-CS resource fluctuation η (eqs. 8-11 in Yoshida et al. 2020): each"
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
    channel_step_m: NonNegativeFloat = Field(
        default=1.0,
        description="A moving device's channel (LOS state, shadowing, gains to the cells it"
        " measures; to every cell at a cell search) is re-evaluated at the first handover"
        " measurement after it has moved this far since the last time, m; its position"
        " advances at every radio update regardless (0: at every measurement)."
        " docs/mobility.md.",
    )
    handover: HandoverConfig = Field(
        default_factory=HandoverConfig,
        description="Event-A3 handover and radio link failure of moving devices"
        " (devices.groups.N.mobility; static devices keep their strongest cell).",
    )
    uplink: LinkConfig = Field(default_factory=LinkConfig, description="Uplink (device -> BS).")
    downlink: DownlinkConfig = Field(
        default_factory=DownlinkConfig, description="Downlink (BS -> device)."
    )
    uplink_power_control: UplinkPowerControlConfig = Field(
        default_factory=UplinkPowerControlConfig,
        description="The devices' uplink (PUSCH) power for the RBs each transfer holds.",
    )

    @model_validator(mode="before")
    @classmethod
    def _power_control_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            _power_keys(data)
        return data

    @field_validator("uplink_power_control")
    @classmethod
    def _p0_range(
        cls, value: UplinkPowerControlConfig, info: ValidationInfo
    ) -> UplinkPowerControlConfig:
        low, high = pc.LTE_P0_RANGE_DBM
        if info.data.get("model") == "lte" and not low <= value.p0_dbm <= high:
            raise ValueError(
                f"p0_dbm: {value.p0_dbm:g} dBm is outside LTE's p0-NominalPUSCH range"
                f" ({low:g} to {high:g} dBm, TS 36.331)"
            )
        return value


class NrCqiConfig(StrictModel):
    """NR CQI table (TS 38.214 Table 5.2.2.1-2 or -3) chosen by SINR thresholds.

    The thresholds come from a target BLER (finite-blocklength normal approximation,
    ``channel_models.nr``) plus an implementation loss, or are given.
    """

    kind: Literal["nr_cqi"] = Field(default="nr_cqi", description="Rate mapping.")
    table: Literal["table1", "table2"] = Field(
        default="table2",
        description="CQI table: `table1` (64QAM, TS 38.214 Table 5.2.2.1-2) or `table2`"
        " (256QAM, Table 5.2.2.1-3).",
    )
    target_bler: PositiveFloat = Field(
        default=nr.NrCqi.target_bler,
        lt=1.0,
        description="Block error rate target of link adaptation.",
    )
    block_symbols: PositiveInt = Field(
        default=nr.NrCqi.block_symbols,
        description="Channel uses per code block in the BLER -> SINR threshold derivation.",
    )
    implementation_loss_db: (
        NonNegativeFloat
        | tuple[NonNegativeFloat, NonNegativeFloat, NonNegativeFloat, NonNegativeFloat]
    ) = Field(
        default=nr.SIONNA_LOSS_DB,
        description="dB added to the derived SINR thresholds (the decoder's distance from"
        " the bound): one value, or one per QPSK, 16QAM, 64QAM, 256QAM (default: fitted to"
        " Sionna SYS's link-level PUSCH/PDSCH BLER tables, docs/radio.md).",
    )
    sinr_thresholds_db: list[float] | None = Field(
        default=None,
        description="SINR (dB) from which CQI 1..15 are used, 15 increasing values (null:"
        " derive them from target_bler).",
    )

    @field_validator("sinr_thresholds_db")
    @classmethod
    def _fifteen(cls, value: list[float] | None) -> list[float] | None:
        if value is not None:
            nr.NrCqi(sinr_thresholds_db=tuple(value))
        return value


NrRateMappingConfig = Annotated[
    ShannonConfig | ShannonWithLossConfig | LteCqiConfig | NrCqiConfig, Field(discriminator="kind")
]

#: Default receiver noise figures: the device's 9 dB is TR 38.901 Table 7.8-1's UT noise
#: figure; the BS's 5 dB is the LTE model's (TR 38.901 calibrates the downlink only).
NR_NOISE_FIGURE_DB = {"uplink": 5.0, "downlink": 9.0}

#: Default BS transmit power spectral density: 44 dBm in 20 MHz (TR 38.901 Table 7.8-1,
#: UMi-Street Canyon calibration; UMa uses 49 dBm).
BS_TX_POWER_DBM_PER_MHZ = 44.0 - 10.0 * 1.3010299956639813


class NrLinkConfig(LinkConfig):
    """One direction of the NR cell (``bandwidth_hz`` checked against the numerology)."""

    bandwidth_hz: Hertz = Field(
        default=100e6,
        description="NR channel bandwidth, one of TS 38.101-1 Table 5.3.2-1 for the"
        " numerology's SCS (FR1, mu 0-2) or TS 38.101-2 Table 5.3.2-1 (mu 3: 50-400 MHz).",
    )
    tx_power_dbm: PowerDbm | None = Field(  # type: ignore[assignment]
        default=None,
        description="Transmit power, dBm (null: ue_tx_power_dbm uplink, bs_tx_power_dbm_per_mhz"
        " x bandwidth downlink); spread over tx_power_rbs PRBs.",
    )
    overhead_fraction: float | None = Field(
        default=None,
        ge=0.0,
        lt=1.0,
        description="Share of resource elements lost to DMRS, control, SSB, CSI-RS (null: TS"
        " 38.306 Sec. 4.1.2 OH: 0.14 FR1 DL, 0.08 FR1 UL, 0.18 FR2 DL, 0.10 FR2 UL).",
    )
    noise_figure_db: NonNegativeFloat | None = Field(  # type: ignore[assignment]
        default=None,
        description="Receiver noise figure, dB (null: 5 dB at the BS for the uplink, 9 dB at"
        " the device for the downlink).",
    )
    _max_rb: int = PrivateAttr(default=0)

    @field_validator("bandwidth_hz")
    @classmethod
    def _standard(cls, value: float) -> float:
        return value  # checked against the numerology by NrRadioConfig

    @field_validator("n_rb", "rb_per_flow", "tx_power_rbs")
    @classmethod
    def _fits(cls, value: int | None, info: ValidationInfo) -> int | None:
        return value  # checked against the numerology by NrRadioConfig

    @property
    def rb_count(self) -> int:
        return self.n_rb or self._max_rb


class NrDownlinkConfig(NrLinkConfig):
    """The NR cell's downlink (a null power or noise figure takes the downlink's default)."""


class NrRadioConfig(LteRadioConfig):
    """``model: nr``: a 5G NR cell: numerology, NR bandwidths, FDD or TDD, NR CQI tables.

    Shares the geometry, channel models, scheduler and traffic of ``model: lte``; see
    docs/radio.md ("5G NR") for every formula and its source.
    """

    model: Literal["nr"] = Field(default="nr", description="Radio model.")  # type: ignore[assignment]
    channel_model: str = Field(
        default="tr38901_umi",
        description=(
            "Path-loss model (`netfl list channel-models`), or `package.module:attribute`"
            " (default: TR 38.901 UMi-Street Canyon, 0.5-100 GHz)."
        ),
    )
    numerology: int = Field(
        default=1,
        description="Numerology mu: subcarrier spacing 15 kHz x 2^mu (0..3: 15/30/60/120"
        " kHz), slot 1 ms / 2^mu (TS 38.211 Sec. 4.2).",
    )
    duplex: Literal["fdd", "tdd"] = Field(
        default="tdd",
        description="`fdd`: separate uplink and downlink carriers (as LTE); `tdd`: one"
        " carrier shared in time by tdd_pattern.",
    )
    tdd_special_slot: str = Field(
        default="10:2:2",
        description="Symbols of a special (S) slot as DL:guard:UL, adding up to 14.",
    )
    tdd_pattern: str = Field(
        default="DDDSU",
        description="TDD slot pattern, repeated: D downlink, U uplink, S special slot (e.g."
        " DDDSU, DDSUU, DDDDDDDSUU); each direction is served at its symbol share.",
    )
    carrier_frequency_hz: Hertz = Field(default=3.5e9, description="Carrier frequency, Hz.")
    rate_mapping: NrRateMappingConfig = Field(  # type: ignore[assignment]
        default_factory=NrCqiConfig, description="SINR -> rate mapping."
    )
    ue_tx_power_dbm: PowerDbm = Field(
        default=23.0,
        description="Device transmit power, dBm (power class 3), spread over"
        " uplink.tx_power_rbs under uplink_power_control.mode fixed_per_rb (open loop: the"
        " device's maximum is uplink_power_control.p_cmax_dbm).",
    )
    bs_tx_power_dbm_per_mhz: Decibels = Field(
        default=round(BS_TX_POWER_DBM_PER_MHZ, 2),
        description="BS transmit power per MHz of channel bandwidth, dBm/MHz (default 44"
        " dBm in 20 MHz, TR 38.901 Table 7.8-1 UMi).",
    )
    uplink: NrLinkConfig = Field(
        default_factory=NrLinkConfig,
        validate_default=True,
        description="Uplink (device -> BS); noise_figure_db is the BS's (default 5 dB, as"
        " the LTE model: TR 38.901 Table 7.8-1 calibrates the downlink only).",
    )
    downlink: NrDownlinkConfig = Field(  # type: ignore[assignment]
        default_factory=NrDownlinkConfig,
        validate_default=True,
        description="Downlink (BS -> device); noise_figure_db is the device's (default 9 dB,"
        " TR 38.901 Table 7.8-1).",
    )

    @field_validator("numerology")
    @classmethod
    def _mu(cls, value: int) -> int:
        nr.check_numerology(value)
        return value

    @field_validator("tdd_special_slot")
    @classmethod
    def _special(cls, value: str) -> str:
        nr.TddPattern("DU", nr.parse_special(value))
        return value

    @field_validator("tdd_pattern")
    @classmethod
    def _pattern(cls, value: str, info: ValidationInfo) -> str:
        special = info.data.get("tdd_special_slot", "10:2:2")
        nr.TddPattern.parse(value, special)
        return value.strip().upper()

    @model_validator(mode="after")
    def _links(self) -> NrRadioConfig:
        """Check each link's band against the numerology and fill its power and noise."""
        mu = self.numerology
        fr = nr.frequency_range(self.carrier_frequency_hz)
        if mu == 3 and fr == "FR1":
            raise ValueError(
                "numerology 3 (120 kHz SCS) is FR2 only: set carrier_frequency_hz above"
                " 24.25 GHz (TS 38.101-2)"
            )
        for direction in ("uplink", "downlink"):
            link = getattr(self, direction)
            try:
                max_rb = nr.max_prbs(link.bandwidth_hz, mu, fr)
            except ValueError as exc:
                raise ValueError(f"{direction}.bandwidth_hz: {exc}") from None
            for key in ("n_rb", "rb_per_flow", "tx_power_rbs"):
                value = getattr(link, key)
                if value is not None and value > max_rb:
                    raise ValueError(
                        f"{direction}.{key}: {value} PRBs is more than bandwidth_hz has"
                        f" ({max_rb} PRBs)"
                    )
            update: dict[str, float] = {}
            if link.tx_power_dbm is None:
                update["tx_power_dbm"] = (
                    self.ue_tx_power_dbm
                    if direction == "uplink"
                    else self.bs_tx_power_dbm_per_mhz
                    + 10.0 * float(np.log10(link.bandwidth_hz / 1e6))
                )
            if link.noise_figure_db is None:
                update["noise_figure_db"] = NR_NOISE_FIGURE_DB[direction]
            if update:
                link = link.model_copy(update=update)
            link._max_rb = max_rb
            object.__setattr__(self, direction, link)
        if self.duplex == "tdd" and self.uplink.bandwidth_hz != self.downlink.bandwidth_hz:
            raise ValueError(
                "duplex tdd uses one carrier: uplink.bandwidth_hz and downlink.bandwidth_hz"
                " must be equal"
            )
        return self

    @property
    def tdd(self) -> nr.TddPattern | None:
        if self.duplex != "tdd":
            return None
        return nr.TddPattern.parse(self.tdd_pattern, self.tdd_special_slot)


def _default_model(value: Any) -> Any:
    if isinstance(value, dict) and "model" not in value:
        return {**value, "model": "lte"}
    return value


RadioConfig = Annotated[
    LteRadioConfig | NrRadioConfig | FixedRadioConfig,
    Field(discriminator="model"),
    BeforeValidator(_default_model),
]
"""``radio`` section: ``model: lte`` (default), ``model: nr`` or ``model: fixed``."""


def default_radio() -> LteRadioConfig:
    return LteRadioConfig()
