"""Handover and radio link failure of every device, one vectorised step per radio update.

:class:`HandoverState` keeps, for all devices at once, what a UE and its serving cell keep
for intra-frequency mobility. :meth:`HandoverState.step` advances it to the time of a radio
update; the handover measurements themselves come at the physical-layer measurement
period (``measurement_period_s``, 200 ms: TS 36.133 Sec. 8.1.2.2, TS 38.133 Table
9.2.5.2-1), on the cells each device measures (:mod:`netfl.radio.measurement`):

1. **Measurement**: at each measurement period the RSRP (dBm) of the device's measured
   cells, its serving cell and the strongest others (``measured_cells``, chosen at each
   cell search from every cell), through the layer-3 filter (TS 36.331 Sec. 5.5.3.2).
2. **Event A3** (TS 36.331 Sec. 5.5.4.4) per measured neighbour n, on the filtered values
   with the cell individual offsets Ocn, Ocp (frequency offsets are 0: one carrier):
   entering when Mn + Ocn - Hys > Mp + Ocp + Off, leaving when Mn + Ocn + Hys < Mp + Ocp
   + Off. The time-to-trigger is counted in measurement periods as a device counts it: a
   neighbour joins the triggered list when the entering condition held at N + 1
   consecutive measurements, N = ceil(timeToTrigger / period) (so at the first
   measurement at least timeToTrigger after the one where it began; N = 0 for a TTT of
   0), and leaves it when the leaving condition did. The measurement report goes at once
   and the network hands over at once (no preparation delay) to the triggered neighbour
   with the best filtered RSRP, unless the device is still interrupted by its previous
   handover; then the triggered cells wait in the list (until they leave it or, at a
   later update, the interruption ends).
3. **Execution**: the serving cell changes and the device's transfers pause until
   ``t + interruption_s`` (the caller pauses them; TS 36.133 Sec. 5.1.2.1). Counters and
   the triggered list restart for the new serving cell; T310 stops (TS 36.331 Sec. 5.3.11).
   A handover back to the cell the device left with its previous handover, within
   ``ping_pong_window_s`` of it, is a ping-pong (TR 36.839 Sec. 5.2.2).
4. **Radio link failure** (TS 36.331 Sec. 5.3.11, TS 36.213 Sec. 4.2.1): the physical layer
   gives one out-of-sync (SINR < Qout) or in-sync (SINR > Qin) indication per 10 ms radio
   frame, from the downlink quality it evaluates over the last 200 ms (Qout) or 100 ms
   (Qin) (TS 36.133 Sec. 7.6.2.1); netfl evaluates the SINR at each measurement period
   and takes it as constant until the next, so indications are counted exactly: N310
   consecutive out-of-sync start T310; N311 consecutive in-sync stop it; its expiry is a
   radio link failure at that exact time. The
   device then drops its transfers (the caller's job), is detached for
   ``reestablishment_s``, and comes back on its strongest cell (by the RSRP of every cell
   at the update that finds it due), where it searches its measured cells anew.
   Monitoring pauses during a handover's interruption.

RSRP reaches the state through an :data:`Rsrp` source, so that a step reads only what it
needs: the measured cells at a measurement, every cell at a search or a re-attachment.
Cost per step: O(devices) numpy, plus O(devices x measured cells) at a measurement and
O(devices x cells) at a search; no loop over devices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from netfl.config.mobility import HandoverConfig
from netfl.radio.measurement import FILTER_INPUT_PERIOD_S, MeasuredCells

#: One radio frame: the period of in-sync/out-of-sync indications (TS 36.213 Sec. 4.2.1), s.
INDICATION_PERIOD_S = 0.01
_OUT, _MID, _IN = -1, 0, 1
_EPS_S = 1e-9

Rsrp = Callable[[np.ndarray, np.ndarray | None], np.ndarray]
"""``rsrp(devices, cells)``: the RSRP now (dBm) of the ``devices`` (row indices) from
``cells`` (``(len(devices), k)`` cell indices), or from every cell (``cells=None``)."""


def rsrp_of(matrix_dbm: np.ndarray) -> Rsrp:
    """The :data:`Rsrp` source of a ``(devices, cells)`` RSRP matrix.

    >>> rsrp = rsrp_of(np.array([[-80.0, -90.0, -70.0]]))
    >>> rsrp(np.array([0]), np.array([[2, 0]])).tolist()
    [[-70.0, -80.0]]
    """
    matrix = np.asarray(matrix_dbm, dtype=float)

    def read(devices: np.ndarray, cells: np.ndarray | None) -> np.ndarray:
        rows = matrix[devices]
        return rows if cells is None else np.take_along_axis(rows, cells, axis=1)

    return read


@dataclass(frozen=True)
class Handovers:
    """The handovers of one step, one entry per device that handed over."""

    device: np.ndarray
    source: np.ndarray
    target: np.ndarray
    t_s: np.ndarray
    interruption_end_s: np.ndarray
    ping_pong: np.ndarray


@dataclass(frozen=True)
class LinkEvents:
    """Radio link failures (``cell`` the cell lost) or re-attachments (the cell joined)."""

    device: np.ndarray
    cell: np.ndarray
    t_s: np.ndarray


@dataclass(frozen=True)
class StepEvents:
    """What one :meth:`HandoverState.step` decided, and the serving cell of every device
    after it (the last one for detached devices; see ``attached``)."""

    handovers: Handovers
    failures: LinkEvents
    reattached: LinkEvents
    serving: np.ndarray
    attached: np.ndarray


_I, _F = np.empty(0, np.int64), np.empty(0)
_NO_HANDOVERS = Handovers(_I, _I, _I, _F, _F, np.empty(0, bool))
_NO_LINK_EVENTS = LinkEvents(_I, _I, _F)


class HandoverState:
    """Event-A3 handover, interruption and RLF of ``n_devices`` devices (module doc).

    Parameters
    ----------
    n_devices
        Number of devices.
    serving_cell
        ``(devices,)`` the cell each device is attached to at the start (the association).
    config
        The ``radio.handover`` section.
    n_cells
        Cells in the layout.
    cell_offset_db
        ``(cells,)`` cell individual offsets Ocn (default 0).
    filter_input_period_s
        The input period the filter coefficient is specified for: 0.2 s in LTE, the
        measurement period in NR (:mod:`netfl.radio.measurement`).
    """

    def __init__(
        self,
        n_devices: int,
        serving_cell: np.ndarray,
        config: HandoverConfig,
        n_cells: int,
        cell_offset_db: np.ndarray | None = None,
        filter_input_period_s: float = FILTER_INPUT_PERIOD_S,
    ) -> None:
        self.config = config
        self.serving = np.array(serving_cell, dtype=np.int64).reshape(n_devices)
        self.cell_offset_db = None if cell_offset_db is None else np.asarray(cell_offset_db)
        self.measured = MeasuredCells(
            n_devices,
            n_cells,
            config.measured_cells,
            config.measurement_period_s,
            config.filter_coefficient,
            filter_input_period_s,
        )
        #: Measurement periods the entering (leaving) condition must hold beyond the first.
        self.ttt_periods = int(np.ceil(config.time_to_trigger_s / self.measured.period_s - 1e-9))
        self.now_s: float | None = None
        nan = np.full(n_devices, np.nan)
        self.attached = np.ones(n_devices, dtype=bool)
        self.back_at_s = nan.copy()
        self.interrupted_until_s = np.full(n_devices, -np.inf)
        self.previous_cell = np.full(n_devices, -1, dtype=np.int64)
        self.last_handover_s = np.full(n_devices, -np.inf)
        self.sync = np.full(n_devices, _MID, dtype=np.int8)
        self.out_since_s, self.in_since_s, self.t310_start_s = nan.copy(), nan.copy(), nan.copy()
        self.n_handovers = np.zeros(n_devices, dtype=np.int64)
        self.n_ping_pongs = np.zeros(n_devices, dtype=np.int64)
        self.n_failures = np.zeros(n_devices, dtype=np.int64)
        shape = self.measured.cells.shape
        #: Per measured cell: consecutive measurements with the A3 entering (leaving)
        #: condition, and whether the cell is in the triggered list.
        self.entering = np.zeros(shape, dtype=np.int32)
        self.leaving = np.zeros(shape, dtype=np.int32)
        self.triggered = np.zeros(shape, dtype=bool)
        self._slot = np.zeros(n_devices, dtype=np.int64)  # the serving cell's measured slot
        self._waiting = False  # triggered cells wait for an interruption to end

    @property
    def filtered_dbm(self) -> np.ndarray:
        """``(devices, measured cells)`` the filtered RSRP (dBm) of :attr:`measured_cells`."""
        return self.measured.filtered_dbm

    @property
    def measured_cells(self) -> np.ndarray:
        """``(devices, measured cells)`` the cells each device measures."""
        return self.measured.cells

    # --- the step ---------------------------------------------------------------------------

    def step(
        self,
        t_s: float,
        rsrp: Rsrp | np.ndarray,
        sinr_db: np.ndarray | Callable[[], np.ndarray],
        searched: np.ndarray | None = None,
    ) -> StepEvents:
        """Advance every device to ``t_s``, with its RSRP (an :data:`Rsrp` source, or a
        ``(devices, cells)`` matrix, dBm) and downlink SINR (``(devices,)`` dB, or a
        function giving it: asked at measurements only) at ``t_s``. ``searched``: the
        devices a cell search looks at (those whose every cell's RSRP is new since the
        last one; None: all)."""
        source = rsrp_of(rsrp) if isinstance(rsrp, np.ndarray) else rsrp
        if self.now_s is not None and t_s < self.now_s - _EPS_S:
            raise ValueError(f"step at {t_s} s is before the previous one ({self.now_s} s)")
        measuring = self.measured.due(t_s)
        failures = self._radio_link(t_s) if measuring else _NO_LINK_EVENTS
        reattached = self._reattach(t_s, source) if self._detached else _NO_LINK_EVENTS
        handovers = _NO_HANDOVERS
        if measuring:
            self._measure(t_s, source, searched)
            handovers = self._execute(t_s)
            sinr = sinr_db() if callable(sinr_db) else sinr_db
            self._indications(t_s, np.asarray(sinr, dtype=float))
        elif self._waiting:
            handovers = self._execute(t_s)
        self.now_s = t_s
        return StepEvents(
            handovers, failures, reattached, self.serving.copy(), self.attached.copy()
        )

    @property
    def _detached(self) -> bool:
        return not self.attached.all()

    def measurement_due(self, t_s: float) -> bool:
        """Whether a step at ``t_s`` measures (its source must then have the measured
        cells' RSRP current)."""
        return self.measured.due(t_s)

    def search_due(self, t_s: float) -> bool:
        """Whether a step at ``t_s`` searches every cell (its source must then have every
        cell's RSRP current)."""
        return self.measured.search_due(t_s)

    def _measure(self, t_s: float, rsrp: Rsrp, searched: np.ndarray | None) -> None:
        everyone = np.arange(len(self.serving))
        if self.measured.search_due(t_s):
            first = self.measured.searches.t0_s is None  # every device needs a first set
            rows = everyone if searched is None or first else searched
            if len(rows):
                self._search(rows, self._offsets(rsrp(rows, None)))
        cells = self.measured.cells
        filtered = self.measured.measure(t_s, rsrp(everyone, cells))
        self._event_a3(filtered, cells)

    def _search(self, rows: np.ndarray, level_db: np.ndarray) -> None:
        """A new measured set for ``rows``; the A3 registers follow the cells kept."""
        changed, kept, was = self.measured.search(rows, level_db, self.serving[rows])
        for register in (self.entering, self.leaving, self.triggered):
            old = np.take_along_axis(register[changed], was, axis=1)
            register[changed] = np.where(kept, old, 0)
        self._slot[rows] = self.measured.slot_of(rows, self.serving[rows])

    def _offsets(self, values: np.ndarray, cells: np.ndarray | None = None) -> np.ndarray:
        if self.cell_offset_db is None:
            return values
        return values + (self.cell_offset_db if cells is None else self.cell_offset_db[cells])

    def _event_a3(self, filtered_dbm: np.ndarray, cells: np.ndarray) -> None:
        """Entering and leaving conditions of every measured neighbour, counted in
        measurement periods, and the triggered lists."""
        cfg = self.config
        rows = np.arange(len(self.serving))
        level = self._offsets(filtered_dbm, cells)
        margin = level - (level[rows, self._slot] + np.float32(cfg.a3_offset_db))[:, None]
        margin[rows, self._slot] = -np.inf  # the serving cell is no neighbour
        if not self.attached.all():
            margin[~self.attached] = np.nan  # neither entering nor leaving
        # A count goes on where its condition holds and restarts where it does not.
        self.entering += 1
        self.entering *= margin > cfg.hysteresis_db
        self.triggered |= self.entering > self.ttt_periods
        self.leaving += 1
        self.leaving *= self.triggered & (margin < -cfg.hysteresis_db)
        self.triggered &= self.leaving <= self.ttt_periods

    def _execute(self, t_s: float) -> Handovers:
        listed = self.triggered.any(axis=1)
        ready = listed & (t_s >= self.interrupted_until_s - _EPS_S)
        self._waiting = bool((listed & ~ready).any())
        device = np.flatnonzero(ready)
        if not len(device):
            return _NO_HANDOVERS
        cells = self.measured.cells[device]
        level = self._offsets(self.measured.filtered_dbm[device], cells)
        slot = np.argmax(np.where(self.triggered[device], level, -np.inf), axis=1)
        target = cells[np.arange(len(device)), slot]
        source = self.serving[device]
        ping_pong = (target == self.previous_cell[device]) & (
            t_s - self.last_handover_s[device] <= self.config.ping_pong_window_s + _EPS_S
        )
        end_s = np.full(len(device), t_s + self.config.interruption_s)
        self.serving[device] = target
        self._slot[device] = slot
        self.previous_cell[device] = source
        self.last_handover_s[device] = t_s
        self.interrupted_until_s[device] = end_s
        self.n_handovers[device] += 1
        self.n_ping_pongs[device] += ping_pong
        self._restart(device)
        return Handovers(device, source, target, np.full(len(device), t_s), end_s, ping_pong)

    def _restart(self, device: np.ndarray) -> None:
        """A new serving cell (or none): fresh A3 counters and list, T310 stopped."""
        self.entering[device] = 0
        self.leaving[device] = 0
        self.triggered[device] = False
        self.t310_start_s[device] = np.nan
        self.out_since_s[device] = np.nan
        self.in_since_s[device] = np.nan
        self.sync[device] = _MID

    # --- radio link monitoring --------------------------------------------------------------

    def _radio_link(self, t_s: float) -> LinkEvents:
        """Run the T310 logic over (previous step, t_s] with the status set then."""
        cfg = self.config
        n310_s, n311_s = cfg.n310 * INDICATION_PERIOD_S, cfg.n311 * INDICATION_PERIOD_S
        running = ~np.isnan(self.t310_start_s)
        start = np.where(running, self.t310_start_s, self.out_since_s + n310_s)
        starts = ~running & (self.sync == _OUT) & (start <= t_s + _EPS_S)
        running = running | starts
        expiry = start + cfg.t310_s
        stop = np.where(self.sync == _IN, self.in_since_s + n311_s, np.inf)
        fails = running & self.attached & (expiry <= t_s + _EPS_S) & (expiry < stop)
        stops = running & ~fails & (stop <= t_s + _EPS_S)
        self.t310_start_s = np.where(starts, start, self.t310_start_s)
        self.t310_start_s[stops] = np.nan
        device = np.flatnonzero(fails)
        lost = self.serving[device]
        self.attached[device] = False
        self.back_at_s[device] = expiry[device] + cfg.reestablishment_s
        self.n_failures[device] += 1
        self._restart(device)
        return LinkEvents(device, lost, expiry[device])

    def _reattach(self, t_s: float, rsrp: Rsrp) -> LinkEvents:
        """Detached devices due back attach to their strongest cell and search anew."""
        due = ~self.attached & (self.back_at_s <= t_s + _EPS_S)
        device = np.flatnonzero(due)
        if not len(device):
            return _NO_LINK_EVENTS
        level = self._offsets(rsrp(device, None))
        cell = np.argmax(level, axis=1)
        self.serving[device] = cell
        self.attached[device] = True
        self.previous_cell[device] = -1
        self._search(device, level)
        t = self.back_at_s[device]
        self.back_at_s[device] = np.nan
        return LinkEvents(device, cell, t)

    def _indications(self, t_s: float, sinr: np.ndarray) -> None:
        """The sync status from ``t_s`` on, and when its current run began."""
        cfg = self.config
        status = np.where(sinr < cfg.qout_db, _OUT, np.where(sinr > cfg.qin_db, _IN, _MID))
        status = np.where(self.attached, status, _MID).astype(np.int8)
        begin = np.maximum(t_s, self.interrupted_until_s)
        self.out_since_s = np.where(
            status == _OUT, np.where(self.sync == _OUT, self.out_since_s, begin), np.nan
        )
        self.in_since_s = np.where(
            status == _IN, np.where(self.sync == _IN, self.in_since_s, begin), np.nan
        )
        self.sync = status

    # --- for the caller ---------------------------------------------------------------------

    def next_due_s(self) -> float:
        """The earliest time something is due (a measurement that can complete a
        time-to-trigger, T310, the N310/N311 counts, a re-attachment, an interruption with
        triggered cells waiting): an update then sees it at its exact time. ``inf`` when
        nothing is pending."""
        cfg = self.config
        times = [self.back_at_s]
        if self.entering.any() or self.leaving.any():
            times.append(np.array([self.measured.measurements.next_s()]))
        if self._waiting:
            times.append(np.where(self.triggered.any(axis=1), self.interrupted_until_s, np.nan))
        running = ~np.isnan(self.t310_start_s)
        times.append(np.where(running, self.t310_start_s + cfg.t310_s, np.nan))
        times.append(np.where(running, np.nan, self.out_since_s + cfg.n310 * INDICATION_PERIOD_S))
        times.append(np.where(running, self.in_since_s + cfg.n311 * INDICATION_PERIOD_S, np.nan))
        flat = np.concatenate([np.ravel(t) for t in times])
        flat = flat[~np.isnan(flat)]
        return float(flat.min()) if len(flat) else float("inf")
