"""Load planning: how much of each direction the background traffic takes, and the room
it leaves for FL transfers.

``netfl validate`` prints it for every scenario and ``netfl report`` tabulates it. For
each direction of the cells (every background source runs in every cell), the *expected
background load* is the share of the RBs the background keeps busy at the operating point
the cells settle at, each cell's load setting the interference the others see
(:mod:`netfl.radio.background_load`, :mod:`netfl.radio.load_coupling`: the load-coupled
fixed point of Siomina and Yuan 2012 with each other cell busy or idle as the engine has
them), averaged over the cells that hold FL devices; over 1 the cells are overloaded (their
demand exceeds their RBs). The *worst case* is the same demand with every other cell at
full load (what ``netfl validate`` printed before issue 34): a bound, not where a run goes.
The *capacity* is what the direction carries with every RB busy for users dropped in the
cell like the background users, at the operating point: ``N_RB / E[RB-seconds a bit]``
(estimated where the scenario has FTP traffic). *Room for FL* is what the background
leaves, 1 - load of the RBs, (1 - load) C, and, with ``fl.model_size_bits``, the model
transfers a second it could carry. These are planning figures for a typical user of the
cell, not a promise: FL devices sit where their groups put them, and under a sharing
scheduler an FL transfer gets its share even in a loaded cell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from netfl.config import Scenario
from netfl.config.radio import LteRadioConfig, NrRadioConfig

if TYPE_CHECKING:
    from netfl.radio.background_load import BackgroundLoad

DIRECTIONS = ("uplink", "downlink")


@dataclass(frozen=True)
class DirectionLoad:
    """One direction of one kind of cell: background load, capacity, room for FL."""

    cells: str
    """Which cells: ``LTE cell``, ``NR TDD cell``, ``each of the 57 LTE cells``."""
    direction: str
    rb_count: int
    background_fraction: float
    """Expected background load: its demand over the RBs at the operating point (0: none;
    over 1: overloaded; inf: saturated)."""
    capacity_bps: float | None
    """Bit/s the direction carries with every RB busy (None: not estimated)."""
    keys: tuple[str, ...]
    model_size_bits: float | None = None
    worst_case_fraction: float | None = None
    """The demand with every other cell at full load (None: as expected, one cell)."""

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
        worst = ""
        if self.worst_case_fraction is not None and self.background_fraction > 0:
            worst = f", {_percent(self.worst_case_fraction)} if every other cell were full"
        text = (
            f"{self.direction}, {self.cells}: background {_percent(self.background_fraction)}"
            f"{worst}{keys} of {of}; "
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
    load the radio estimates from a drop of users anyway); without background traffic no
    topology or user drop is built, so ``netfl validate`` of such a scenario stays light.
    """
    radio = scenario.radio
    if not isinstance(radio, LteRadioConfig):
        return []
    loads = _loads(scenario)
    several = scenario.cell.sites * scenario.cell.sectors > 1
    rows = []
    for direction in DIRECTIONS:
        link = radio.uplink if direction == "uplink" else radio.downlink
        load = loads.get(direction)
        share, worst, capacity = 0.0, None, None
        keys: tuple[str, ...] = ()
        if load is not None:
            share = load.over_fl_cells(load.demand)
            worst = load.over_fl_cells(load.worst_case) if several else None
            capacity, keys = load.capacity_bps, load.keys
        rows.append(
            DirectionLoad(
                cells=cell_kind(scenario),
                direction=direction,
                rb_count=link.rb_count,
                background_fraction=share,
                capacity_bps=capacity,
                keys=tuple(keys),
                model_size_bits=scenario.fl.model_size_bits,
                worst_case_fraction=worst,
            )
        )
    return rows


def _loads(scenario: Scenario) -> dict[str, BackgroundLoad]:
    """:func:`netfl.radio.background_load.background_load`, without importing the radio
    for a scenario without background traffic."""
    if not scenario.traffic.sources:
        return {}
    from netfl.radio.background_load import background_load

    return background_load(scenario)


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
        "load (background traffic's share of the RBs where the cells settle, each cell's"
        " load setting the interference the others see; FL room: the capacity it leaves):"
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
