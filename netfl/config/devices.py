"""Scenario section `devices`: the device population, in groups.

Each group has its own parameters and distributions, so that heterogeneous populations
(for example the four client classes of Table 1 in Huang et al. 2021) are written
directly in YAML. Per-device values are drawn once at elaboration; per-round values
(available CPU ratio, allocated bandwidth, fluctuation, exchange-time noise) are drawn at
the start of every round.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from netfl.config.base import (
    INPUT_PATH,
    NonNegativeFloat,
    PositiveInt,
    PositiveSeconds,
    Probability,
    StrictModel,
)
from netfl.config.dist import (
    Constant,
    Distribution,
    JobWork,
    Uniform,
    positive_support,
)
from netfl.config.mobility import MobilityConfig, StaticMobility

# --- availability -------------------------------------------------------------------------


class AlwaysAvailable(StrictModel):
    """Every device of the group is always available."""

    kind: Literal["always"] = Field(default="always", description="Always available.")


class BernoulliAvailability(StrictModel):
    """Each device is available in a round with probability ``p``, independently per round.

    An available device stays available for the whole round (RBCS-F's I_{t,n},
    Huang et al. 2021 Sec. 4.1.3, with p = 0.8 in Sec. 6.1).
    """

    kind: Literal["bernoulli"] = Field(description="Bernoulli per round.")
    p: Probability = Field(description="Probability that a device is available in a round.")


class MarkovAvailability(StrictModel):
    """On/off continuous-time Markov process: exponential on and off durations.

    A device that turns off in the middle of a round leaves it: its work is lost.
    """

    kind: Literal["markov"] = Field(description="Two-state continuous-time Markov process.")
    mean_on_s: PositiveSeconds = Field(description="Mean time a device stays available, s.")
    mean_off_s: PositiveSeconds = Field(description="Mean time a device stays away, s.")


class TraceAvailability(StrictModel):
    """Availability intervals read from a CSV file.

    The file has a header and one row per interval: ``client,start_s,end_s`` (global
    client ids of this group; a device is available in ``[start_s, end_s)``, never
    outside its intervals). Intervals of a client must not overlap.
    """

    kind: Literal["trace"] = Field(description="Intervals from a CSV trace file.")
    file: str = Field(
        description="Path of the CSV file (relative: from the scenario file's folder,"
        " docs/scenario.md 'Paths').",
        json_schema_extra=INPUT_PATH,
    )


def _number_is_bernoulli(value: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {"kind": "bernoulli", "p": value}
    return value


Availability = Annotated[
    Annotated[
        AlwaysAvailable | BernoulliAvailability | MarkovAvailability | TraceAvailability,
        Field(discriminator="kind"),
    ],
    BeforeValidator(_number_is_bernoulli),
]
"""``{kind: always | bernoulli | markov | trace, ...}``, or a number p (Bernoulli)."""


# --- background compute load ---------------------------------------------------------------


#: Job-size distributions whose length-biased form netfl samples exactly.
def _positive(name: str) -> Any:
    def check(value: Any) -> Any:
        if value is not None and not positive_support(value):
            raise ValueError(f"{name} must be positive: use a distribution with positive support")
        return value

    return AfterValidator(check)


class BackgroundLoad(StrictModel):
    """Background compute jobs competing with the FL job on each device.

    Jobs arrive as a Poisson process and the device serves them and the FL job with the
    given discipline: processor sharing (the FL job slows down) or FIFO (it waits).
    """

    arrival_rate_hz: NonNegativeFloat = Field(
        description="Poisson arrival rate of background jobs, per second."
    )
    job_work_s: Distribution = Field(
        description="Work of one background job, seconds of the device's full capability."
    )
    discipline: Literal["ps", "fifo"] = Field(
        default="ps",
        description="ps: processor sharing (all jobs share the CPU equally); fifo: jobs run"
        " one at a time in arrival order.",
    )

    @model_validator(mode="after")
    def _stable(self) -> BackgroundLoad:
        if not isinstance(self.job_work_s, JobWork):
            raise ValueError(
                "job_work_s must be constant, uniform, exponential, lognormal or choice"
                " (a job's work is positive)"
            )
        if not positive_support(self.job_work_s, zero_ok=True):
            raise ValueError("job_work_s must not be negative")
        if self.utilization >= 1:
            raise ValueError(
                f"utilization rho = arrival_rate_hz x mean job_work_s = {self.utilization:.3g}"
                " >= 1: the background queue never empties and no FL job would finish"
            )
        return self

    @property
    def utilization(self) -> float:
        """rho = lambda E[S]: the share of the CPU taken by background jobs."""
        return self.arrival_rate_hz * self.job_work_s.expected()


# --- links set by the group -----------------------------------------------------------------


class GroupLink(StrictModel):
    """A dedicated link per device with a fixed SNR and a per-round allocated bandwidth.

    Upload rate in a round = B log(1 + SNR) (Shannon), B drawn per device and round: the
    setting of Huang et al. 2021 Sec. 6.1 (eta = log(1 + SNR) in Table 1,
    B ~ U[2, 4] MHz). These devices bypass the radio model.
    """

    snr: float | None = Field(default=None, gt=0, description="Linear SNR (or give snr_db).")
    snr_db: float | None = Field(default=None, description="SNR in dB (or give snr).")
    log: Literal["log2", "ln"] = Field(
        default="log2",
        description="Logarithm in rate = B log(1 + SNR): log2 (Shannon) or ln (the"
        " natural-log reading of eta in RBCS-F's Table 1).",
    )
    bandwidth_hz: Annotated[Distribution, _positive("bandwidth_hz")] = Field(
        description="Allocated bandwidth B, Hz, drawn per device and round."
    )
    rate_dl_bps: Distribution | None = Field(
        default=None,
        description="Download rate, bit/s, drawn once per device (null: same as the upload"
        " rate of the round).",
    )

    @model_validator(mode="after")
    def _one_snr(self) -> GroupLink:
        if (self.snr is None) == (self.snr_db is None):
            raise ValueError("give exactly one of snr (linear) and snr_db")
        return self

    @property
    def spectral_efficiency(self) -> float:
        """eta = log(1 + SNR), bit/s/Hz (log2) or nat/s/Hz (ln)."""
        snr = self.snr if self.snr is not None else 10 ** (float(self.snr_db or 0) / 10)
        return math.log2(1 + snr) if self.log == "log2" else math.log1p(snr)


class EnergyModel(StrictModel):
    """Energy spent by a device: transmit power x airtime + compute power x busy time."""

    tx_power_w: NonNegativeFloat = Field(description="Transmit power while uploading, W.")
    compute_power_w: NonNegativeFloat = Field(
        description="Power drawn while the device works on an FL job, W."
    )


# --- groups ---------------------------------------------------------------------------------


class DeviceGroup(StrictModel):
    """A group of devices that share their parameters' distributions."""

    name: str = Field(default="default", description="Group name (the `group` column).")
    count: PositiveInt = Field(default=20, description="Number of devices in the group.")
    compute_sps: Distribution = Field(
        default=Uniform(dist="uniform", low=10.0, high=100.0),
        description="Mean compute capability, training samples per second (drawn once).",
    )
    base_train_time_s: Distribution | None = Field(
        default=None,
        description="Time of one local update at full capability (RBCS-F tau_b), drawn"
        " once; when set, it replaces compute_sps: capability = epochs x n_samples / this.",
    )
    n_samples: Distribution | None = Field(
        default=None,
        description=(
            "Training samples per device, drawn once and rounded (null: set by the learning"
            " partition; required when learning is none)."
        ),
    )
    compute_fluctuation_eta: float | None = Field(
        default=None,
        lt=2,
        description="MAB-CS per-round fluctuation of the capability: truncated normal with"
        " sigma^2 = mean^eta (Yoshida et al. 2020 eq. (8)); null: none.",
    )
    available_cpu_ratio: Annotated[Distribution, _positive("available_cpu_ratio")] = Field(
        default=Constant(value=1.0),
        description="Available CPU ratio mu drawn per device and round (RBCS-F: uniform"
        " 0.5..2); the capability of the round is multiplied by it.",
    )
    background: BackgroundLoad | None = Field(
        default=None, description="Background compute jobs on each device (null: none)."
    )
    cold_start_s: Distribution = Field(
        default=Constant(value=0.0),
        description="Data-preparation time of a device not selected in the previous round"
        " (RBCS-F tau_s), drawn once per device.",
    )
    exchange_noise: Probability = Field(
        default=0.0,
        description="Relative half-width a of the exchange-time noise: a device's cold start,"
        " compute and (on a group link) upload times in a round are all multiplied by"
        " 1 + U(-a, a) (Huang et al. 2021 eq. (14) with a = 1).",
    )
    availability: Availability = Field(
        default_factory=AlwaysAvailable,
        description="When devices are available: always, bernoulli (or a number p), markov"
        " or trace.",
    )
    link: GroupLink | None = Field(
        default=None,
        description="A fixed-SNR link with per-round bandwidth, bypassing the radio model"
        " (null: the radio model).",
    )
    distance_m: Distribution | None = Field(
        default=None,
        description="Distance from the base station, m, drawn once with a uniform angle"
        " (null: the cell's drop).",
    )
    energy: EnergyModel | None = Field(
        default=None, description="Energy accounting for the group (null: none)."
    )
    mobility: MobilityConfig = Field(
        default_factory=StaticMobility,
        description="How the group's devices move (docs/mobility.md): static (default),"
        " random_waypoint, random_direction, constant_velocity (a road), gauss_markov, or"
        " trajectory (a CSV or SUMO floating-car-data file). Moving devices are outdoors.",
    )


class DevicesConfig(StrictModel):
    """The device population: one or more groups."""

    groups: list[DeviceGroup] = Field(
        default_factory=lambda: [DeviceGroup()],
        min_length=1,
        description="Device groups; the population is their concatenation, in order.",
    )

    @model_validator(mode="after")
    def _unique_names(self) -> DevicesConfig:
        names = [g.name for g in self.groups]
        if len(set(names)) != len(names):
            raise ValueError(f"group names must be unique, got {names}")
        return self

    @property
    def n_clients(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def mean_availability(self) -> float:
        """The devices' mean share of time available: Bernoulli ``p``, Markov ``on / (on +
        off)`` (its stationary share), always or a trace 1 (a trace's share is in its
        file)."""
        total = 0.0
        for group in self.groups:
            model = group.availability
            share = 1.0
            if isinstance(model, BernoulliAvailability):
                share = model.p
            elif isinstance(model, MarkovAvailability):
                share = model.mean_on_s / (model.mean_on_s + model.mean_off_s)
            total += share * group.count
        return total / self.n_clients
