"""Scenario sections for moving devices: a group's ``mobility`` and the radio's ``handover``.

``MobilityConfig`` is one model per device group, picked by ``model``:

- ``static`` (default): devices stay where they were dropped.
- ``random_waypoint``: walk to a destination drawn uniformly over the layout, pause, repeat;
  the run starts in the model's stationary regime (Navidi & Camp 2004).
- ``random_direction``: straight legs in uniform directions; with wrap-around the devices
  leave one side of the 19-site cluster and come back on the other (uniform density).
- ``constant_velocity``: vehicles on a straight road across the layout.
- ``gauss_markov``: speed and direction as Gauss-Markov processes (Liang & Haas 1999).
- ``trajectory``: positions read from a file (SUMO floating-car data or a CSV).

Speeds are in m/s: a pedestrian walks at 3 km/h = 0.833 m/s, a vehicle drives at
30-120 km/h = 8.33-33.3 m/s (the speeds of 3GPP mobility studies, TR 36.839 Sec. 5.2).

``HandoverConfig`` sets the LTE/NR intra-frequency handover of :mod:`netfl.radio.handover`:
Event A3 on layer-3 filtered RSRP (TS 36.331 Sec. 5.5.4.4 and 5.5.3.2), the interruption of
user data (TS 36.133 Sec. 5.1.2.1) and radio link failure (TS 36.331 Sec. 5.3.11). Values
that the RRC signals from a fixed set (time-to-trigger, T310, N310, N311, the filter
coefficient) are refused off that set; offsets and hysteresis are refused off their
0.5 dB grid.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator

from netfl.config.base import (
    INPUT_PATH,
    NonNegativeFloat,
    PositiveSeconds,
    Probability,
    Seconds,
    StrictModel,
)
from netfl.config.dist import (
    Constant,
    Distribution,
    Exponential,
    JobWork,
    LogNormal,
    positive_support,
    upper_reach,
)

KMH = 1 / 3.6
"""One km/h in m/s."""

MAX_SPEED_MPS = 500 * KMH
"""The fastest a device may move, 500 km/h (138.9 m/s): the top of IMT-2020's mobility
range (Rec. ITU-R M.2083-0, Sec. 4.2 and Fig. 3: high-speed trains), what LTE and NR
are specified for; faster devices are not on a cellular network netfl models, and a
speed of 1e9 m/s walked a random waypoint's legs without end (issue 34)."""
MAX_COORDINATE_M = 1e7
"""The largest position coordinate taken, 10,000 km from the layout's centre (a quarter
of the Earth's circumference): no cellular layout reaches that far, and float64 still
resolves a position to under a micrometre there."""

MAX_TRACE_TIME_S = 1e10
"""The largest trace time taken (317 years: Unix times in seconds fit), s."""

Coordinate = Annotated[float, Field(ge=-MAX_COORDINATE_M, le=MAX_COORDINATE_M)]
"""A position coordinate of the layout, m (:data:`MAX_COORDINATE_M`)."""

#: TS 36.331 Sec. 6.3.5 TimeToTrigger ::= ENUMERATED {ms0, ms40, ..., ms5120}, in seconds.
TIME_TO_TRIGGER_S = (
    0.0,
    0.04,
    0.064,
    0.08,
    0.1,
    0.128,
    0.16,
    0.256,
    0.32,
    0.48,
    0.512,
    0.64,
    1.024,
    1.28,
    2.56,
    5.12,
)
#: TS 36.331 Sec. 6.3.5 FilterCoefficient ::= ENUMERATED {fc0, ..., fc9, fc11, ..., fc19}.
FILTER_COEFFICIENTS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 15, 17, 19)
#: TS 36.331 Sec. 6.3.2 RLF-TimersAndConstants: t310 (seconds), n310, n311.
T310_S = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
N310 = (1, 2, 3, 4, 6, 8, 10, 20)
N311 = (1, 2, 3, 4, 5, 6, 8, 10)
#: TS 36.331 Sec. 6.3.2 RLF-TimersAndConstants t311's longest value (ms30000): the longest
#: a device tries to re-establish its connection before it gives up (goes idle), s.
MAX_OUTAGE_S = 30.0

#: TS 36.133 Sec. 8.1.2.2: a UE measures at least 8 intra-frequency cells per carrier.
MEASURED_CELLS_MINIMUM = 8

_PEDESTRIAN = Constant(value=3 * KMH)
_VEHICLE = Constant(value=50 * KMH)
_SPEED_EXAMPLES = (
    " Examples: pedestrian 0.833 (3 km/h); vehicular {dist: uniform, low: 8.33, high: 33.3}"
    " (30-120 km/h)."
)


# --- value checks ---------------------------------------------------------------------------


def _non_negative(value: object) -> object:
    if not positive_support(value, zero_ok=True):
        raise ValueError("a speed cannot be negative: use a distribution with support >= 0")
    return _below_speed_limit(value)


def _below_speed_limit(value: object, std_mps: float = 0.0) -> object:
    """Refuse speeds past :data:`MAX_SPEED_MPS`: a distribution's :func:`upper_reach`,
    plus 6 ``std_mps`` (a Gauss-Markov speed's spread around its mean)."""
    reach = upper_reach(value) + 6.0 * std_mps
    if not reach <= MAX_SPEED_MPS:
        around = " (the mean's reach + 6 speed_std_mps)" if std_mps else ""
        raise ValueError(
            f"speeds reach {reach:.4g} m/s{around}, past the {MAX_SPEED_MPS:.1f} m/s"
            " (500 km/h) that LTE and NR are specified for (Rec. ITU-R M.2083: IMT-2020's"
            " mobility range; high-speed trains)"
        )
    return value


def _leg_duration(value: object) -> object:
    if not isinstance(value, JobWork):
        raise ValueError("must be constant, uniform, exponential, lognormal or choice")
    if not positive_support(value):
        raise ValueError("must be positive: use a distribution with support > 0")
    return value


def _waypoint_speed(value: object) -> object:
    """Random waypoint needs E[1/V] finite (Yoon, Liu & Noble 2003): the mean speed of a
    run decays to zero otherwise, and there is no stationary regime to start from."""
    finite_inverse_mean = isinstance(value, LogNormal) or (
        not isinstance(value, Exponential) and positive_support(value)
    )
    if not finite_inverse_mean:
        raise ValueError(
            "random waypoint needs speeds bounded away from 0 (E[1/speed] finite, or the"
            " mean speed decays to 0): use constant, uniform with low > 0, choice of"
            " positive values, truncnormal with low > 0, or lognormal"
        )
    return _below_speed_limit(value)


def _pause(value: object) -> object:
    if not isinstance(value, JobWork):
        raise ValueError("must be constant, uniform, exponential, lognormal or choice")
    if not positive_support(value, zero_ok=True):
        raise ValueError("a pause cannot be negative")
    return value


Speed = Annotated[Distribution, AfterValidator(_non_negative)]
PauseDistribution = Annotated[Distribution, AfterValidator(_pause)]


def _half_db(name: str, low: float, high: float) -> AfterValidator:
    def check(value: float) -> float:
        if not low <= value <= high or not math.isclose(2 * value, round(2 * value)):
            raise ValueError(
                f"{name} must be a multiple of 0.5 dB in [{low:g}, {high:g}] (TS 36.331 IE range)"
            )
        return value

    return AfterValidator(check)


def _one_of(values: tuple[float, ...], unit: str, source: str) -> AfterValidator:
    def check(value: float) -> float:
        for allowed in values:
            if math.isclose(value, allowed, rel_tol=0, abs_tol=1e-9):
                return allowed
        shown = ", ".join(f"{v:g}" for v in values)
        raise ValueError(f"must be one of {shown}{unit} ({source})")

    return AfterValidator(check)


# --- mobility models ------------------------------------------------------------------------


class StaticMobility(StrictModel):
    """Devices stay at their drop position (the default; every static result unchanged)."""

    model: Literal["static"] = Field(default="static", description="Mobility model.")


class RandomWaypointMobility(StrictModel):
    """Walk in a straight line to a destination drawn uniformly over the layout's sites,
    pause, draw the next destination and speed, repeat.

    The run starts in the stationary regime (Navidi & Camp 2004, Le Boudec & Vojnovic
    2006): positions denser in the middle of the area, speeds biased towards slow ones,
    a share of devices pausing; so nothing drifts while the run goes on. That needs
    E[1/speed] finite: speed distributions reaching 0 are refused.
    """

    model: Literal["random_waypoint"] = Field(description="Mobility model.")
    speed_mps: Annotated[Distribution, AfterValidator(_waypoint_speed)] = Field(
        default=_PEDESTRIAN,
        description="Speed of each leg, m/s, drawn per leg (support bounded away from 0)."
        + _SPEED_EXAMPLES,
    )
    pause_s: PauseDistribution = Field(
        default=Constant(value=0.0),
        description="Pause at each destination, s, drawn per pause (constant, uniform,"
        " exponential, lognormal or choice).",
    )


class RandomDirectionMobility(StrictModel):
    """Straight legs in directions drawn uniformly, each for a travel time, then a pause.

    On a wrap-around layout a device that leaves the 19-site cluster comes back on the
    opposite side (the torus of the wrap-around), which keeps the density of devices
    uniform (Nain et al. 2005). Without wrap-around a step that would leave the sites'
    hexagons is refused: the device stays and turns to a new uniform direction.
    """

    model: Literal["random_direction"] = Field(description="Mobility model.")
    speed_mps: Speed = Field(
        default=_PEDESTRIAN,
        description="Speed of each leg, m/s, drawn per leg." + _SPEED_EXAMPLES,
    )
    travel_s: Annotated[Distribution, AfterValidator(_leg_duration)] = Field(
        default=Exponential(dist="exponential", mean=60.0),
        description="Duration of each leg, s, drawn per leg (positive).",
    )
    pause_s: PauseDistribution = Field(
        default=Constant(value=0.0),
        description="Pause between legs, s, drawn per pause (constant, uniform, exponential,"
        " lognormal or choice).",
    )


class ConstantVelocityMobility(StrictModel):
    """Vehicles on a straight road across the layout, each at its own constant speed.

    The road is the line through ``start_m`` along ``heading_deg``, from where it enters
    the sites' hexagons to where it leaves them. At the far end a vehicle re-enters at the
    near end (``reenter``: a new vehicle, so its shadowing is drawn afresh), turns back
    (``reverse``), or goes on through the wrap-around (``wrap``, on wrap-around layouts).
    """

    model: Literal["constant_velocity"] = Field(description="Mobility model.")
    start_m: tuple[Coordinate, Coordinate] = Field(
        default=(0.0, 0.0),
        description="A point [x, y] on the road, m (layout coordinates: the centre site at"
        " the origin; each within 10,000 km).",
    )
    heading_deg: float = Field(
        default=0.0,
        description="Direction of travel, degrees counter-clockwise from the +x axis.",
    )
    speed_mps: Speed = Field(
        default=_VEHICLE,
        description="Speed of each vehicle, m/s, drawn once." + _SPEED_EXAMPLES,
    )
    two_way: bool = Field(
        default=False,
        description="Every second vehicle drives the opposite way on the same road.",
    )
    placement: Literal["along_road", "at_start"] = Field(
        default="along_road",
        description="Where the vehicles are at t = 0: uniform along the road inside the"
        " layout, or all at start_m.",
    )
    at_edge: Literal["reenter", "reverse", "wrap"] = Field(
        default="reenter",
        description="At the end of the road: re-enter at its start (a new vehicle), turn"
        " back, or continue through the wrap-around (wrap-around layouts only).",
    )


class GaussMarkovMobility(StrictModel):
    """Speed and direction follow Gauss-Markov processes (Liang & Haas 1999).

    Every step of dt: ``s = a s + (1 - a) s_mean + sqrt(1 - a^2) sigma_s N(0, 1)`` and the
    same for the direction, with ``a = alpha ** (dt / alpha_interval_s)`` so that the
    memory does not depend on the radio update's step: the autocorrelation of the speed
    after a lag tau is ``alpha ** (tau / alpha_interval_s)``. A device moves along its
    direction at its speed (a negative speed drives backwards). Without wrap-around a step
    that would leave the sites' hexagons is refused and the device turns back.
    """

    model: Literal["gauss_markov"] = Field(description="Mobility model.")
    mean_speed_mps: Speed = Field(
        default=_PEDESTRIAN,
        description="Mean speed s_mean of each device, m/s, drawn once." + _SPEED_EXAMPLES,
    )
    speed_std_mps: NonNegativeFloat = Field(
        default=0.2,
        description="Standard deviation sigma_s of the speed around its mean, m/s (the"
        " mean's reach plus 6 sigma_s within 500 km/h).",
    )
    mean_direction_deg: float | None = Field(
        default=None,
        description="Mean direction, degrees counter-clockwise from +x (null: uniform,"
        " drawn once per device).",
    )
    direction_std_deg: NonNegativeFloat = Field(
        default=30.0,
        le=360.0,
        description="Standard deviation of the direction around its mean, degrees (at most"
        " 360: a wider spread is a uniform direction already).",
    )
    alpha: Probability = Field(
        default=0.75,
        description="Memory a in [0, 1] over alpha_interval_s: 0 memoryless, 1 constant velocity.",
    )
    alpha_interval_s: PositiveSeconds = Field(
        default=1.0, description="The interval over which alpha applies, s."
    )

    @field_validator("speed_std_mps")
    @classmethod
    def _speeds_within_limit(cls, value: float, info: ValidationInfo) -> float:
        # The speed process is N(s_mean, sigma_s^2) around each device's mean.
        mean = info.data.get("mean_speed_mps")
        if mean is not None:
            _below_speed_limit(mean, value)
        return value


class TrajectoryMobility(StrictModel):
    """Positions read from a file, linearly interpolated between samples.

    Formats: ``sumo_fcd`` (SUMO's ``--fcd-output``, in the encoding it declares), the
    group's devices following the file's vehicles in the order they
    first appear; ``csv`` with the header ``time_s,device,x_m,y_m``, ``device`` the global
    client id (the ``client`` column of clients.parquet; ids outside the group are refused,
    and every device of the group needs at least one row). Before its first sample a device
    stands at its first position, after its last at its last. Positions are shifted by
    ``offset_m``; those outside the sites' hexagons are refused or clipped (moved radially
    onto the boundary of the nearest site's hexagon), as ``outside`` says.
    """

    model: Literal["trajectory"] = Field(description="Mobility model.")
    file: str = Field(
        description="Path of the trajectory file (relative: from the scenario file's folder,"
        " docs/scenario.md 'Paths').",
        json_schema_extra=INPUT_PATH,
    )
    format: Literal["csv", "sumo_fcd"] | None = Field(
        default=None,
        description="File format (null: from the file name, .csv or .xml).",
    )
    offset_m: tuple[Coordinate, Coordinate] = Field(
        default=(0.0, 0.0),
        description="Shift [dx, dy] added to the file's coordinates, m (each within 10,000 km).",
    )
    time_offset_s: float = Field(
        default=0.0,
        ge=-MAX_TRACE_TIME_S,
        le=MAX_TRACE_TIME_S,
        description="Trace time at simulated time 0, s (the trace is read from there on;"
        " within 1e10 s, as the file's times).",
    )
    outside: Literal["refuse", "clip"] = Field(
        default="refuse",
        description="Samples outside the layout: refuse the file, or clip them onto it.",
    )


MobilityConfig = Annotated[
    StaticMobility
    | RandomWaypointMobility
    | RandomDirectionMobility
    | ConstantVelocityMobility
    | GaussMarkovMobility
    | TrajectoryMobility,
    Field(discriminator="model"),
]
"""``{model: static | random_waypoint | random_direction | constant_velocity |
gauss_markov | trajectory, ...}``."""


# --- handover -------------------------------------------------------------------------------


class HandoverConfig(StrictModel):
    """Intra-frequency handover and radio link failure (LTE; NR is alike).

    Defaults: a3-Offset 0 dB, hysteresis 3 dB and time-to-trigger 256 ms as in ns-3 LENA's
    A3 handover algorithm (its TTT, the median of the TS 36.331 set); filterCoefficient fc4,
    TS 36.331's default; 50 ms interruption, the TS 36.133 Sec. 5.1.2.1 bound
    T_search + T_IU + 20 ms for a known target cell (T_search = 0, T_IU <= 30 ms); Qout
    -8 dB, Qin -6 dB, T310 1 s, N310 = N311 = 1 and the 1 s ping-pong window of the TR
    36.839 Sec. 5.2 mobility studies.
    """

    a3_offset_db: Annotated[float, _half_db("a3_offset_db", -15.0, 15.0)] = Field(
        default=0.0,
        description="a3-Offset Off, dB: a neighbour must be better than the serving cell by"
        " this (TS 36.331 Sec. 5.5.4.4; -15 to 15 in 0.5 dB steps).",
    )
    hysteresis_db: Annotated[float, _half_db("hysteresis_db", 0.0, 15.0)] = Field(
        default=3.0,
        description="Hysteresis Hys of Event A3, dB (0 to 15 in 0.5 dB steps).",
    )
    time_to_trigger_s: Annotated[
        Seconds, _one_of(TIME_TO_TRIGGER_S, " s", "TS 36.331 TimeToTrigger")
    ] = Field(
        default=0.256,
        description="Time the entering condition must hold before the handover, s: one of"
        " 0, 0.04, 0.064, 0.08, 0.1, 0.128, 0.16, 0.256, 0.32, 0.48, 0.512, 0.64, 1.024,"
        " 1.28, 2.56, 5.12.",
    )
    filter_coefficient: Annotated[
        int, _one_of(FILTER_COEFFICIENTS, "", "TS 36.331 FilterCoefficient")
    ] = Field(
        default=4,
        description="Layer-3 filter coefficient k: F = (1 - a) F + a M with a = 1/2^(k/4)"
        " per 200 ms (TS 36.331 Sec. 5.5.3.2); 0 is no filtering. One of 0-9, 11, 13, 15,"
        " 17, 19.",
    )
    measurement_period_s: PositiveSeconds = Field(
        default=0.2,
        description="Physical-layer measurement period of the RSRP that the layer-3 filter"
        " and Event A3 take, s: 200 ms, TS 36.133 Sec. 8.1.2.2 (E-UTRA intra-frequency, no"
        " DRX) and TS 38.133 Table 9.2.5.2-1 (NR FR1, SMTC period 20 ms). The"
        " time-to-trigger is counted in these periods; at least radio.update_interval_s and"
        " at most time_to_trigger_s (unless that is 0).",
    )
    measured_cells: int = Field(
        default=MEASURED_CELLS_MINIMUM,
        ge=1,
        le=57,  # the largest layout's cells (19 sites x 3 sectors); checked against the layout
        description="Cells a moving device measures for handover, its serving cell among them:"
        " the strongest after each cell search (every 0.8 s, TS 36.133's T_identify_intra);"
        " TS 36.133 Sec. 8.1.2.2 asks for at least 8 per carrier. At most the layout's cells"
        " (8 on a smaller layout measures every cell). Interference comes from every cell.",
    )
    interruption_s: Seconds = Field(
        default=0.05,
        le=MAX_OUTAGE_S,
        description="Time a handover interrupts the device's transfers, s (TS 36.133"
        " Sec. 5.1.2.1: 20 + T_IU <= 50 ms for a known target). At most 30 s, T311's"
        " longest setting (TS 36.331): longer, the device would give the connection up.",
    )
    qout_db: float = Field(
        default=-8.0,
        ge=-30,
        le=30,
        description="Out-of-sync threshold Qout on the downlink SINR, dB (10% PDCCH BLER).",
    )
    qin_db: float = Field(
        default=-6.0,
        ge=-30,
        le=30,
        description="In-sync threshold Qin on the downlink SINR, dB (2% PDCCH BLER), > qout_db.",
    )
    t310_s: Annotated[Seconds, _one_of(T310_S, " s", "TS 36.331 t310")] = Field(
        default=1.0,
        description="T310, s: radio link failure when it runs out (0, 0.05, 0.1, 0.2, 0.5,"
        " 1 or 2).",
    )
    n310: Annotated[int, _one_of(N310, "", "TS 36.331 n310")] = Field(
        default=1,
        description="Consecutive out-of-sync indications (one per 10 ms frame) that start"
        " T310 (1, 2, 3, 4, 6, 8, 10 or 20).",
    )
    n311: Annotated[int, _one_of(N311, "", "TS 36.331 n311")] = Field(
        default=1,
        description="Consecutive in-sync indications that stop T310 (1, 2, 3, 4, 5, 6, 8 or 10).",
    )
    reestablishment_s: Seconds = Field(
        default=1.0,
        le=MAX_OUTAGE_S,
        description="Time from a radio link failure until the device is attached again to"
        " its strongest cell, s (an assumption: cell search and RRC re-establishment; at"
        " most 30 s, T311's longest setting).",
    )
    ping_pong_window_s: Seconds = Field(
        default=1.0,
        description="A handover back to the previous cell within this time of the last one"
        " is a ping-pong, s (TR 36.839 Sec. 5.2.2).",
    )

    @field_validator("qin_db")
    @classmethod
    def _above_qout(cls, value: float, info: ValidationInfo) -> float:
        qout = info.data.get("qout_db")
        if qout is not None and value <= qout:
            raise ValueError(f"qin_db ({value:g}) must be above qout_db ({qout:g})")
        return value
