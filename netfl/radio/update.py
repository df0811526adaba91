"""The radio update: links in flight follow the interference they see.

A flow's SINR is computed against what the cells emit when it starts
(:class:`netfl.radio.cells.Cells`). The update recomputes the SINR and rate of every link
in flight, in one vectorised step per direction, when that interference has changed:

- every flow start or end, and every change of a cell's RB occupancy, marks its direction
  changed when links of that direction are in flight in another cell (a cell's own
  transfers never change its links' SINR: they share its RBs, which the scheduler does);
- the update then runs ``radio.update_interval_s`` later (0: at the same instant, after
  the event that caused it), once for every change since; a rate that moved is handed to
  its cell's scheduler (:meth:`~netfl.radio.scheduler.FluidScheduler.set_rates`), which
  keeps the bits already delivered and reschedules the next completion.

So a link's rate lags the interference by at most ``update_interval_s``; its start is
always exact. The lag delays the start and the end of an interference episode alike, so
over a transfer longer than the interval the mean interference is kept (docs/radio.md
measures the difference on scenarios/multicell.yaml). ``update_interval_s: null`` turns
the update off: a flow keeps the SINR it started with. The cost is one update per interval
at most, each O(links in flight x cells) numpy plus a scheduler call per cell whose links
moved: it grows with flow events, never with slots or simulated time.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Protocol

import numpy as np
import simpy

from channel_models.rate import db_to_linear
from netfl.radio.cells import DIRECTIONS, Cells
from netfl.radio.scheduler import Flow, refresh_limited
from netfl.radio.system import RadioSystem

_LONG = {"ul": "uplink", "dl": "downlink"}


class Moving(Protocol):
    """The moving devices as the radio update ticks them and the network reads them
    (:class:`netfl.radio.motion.Motion`)."""

    @property
    def speed_mps(self) -> np.ndarray:
        """Every device's current speed, m/s (0 for static devices)."""
        ...

    def step(self, now_s: float, dt_s: float) -> None:
        """Advance every moving device by ``dt_s`` to ``now_s``."""
        ...

    def client_totals(self, n: int) -> dict[str, np.ndarray]:
        """Per-client handover counts of the run so far, for ``n`` clients."""
        ...


class RadioUpdate:
    """Recomputes the links in flight of :class:`Cells` (module doc)."""

    def __init__(
        self, env: simpy.Environment, system: RadioSystem, cells: Cells, interval_s: float | None
    ) -> None:
        self.env, self.system, self.cells = env, system, cells
        self.interval_s = interval_s
        self.updates = 0
        self.rates_changed = 0
        self._dirty: set[str] = set()
        self._pending = False
        self._running = False
        self.motion: Moving | None = None
        if interval_s is not None:
            cells.on_change = self._changed

    def move(self, motion: Moving) -> None:
        """Tick every ``interval_s`` from now on: move the devices (:mod:`netfl.radio.motion`)
        and recompute every link in flight, whether or not a flow event changed anything."""
        assert self.interval_s is not None and self.interval_s > 0
        self.motion = motion
        self.env.timeout(self.interval_s).callbacks.append(self._tick)

    def _tick(self, _event: Any) -> None:
        assert self.motion is not None and self.interval_s is not None
        self._running = True
        try:
            self.motion.step(self.env.now, self.interval_s)
            for direction in DIRECTIONS:
                self.refresh(direction)
        finally:
            self._running = False
        self.updates += 1
        self.env.timeout(self.interval_s).callbacks.append(self._tick)

    def _changed(self, direction: str, cell: int) -> None:
        if self._running or not self.cells.active_elsewhere(direction, cell):
            return
        self._dirty.add(direction)
        if not self._pending:
            self._pending = True
            assert self.interval_s is not None
            self.env.timeout(self.interval_s).callbacks.append(self._run)

    def _run(self, _event: Any) -> None:
        self._pending = False
        dirty, self._dirty = self._dirty, set()
        self._running = True
        try:
            for direction in DIRECTIONS:
                if direction in dirty:
                    self.refresh(direction)
        finally:
            self._running = False
        self.updates += 1

    def refresh(self, direction: str) -> None:
        """Recompute every link of ``direction`` in flight and hand on the rates that moved."""
        table = self.cells.links[direction]
        slots = table.slots()
        if not len(slots):
            return
        system = self.system
        cells_of = table.cell[slots]
        interference = self.cells.interference_mw(direction, cells_of, table.gain_mw[slots])
        sinr = system.sinr_db(direction, table.signal_db[slots], np.maximum(interference, 0.0))
        if system.config.fast_fading == "rayleigh_block":
            faded = db_to_linear(sinr) * table.fade[slots]
            rate = system.mappings[direction].rate_bps(faded, system.air.rb_bandwidth_hz)
            rate = rate * system.air.rate_factor(_LONG[direction])
        else:
            rate = system.rate_per_rb(direction, sinr)
        rate = rate * table.scale[slots]
        changed = rate != table.rate[slots]
        if system.open_loop and direction == "ul":
            # Beyond its power limit a flow's rate follows its SINR, whatever its rate at
            # the full power per RB does (the MCS staircase may hold that one still).
            changed |= sinr != table.sinr_db[slots]
        moved = np.flatnonzero(changed)
        if not len(moved):
            return
        table.sinr_db[slots[moved]] = sinr[moved]
        beyond: list[Flow] = []
        by_cell: dict[int, list[tuple[Flow, float, Any]]] = defaultdict(list)
        for i in moved.tolist():
            flow = table.flows[slots[i]]
            assert flow is not None
            flow.sinr_db = float(sinr[i])
            if flow.rbs > flow.power_limit_rb:
                beyond.append(flow)
            diversity = flow.diversity
            if diversity is not None:
                diversity = system.diversity(direction, float(sinr[i]))
            by_cell[int(cells_of[i])].append((flow, float(rate[i]), diversity))
        table.rate[slots[moved]] = rate[moved]
        if beyond:  # their rates beyond the power limit, in one call for every cell
            refresh_limited(beyond, [f.rbs for f in beyond], system.limited_rates)
        schedulers = self.cells.schedulers[direction]
        for cell, changes in by_cell.items():
            schedulers[cell].set_rates(changes)
        self.rates_changed += len(moved)
