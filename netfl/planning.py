"""Load planning: how much of each direction the background traffic takes, and the room
it leaves for FL transfers.

``netfl validate`` prints it for every scenario and ``netfl report`` tabulates it. For
each direction of the cell (each cell of a layout: every background source runs in every
cell), the *offered background load* is its RB-seconds per second over the direction's
RBs, from :func:`netfl.radio.checks.offered_load` (FTP Model 1: λ E[S] E[1/r] / N_RB, TR
36.814 A.2.1.3.1; a constant load its fraction; saturating full-buffer users infinity).
The *capacity* is what the direction carries with every RB busy for users dropped in the
cell like the background users: the same estimator applied to a probe source of 1 Mbit
files at 1 Hz, C = 1 Mbit/s / load(probe) = N_RB / E[1/r] (estimated where the scenario
has FTP traffic). *Room for FL* is what the background leaves, 1 - load of the RBs,
(1 - load) C, and, with ``fl.model_size_bits``, the model transfers a second it could
carry. These are planning figures for a typical user of the
cell, not a promise: FL devices sit where their groups put them, and under a sharing
scheduler an FL transfer gets its share even in a loaded cell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from netfl.config import Scenario
from netfl.config.dist import Constant
from netfl.config.radio import LteRadioConfig, NrRadioConfig
from netfl.config.traffic import FtpSource, TrafficConfig

DIRECTIONS = ("uplink", "downlink")
PROBE_FILE_BITS = 1.0e6
"""File size of the capacity probe (1 Mbit at 1 Hz: its offered load is 1 Mbit/s over C)."""


@dataclass(frozen=True)
class DirectionLoad:
    """One direction of one kind of cell: background load, capacity, room for FL."""

    cells: str
    """Which cells: ``LTE cell``, ``NR TDD cell``, ``each of the 57 LTE cells``."""
    direction: str
    rb_count: int
    background_fraction: float
    """Offered background load over capacity (0: none; may exceed 1; inf: saturated)."""
    capacity_bps: float | None
    """Bit/s the direction carries with every RB busy (None: not estimated)."""
    keys: tuple[str, ...]
    """The scenario keys behind the background load."""
    model_size_bits: float | None = None

    @property
    def room_fraction(self) -> float:
        return max(0.0, 1.0 - self.background_fraction)

    @property
    def room_bps(self) -> float | None:
        if self.capacity_bps is None:
            return None
        return self.room_fraction * self.capacity_bps

    @property
    def transfers_per_s(self) -> float | None:
        """Model transfers a second the room could carry (None without a model size or a
        capacity)."""
        if not self.model_size_bits or self.room_bps is None:
            return None
        return self.room_bps / self.model_size_bits

    def line(self) -> str:
        """One line: ``uplink, LTE cell: background 35% (traffic.sources.1) of 2.36 Mbit/s
        (50 RBs); FL room 65%, 1.53 Mbit/s = 0.19 uploads/s of the 1 MB model``."""
        keys = f" ({', '.join(k.rsplit('.', 1)[0] for k in self.keys)})" if self.keys else ""
        of = f"{_rate(self.capacity_bps)} ({self.rb_count} RBs)"
        if self.capacity_bps is None:
            of = f"its {self.rb_count} RBs"
        text = (
            f"{self.direction}, {self.cells}: background {_percent(self.background_fraction)}"
            f"{keys} of {of}; "
        )
        if self.room_fraction <= 0.0:
            return text + "FL room: none (the background alone fills the direction)"
        text += f"FL room {_percent(self.room_fraction)}"
        if self.room_bps is not None:
            text += f", {_rate(self.room_bps)}"
        transfers = self.transfers_per_s
        if transfers is not None and self.model_size_bits is not None:
            what = "uploads" if self.direction == "uplink" else "downloads"
            size = f"{self.model_size_bits / 8e6:.3g} MB"
            text += f" = {transfers:.2g} {what}/s of the {size} model"
        return text


def load_plan(scenario: Scenario) -> list[DirectionLoad]:
    """The background load and room for FL of each direction (empty for ``radio.model:
    fixed``, whose devices have their own constant rates and share nothing).

    The capacity in bit/s is estimated where the scenario has FTP background traffic (whose
    load the radio estimates from a drop of users anyway); without it, the load and the
    room are fractions of the RBs only, so ``netfl validate`` of a scenario without such
    traffic stays as light as before (no topology or user drop is built).
    """
    from netfl.radio.checks import offered_load

    radio = scenario.radio
    if not isinstance(radio, LteRadioConfig):
        return []
    offered = offered_load(scenario)
    with_users = any(isinstance(s, FtpSource) for s in scenario.traffic.sources)
    rows = []
    for direction in DIRECTIONS:
        share, keys = offered[direction]
        link = radio.uplink if direction == "uplink" else radio.downlink
        rows.append(
            DirectionLoad(
                cells=cell_kind(scenario),
                direction=direction,
                rb_count=link.rb_count,
                background_fraction=share,
                capacity_bps=_capacity_bps(scenario, direction) if with_users else None,
                keys=tuple(keys),
                model_size_bits=scenario.fl.model_size_bits,
            )
        )
    return rows


def _capacity_bps(scenario: Scenario, direction: str) -> float:
    """N_RB / E[1/r]: the radio's offered-load estimator on a probe of 1 Mbit files at 1 Hz."""
    from netfl.radio.checks import offered_load

    probe = FtpSource(
        kind="ftp1",
        direction=direction,
        arrival_rate_hz=1.0,
        file_size_bits=Constant(value=PROBE_FILE_BITS),
    )
    alone = scenario.model_copy(update={"traffic": TrafficConfig(sources=[probe])})
    share = offered_load(alone)[direction][0]
    return 0.0 if math.isinf(share) else PROBE_FILE_BITS / share


def cell_kind(scenario: Scenario) -> str:
    """The kind of cell the load applies to, as a reader names it."""
    radio = scenario.radio
    air = "LTE"
    if isinstance(radio, NrRadioConfig):
        air = f"NR {radio.duplex.upper()}"
    cell = scenario.cell
    n_cells = cell.sites * cell.sectors
    if n_cells > 1:
        return f"each of the {n_cells} {air} cells"
    return f"{air} cell"


def describe(scenario: Scenario) -> list[str]:
    """The plan as lines for ``netfl validate``, headed by what the figures mean."""
    rows = load_plan(scenario)
    if not rows:
        return [
            "load: radio.model fixed gives each device its own constant rates: no shared"
            " capacity, no background traffic"
        ]
    head = (
        "load (background traffic offered over the capacity for users dropped in the cell;"
        " FL room: the capacity it leaves):"
    )
    return [head, *(f"  {row.line()}" for row in rows)]


def _percent(fraction: float) -> str:
    if math.isinf(fraction):
        return "all (saturating full-buffer users)"
    return f"{fraction:.0%}" if fraction >= 0.01 or fraction == 0 else f"{fraction:.2%}"


def _rate(bps: float | None) -> str:
    if bps is None:
        return "-"
    for factor, unit in ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
        if bps >= factor:
            return f"{bps / factor:.3g} {unit}"
    return f"{bps:.3g} bit/s"
