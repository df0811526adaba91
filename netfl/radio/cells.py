"""The cells of a layout: their schedulers, the links in flight, and the interference state.

Every cell schedules its own RBs in each direction (one :class:`CellScheduler` per cell and
direction, a :class:`~netfl.radio.scheduler.FluidScheduler`); transfers in different cells
never share RBs. A flow that runs on a radio link carries a :class:`RadioLink` (its coupling
gains to every cell, its per-RB transmit power, its block fade and rate factor), and
:class:`Cells` keeps what the cells emit now (docs/radio.md, "Interference"):

- **downlink**: cell ``j`` transmits on the share ``o_j`` of its RBs in use now (flows and
  the reserved constant load), at its per-RB power ``P``; a device with gains ``g``
  served by cell ``c`` sees ``I = P sum_{j != c} o_j g_j`` on each RB (an RB of cell ``j`` is
  busy with probability ``o_j``).
- **uplink**: device ``u`` of cell ``j`` holds ``M_u`` of its ``N`` RBs and transmits
  ``p_u(M_u)`` on each (its power per RB ``P_u`` up to its power limit ``M*_u``, then its
  maximum power spread over ``M_u``: :mod:`channel_models.power_control`), so one RB of
  cell ``i`` sees from cell ``j`` the expected
  ``E[j, i] = sum_u (M_u / N) p_u(M_u) g_u,i = 1/N sum_u min(M_u, M*_u) P_u g_u,i``: the
  power each device actually transmits. While every device of the cell holds the same
  share ``u_j N / k_j`` within its limit (processor sharing) that is
  ``u_j / k_j sum_u P_u g_u,i``; plus the reserved constant load's share at the emission of
  the cell's typical device (:attr:`Cells.typical_ul_mw`).

The state is O(cells) numbers per direction kept up to date at each flow's start and end
and at each allocation (``o_j``, ``u_j``, the sums ``sum_u P_u g_u,:`` and counts, and for
a cell whose shares differ, ``sum_u min(M_u, M*_u) P_u g_u,:``); a flow's interference at
its start is then O(cells) numpy. The radio update (:mod:`netfl.radio.update`) recomputes
every link in flight from the same state.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import simpy

from netfl.config.radio import Policy
from netfl.radio.scheduler import Flow, FluidScheduler

UL, DL = "ul", "dl"
DIRECTIONS = (UL, DL)


def db_to_mw(db: np.ndarray | float) -> np.ndarray:
    return np.power(10.0, np.asarray(db, dtype=float) / 10.0)


@dataclass(slots=True, eq=False)
class RadioLink:
    """What a flow's SINR depends on: its cell, gains and power (see the module doc).

    ``gain_db`` is the device's coupling gain to every cell (for a multicast, the worst
    receiver's at the start); ``power_db`` the per-RB transmit power (the device's under
    uplink power control within its power limit ``limit_rb``, the BS's downlink; inf: no
    limit); ``fade`` a block-fading factor on the SINR;
    ``scale`` a factor on the rate (MAB-CS fluctuation); ``device`` the FL device whose
    gains the link follows (-1: a background user's, fixed).
    """

    cell: int
    direction: str
    gain_db: np.ndarray
    power_db: float
    fade: float = 1.0
    scale: float = 1.0
    device: int = -1
    slot: int = -1
    limit_rb: float = math.inf

    @property
    def signal_db(self) -> float:
        return float(self.power_db + self.gain_db[self.cell])


class CellScheduler(FluidScheduler):
    """A cell's RBs in one direction; tells :class:`Cells` when its links start, end and
    when its allocation changes."""

    def __init__(
        self,
        env: simpy.Environment,
        n_rb: float,
        policy: Policy,
        cells: Cells,
        cell: int,
        direction: str,
    ) -> None:
        super().__init__(env, n_rb, policy)
        self.cells, self.cell, self.direction = cells, cell, direction

    def open(self, flow: Flow) -> simpy.Event:
        linked = flow.link is not None and flow.bits > 0
        if linked:
            self.cells.add_link(flow)  # its slot first: the allocation below counts it
        done = super().open(flow)
        if linked:
            self.cells.started(flow)
        return done

    def _release(self, flow: Flow) -> None:
        super()._release(flow)
        if flow.link is not None and flow.link.slot >= 0:
            self.cells.ended(flow)

    def _update(self) -> None:
        super()._update()
        self.cells.allocation_changed(self)

    def shares_equal(self) -> bool:
        """Whether every flow holds the same RBs within its power limit (processor
        sharing): the cell's uplink emission is then its mean device's."""
        return self._ps

    def full_power_rbs(self) -> tuple[list[int], list[float]]:
        """The links in flight (their table slots) and the RBs each transmits at its full
        power per RB: ``min(M_u, M*_u)`` (the general pass: ``_rbs`` is each flow's)."""
        pairs = [
            (f.link.slot, min(f._rbs, f.power_limit_rb))
            for f in self._active.values()
            if f.link is not None and f.link.slot >= 0
        ]
        return [p[0] for p in pairs], [p[1] for p in pairs]


class Cells:
    """Schedulers of every cell in both directions, the links in flight and what the cells
    emit (module doc). ``on_change(direction, cell)`` is called whenever the interference
    that direction's links see may have changed (the radio update's trigger)."""

    def __init__(
        self,
        env: simpy.Environment,
        n_cells: int,
        n_rb: dict[str, int],
        policies: dict[str, Policy],
        dl_power_db: float,
        ul_limited_rates: Callable[[list[Flow], np.ndarray], np.ndarray] | None = None,
        ul_limit_rb: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> None:
        self.env, self.n_cells = env, n_cells
        self.dl_power_mw = float(db_to_mw(dl_power_db))
        #: A device's power limit ``M*`` from its per-RB power (None: no limit).
        self.ul_limit_rb = ul_limit_rb
        self.schedulers: dict[str, list[FluidScheduler]] = {}
        self.on_change: Callable[[str, int], None] | None = None
        #: Share of each cell's RBs in use by flows (uplink) and in all (downlink).
        self.occupancy = {d: np.zeros(n_cells) for d in DIRECTIONS}
        self.reserved = {d: np.zeros(n_cells) for d in DIRECTIONS}
        self.ul_sum_mw = np.zeros((n_cells, n_cells))  # [transmitting cell, victim cell]
        self.ul_count = np.zeros(n_cells, dtype=np.int64)
        #: ``sum_u min(M_u, M*_u) P_u g_u,:`` of cells whose shares differ (``ul_unequal``).
        self.ul_full_power_mw = np.zeros((n_cells, n_cells))
        self.ul_unequal = np.zeros(n_cells, dtype=bool)
        self._ul_last: list[tuple[list[int], list[float]] | None] = [None] * n_cells
        self.n_rb_ul = float(n_rb[UL])
        self._typical_ul_mw: np.ndarray | None = None
        self.links = {d: LinkTable(n_cells) for d in DIRECTIONS}
        # E[j, :], kept row by row: the rows of the cells whose uplink state moved since the
        # last read are retaken (one cell's events never touch the others' rows).
        self._emission = np.zeros((n_cells, n_cells))
        self._stale: set[int] = set(range(n_cells))
        for d in DIRECTIONS:
            if n_cells == 1:  # nothing to interfere with: the plain scheduler, no hooks
                self.schedulers[d] = [FluidScheduler(env, n_rb[d], policies[d])]
            else:
                self.schedulers[d] = [
                    CellScheduler(env, n_rb[d], policies[d], self, cell, d)
                    for cell in range(n_cells)
                ]
        for scheduler in self.schedulers[UL]:
            scheduler.limited_rates = ul_limited_rates

    @property
    def typical_ul_mw(self) -> np.ndarray | None:
        """The uplink emission (onto each victim cell) of a cell's typical device: what the
        reserved uplink constant load radiates per reserved RB (set by the build)."""
        return self._typical_ul_mw

    @typical_ul_mw.setter
    def typical_ul_mw(self, value: np.ndarray | None) -> None:
        self._typical_ul_mw = value
        self._stale.update(range(self.n_cells))

    # -- state kept by the schedulers ---------------------------------------------------

    def add_link(self, flow: Flow) -> None:
        """A flow's link takes its slot and its emission joins its cell's sum, before its
        scheduler allocates (whose full-power sums then count it: :meth:`_ul_shares`)."""
        if self.n_cells == 1:
            return  # one cell: nobody to interfere with
        link: RadioLink = flow.link
        table = self.links[link.direction]
        table.add(flow)
        if link.direction == UL:
            self.ul_sum_mw[link.cell] += table.emit_mw[link.slot]
            self.ul_count[link.cell] += 1
            self._stale.add(link.cell)

    def started(self, flow: Flow) -> None:
        """A flow's link is in flight and its scheduler has allocated: the interference
        its direction's links see may have moved."""
        if self.n_cells == 1:
            return
        self._changed(flow.link.direction, flow.link.cell)

    def ended(self, flow: Flow) -> None:
        link: RadioLink = flow.link
        table = self.links[link.direction]
        if link.direction == UL:
            cell = link.cell
            self.ul_count[cell] -= 1
            if self.ul_count[cell] == 0:
                self.ul_sum_mw[cell] = 0.0  # no rounding residue in an idle cell
            else:
                self.ul_sum_mw[cell] -= table.emit_mw[link.slot]
            self._stale.add(cell)
        table.remove(flow)
        self._changed(link.direction, link.cell)

    def allocation_changed(self, scheduler: CellScheduler) -> None:
        if self.n_cells == 1:
            return
        d, cell = scheduler.direction, scheduler.cell
        n_rb = scheduler.n_rb
        used = scheduler.rbs_in_use() / n_rb
        reserved = scheduler.reserved_rb / n_rb
        if d == DL:
            used += reserved
        changed = used != self.occupancy[d][cell] or reserved != self.reserved[d][cell]
        if d == UL:
            changed |= self._ul_shares(scheduler, cell)
        if changed:
            self.occupancy[d][cell] = used
            self.reserved[d][cell] = reserved
            if d == UL:
                self._stale.add(cell)
            self._changed(d, cell)

    def _ul_shares(self, scheduler: CellScheduler, cell: int) -> bool:
        """Keep ``cell``'s full-power sum when its devices' shares differ (or a power
        limit binds); returns whether its emission moved."""
        if scheduler.shares_equal():
            moved = bool(self.ul_unequal[cell])
            self.ul_unequal[cell] = False
            return moved
        shares = scheduler.full_power_rbs()
        if self.ul_unequal[cell] and shares == self._ul_last[cell]:
            return False  # a rate moved, not a share (the links' powers move in follow)
        self._ul_last[cell] = shares
        slots, rbs = shares
        table = self.links[UL]
        total = np.asarray(rbs) @ table.emit_mw[slots] if slots else np.zeros(self.n_cells)
        moved = not self.ul_unequal[cell] or not np.array_equal(total, self.ul_full_power_mw[cell])
        self.ul_full_power_mw[cell] = total
        self.ul_unequal[cell] = True
        return moved

    def _changed(self, direction: str, cell: int) -> None:
        if self.on_change is not None:
            self.on_change(direction, cell)

    def follow(self, devices: np.ndarray, gain_db: np.ndarray, ul_power_db: np.ndarray) -> None:
        """The links in flight of ``devices`` take their devices' current coupling gains
        (``gain_db`` rows) and uplink powers (and with them their power limits): moving
        devices' links follow them."""
        moved = np.zeros(len(gain_db) + 1, dtype=bool)  # [-1]: background users, never
        moved[devices] = True
        for direction in DIRECTIONS:
            table = self.links[direction]
            slots = table.slots()
            slots = slots[moved[table.device[slots]]]
            if not len(slots):
                continue
            device, cell = table.device[slots], table.cell[slots]
            new_mw = db_to_mw(gain_db[device])
            power = ul_power_db[device] if direction == UL else table.power_db[slots]
            table.gain_mw[slots] = new_mw
            table.power_db[slots] = power
            table.signal_db[slots] = power + gain_db[device, cell]
            if direction == UL:
                old = table.emit_mw[slots]
                table.emit_mw[slots] = db_to_mw(power)[:, None] * new_mw
                np.add.at(self.ul_sum_mw, cell, table.emit_mw[slots] - old)
                moved_cells = set(cell.tolist())
                self._stale.update(moved_cells)
                for c in moved_cells:  # their links' powers moved: retake the full-power sums
                    self._ul_last[c] = None
                limited = self._follow_limits(slots, power)  # these retake them as they allocate
                for c in moved_cells - limited:
                    scheduler = self.schedulers[UL][c]
                    assert isinstance(scheduler, CellScheduler)
                    self._ul_shares(scheduler, c)

    def _follow_limits(self, slots: np.ndarray, power_db: np.ndarray) -> set[int]:
        """Hand the moved uplinks' new power limits to their schedulers (which also
        refreshes the cells' full-power sums); the cells handed some."""
        if self.ul_limit_rb is None:
            return set()
        table = self.links[UL]
        by_cell: dict[int, list[tuple[Flow, float]]] = {}
        for slot, limit in zip(slots.tolist(), self.ul_limit_rb(power_db).tolist(), strict=True):
            flow = table.flows[slot]
            if flow is not None and flow.power_limit_rb != limit:
                by_cell.setdefault(int(table.cell[slot]), []).append((flow, limit))
        for cell, changes in by_cell.items():
            self.schedulers[UL][cell].set_power_limits(changes)
        return set(by_cell)

    # -- interference -------------------------------------------------------------------

    def ul_emission_mw(self) -> np.ndarray:
        """``E[j, i]``: what cell ``j``'s uplink puts on one RB of cell ``i`` now."""
        stale = self._stale
        if stale:
            rows = np.fromiter(stale, dtype=np.int64, count=len(stale))
            stale.clear()
            share = self.occupancy[UL][rows] / np.maximum(self.ul_count[rows], 1)
            emission = share[:, None] * self.ul_sum_mw[rows]
            unequal = self.ul_unequal[rows]
            if unequal.any():
                emission[unequal] = self.ul_full_power_mw[rows[unequal]] / self.n_rb_ul
            typical = self._typical_ul_mw
            if typical is not None:
                emission += self.reserved[UL][rows][:, None] * typical[rows]
            self._emission[rows] = emission
        return self._emission

    def interference_mw(self, direction: str, cells: np.ndarray, gain_mw: np.ndarray) -> np.ndarray:
        """Interference per RB of links served by ``cells`` with gains ``gain_mw`` (rows)."""
        cells = np.asarray(cells)
        if direction == DL:
            occupancy = self.occupancy[DL]
            rows = np.arange(len(cells))
            seen = gain_mw @ occupancy - gain_mw[rows, cells] * occupancy[cells]
            return self.dl_power_mw * np.maximum(seen, 0.0)
        emission = self.ul_emission_mw()
        into = emission.sum(axis=0) - np.diagonal(emission)
        return np.maximum(into[cells], 0.0)

    def link_interference_mw(self, link: RadioLink) -> float:
        """Interference per RB a link sees now (0 in a layout of one cell): the scalar case
        of :meth:`interference_mw`, without its temporaries."""
        if self.n_cells == 1:
            return 0.0
        cell = link.cell
        if link.direction == DL:
            occupancy = self.occupancy[DL]
            gain_mw = db_to_mw(link.gain_db)
            seen = float(gain_mw @ occupancy) - float(gain_mw[cell] * occupancy[cell])
            return self.dl_power_mw * max(seen, 0.0)
        emission = self.ul_emission_mw()
        return max(float(emission[:, cell].sum() - emission[cell, cell]), 0.0)

    def active_elsewhere(self, direction: str, cell: int) -> bool:
        """Whether a link of ``direction`` is in flight in a cell other than ``cell``."""
        table = self.links[direction]
        return table.count > table.per_cell[cell]

    def utilisation(self, direction: str, fl_only: bool = False) -> float:
        return float(np.mean([s.utilisation(fl_only) for s in self.schedulers[direction]]))

    def background_utilisation(self, direction: str) -> float:
        """Time-average share of the RBs that background traffic (its flows and the
        reserved load) used, averaged over the cells that carried FL transfers in
        ``direction`` (NaN where none did): the load FL met, to set against the
        planning's expected load (:mod:`netfl.planning`)."""
        shares = [
            s.utilisation() - s.utilisation(fl_only=True)
            for s in self.schedulers[direction]
            if s.rb_seconds_fl > 0
        ]
        return float(np.mean(shares)) if shares else float("nan")


class LinkTable:
    """The links of one direction in flight: their flows and, in slot-indexed numpy
    arrays, their cells and gains, for the radio update's vectorised recomputation."""

    def __init__(self, n_cells: int, capacity: int = 64) -> None:
        self.n_cells = n_cells
        self.flows: list[Flow | None] = [None] * capacity
        self.cell = np.zeros(capacity, dtype=np.int64)
        self.gain_mw = np.zeros((capacity, n_cells))
        self.signal_db = np.zeros(capacity)
        self.power_db = np.zeros(capacity)
        #: Per RB at the link's full power per RB: ``P g`` onto every cell (mW; uplink).
        self.emit_mw = np.zeros((capacity, n_cells))
        self.sinr_db = np.zeros(capacity)  # the SINR its rate per RB holds for
        self.device = np.full(capacity, -1, dtype=np.int64)
        self.fade = np.ones(capacity)
        self.scale = np.ones(capacity)
        self.rate = np.zeros(capacity)  # the rate per RB the flow has now
        self.active = np.zeros(capacity, dtype=bool)
        self.per_cell = np.zeros(n_cells, dtype=np.int64)
        self.count = 0
        self._free = list(range(capacity - 1, -1, -1))

    def add(self, flow: Flow) -> None:
        link: RadioLink = flow.link
        if not self._free:
            self._grow()
        slot = self._free.pop()
        link.slot = slot
        self.flows[slot] = flow
        self.cell[slot] = link.cell
        self.gain_mw[slot] = db_to_mw(link.gain_db)
        self.signal_db[slot] = link.signal_db
        self.power_db[slot] = link.power_db
        if link.direction == UL:
            self.emit_mw[slot] = db_to_mw(link.power_db) * self.gain_mw[slot]
        self.sinr_db[slot] = flow.sinr_db
        self.device[slot] = link.device
        self.fade[slot] = link.fade
        self.scale[slot] = link.scale
        self.rate[slot] = flow.rate_per_rb_bps
        self.active[slot] = True
        self.per_cell[link.cell] += 1
        self.count += 1

    def remove(self, flow: Flow) -> None:
        link: RadioLink = flow.link
        slot = link.slot
        link.slot = -1
        self.flows[slot] = None
        self.active[slot] = False
        self.per_cell[link.cell] -= 1
        self.count -= 1
        self._free.append(slot)

    def slots(self) -> np.ndarray:
        return np.flatnonzero(self.active)

    def in_flight(self) -> Sequence[Flow]:
        return [f for f in self.flows if f is not None]

    def _grow(self) -> None:
        old = len(self.flows)
        self.flows.extend([None] * old)
        names = (
            "cell",
            "gain_mw",
            "signal_db",
            "power_db",
            "emit_mw",
            "sinr_db",
            "device",
            "fade",
            "scale",
            "rate",
        )
        for name in (*names, "active"):
            array = getattr(self, name)
            setattr(self, name, np.concatenate([array, np.zeros_like(array)]))
        self._free.extend(range(2 * old - 1, old - 1, -1))
