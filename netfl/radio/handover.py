"""Handover and radio link failure of every device, one vectorised step per radio update.

:class:`HandoverState` keeps, for all devices at once, what a UE and its serving cell keep
for intra-frequency mobility, and :meth:`HandoverState.step` advances it to the time of a
radio update from that update's RSRP (devices x cells, dBm) and downlink SINR (devices, dB):

1. **Layer-3 filter** (TS 36.331 Sec. 5.5.3.2): F_n = (1 - a) F_(n-1) + a M_n in dBm, with
   a = 1 / 2^(k/4) for one input every 200 ms. Updates come at other intervals dt, so a is
   adapted to keep the filter's time constant: 1 - a_dt = (1 - a)^(dt / 200 ms) (the
   weight of old inputs decays per second as specified). F starts at the first M.
2. **Event A3** (TS 36.331 Sec. 5.5.4.4) per neighbour n, on the filtered values with the
   cell individual offsets Ocn, Ocp (frequency offsets are 0: one carrier):
   entering when Mn + Ocn - Hys > Mp + Ocp + Off, leaving when Mn + Ocn + Hys < Mp + Ocp
   + Off. A neighbour whose entering condition held at every update for timeToTrigger
   joins the triggered list; one whose leaving condition held for timeToTrigger leaves it.
   The measurement report goes at once and the network hands over at once (no preparation
   delay) to the triggered neighbour with the best filtered RSRP, unless the device is
   still interrupted by its previous handover, in which case the triggered cells wait in
   the list (until they leave it or the interruption ends).
3. **Execution**: the serving cell changes and the device's transfers pause until
   ``t + interruption_s`` (the caller pauses them; TS 36.133 Sec. 5.1.2.1). Timers and the
   triggered list restart for the new serving cell; T310 stops (TS 36.331 Sec. 5.3.11).
   A handover back to the cell the device left with its previous handover, within
   ``ping_pong_window_s`` of it, is a ping-pong (TR 36.839 Sec. 5.2.2).
4. **Radio link failure** (TS 36.331 Sec. 5.3.11, TS 36.213 Sec. 4.2.1): the physical layer
   gives one out-of-sync (SINR < Qout) or in-sync (SINR > Qin) indication per 10 ms radio
   frame. The SINR is taken as constant between updates, so indications are counted
   exactly: N310 consecutive out-of-sync start T310; N311 consecutive in-sync stop it; its
   expiry is a radio link failure at that exact time. The device then drops its transfers
   (the caller's job), is detached for ``reestablishment_s``, and comes back on its
   strongest cell (by the RSRP of the update that finds it due). Monitoring pauses during a
   handover's interruption.

Between updates nothing is observed: a condition is only checked at update times, so a
handover happens at the first update at or after its time-to-trigger has run out
(:meth:`HandoverState.next_due_s` tells the caller when the next timer runs out, if it
wants an update then). Cost per step: O(devices x cells) numpy, no loop over devices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netfl.config.mobility import HandoverConfig

#: The input period for which TS 36.331's filter coefficient is specified, s.
FILTER_INPUT_PERIOD_S = 0.2
#: One radio frame: the period of in-sync/out-of-sync indications (TS 36.213 Sec. 4.2.1), s.
INDICATION_PERIOD_S = 0.01
_OUT, _MID, _IN = -1, 0, 1
_EPS_S = 1e-9


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


def filter_weight(filter_coefficient: int, dt_s: float) -> float:
    """Weight a of the new input over a step of ``dt_s`` (1 for k = 0: no filtering).

    >>> filter_weight(4, 0.2)
    0.5
    >>> round(filter_weight(4, 0.4), 6)  # two 200 ms inputs' worth: 1 - (1 - 1/2)^2
    0.75
    """
    a = 1.0 / 2 ** (filter_coefficient / 4)
    return 1.0 - (1.0 - a) ** (dt_s / FILTER_INPUT_PERIOD_S)


def _empty_handovers() -> Handovers:
    i, f = np.empty(0, np.int64), np.empty(0)
    return Handovers(i, i, i, f, f, np.empty(0, bool))


class _Timers:
    """When a condition began to hold for each (device, cell) (+inf: it does not hold now).

    Few pairs meet a condition at a time, so :meth:`hold` touches only where it holds now
    and where it held at the previous call (the only finite timers), not the whole matrix.
    """

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.since_s = np.full(shape, np.inf)
        self._held = np.empty(0, dtype=np.int64)  # flat indices set by the last call

    def hold(self, now: np.ndarray, t_s: float) -> np.ndarray:
        """The condition holds at ``t_s`` exactly at the flat indices ``now``: start their
        timers (kept where already running), stop the others, return the started times."""
        flat = self.since_s.reshape(-1)
        since = np.minimum(flat[now], t_s)
        flat[self._held] = np.inf
        flat[now] = since
        self._held = now
        return since


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
    cell_offset_db
        ``(cells,)`` cell individual offsets Ocn (default 0).
    """

    def __init__(
        self,
        n_devices: int,
        serving_cell: np.ndarray,
        config: HandoverConfig,
        cell_offset_db: np.ndarray | None = None,
    ) -> None:
        self.config = config
        self.serving = np.array(serving_cell, dtype=np.int64).reshape(n_devices)
        self.cell_offset_db = None if cell_offset_db is None else np.asarray(cell_offset_db)
        self.filtered_dbm: np.ndarray | None = None
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
        self._enter: _Timers | None = None  # A3 entering condition, per (device, cell)
        self._leave: _Timers | None = None  # A3 leaving condition of the listed cells
        self._triggered: np.ndarray | None = None

    # --- the step ---------------------------------------------------------------------------

    def step(
        self, t_s: float, dt_s: float, rsrp_dbm: np.ndarray, sinr_db: np.ndarray
    ) -> StepEvents:
        """Advance every device to ``t_s``, ``dt_s`` after the previous step, with the RSRP
        of every cell (``(devices, cells)`` dBm) and the downlink SINR (``(devices,)`` dB)
        measured at ``t_s``."""
        rsrp = np.asarray(rsrp_dbm, dtype=float)
        sinr = np.asarray(sinr_db, dtype=float)
        if self.now_s is not None and t_s < self.now_s - _EPS_S:
            raise ValueError(f"step at {t_s} s is before the previous one ({self.now_s} s)")
        if self.filtered_dbm is None:
            self._first(rsrp)
        failures = self._radio_link(t_s)
        reattached = self._reattach(t_s, rsrp)
        self._filter(rsrp, dt_s, fresh=reattached.device)
        self._event_a3(t_s)
        handovers = self._execute(t_s)
        self._indications(t_s, sinr)
        self.now_s = t_s
        return StepEvents(
            handovers, failures, reattached, self.serving.copy(), self.attached.copy()
        )

    def _first(self, rsrp: np.ndarray) -> None:
        self.filtered_dbm = rsrp.copy()
        self._enter = _Timers(rsrp.shape)
        self._leave = _Timers(rsrp.shape)
        self._triggered = np.zeros(rsrp.shape, dtype=bool)

    def _filter(self, rsrp: np.ndarray, dt_s: float, fresh: np.ndarray) -> None:
        assert self.filtered_dbm is not None
        a = filter_weight(self.config.filter_coefficient, max(dt_s, 0.0))
        if a == 1.0:
            self.filtered_dbm = rsrp.copy()
        else:
            self.filtered_dbm += a * (rsrp - self.filtered_dbm)
            self.filtered_dbm[fresh] = rsrp[fresh]

    def _offsets(self, values: np.ndarray) -> np.ndarray:
        return values if self.cell_offset_db is None else values + self.cell_offset_db[None, :]

    def _event_a3(self, t_s: float) -> None:
        """Entering and leaving conditions of every neighbour, and the triggered lists
        (the timers: :class:`_Timers`)."""
        assert self.filtered_dbm is not None and self._triggered is not None
        assert self._enter is not None and self._leave is not None
        cfg = self.config
        rows = np.arange(len(self.serving))
        level = self._offsets(self.filtered_dbm)
        margin = level - (level[rows, self.serving] + cfg.a3_offset_db)[:, None]
        margin[rows, self.serving] = -np.inf  # the serving cell is no neighbour
        if not self.attached.all():
            margin[~self.attached] = np.nan  # neither entering nor leaving
        due = t_s - cfg.time_to_trigger_s + _EPS_S
        triggered = self._triggered.reshape(-1)
        entering = np.flatnonzero(margin > cfg.hysteresis_db)
        since = self._enter.hold(entering, t_s)
        triggered[entering[since <= due]] = True
        listed = np.flatnonzero(triggered)
        if len(listed):  # only listed cells can leave (their leave timers start once listed)
            leaving = listed[margin.reshape(-1)[listed] < -cfg.hysteresis_db]
            since = self._leave.hold(leaving, t_s)
            triggered[leaving[since <= due]] = False

    def _execute(self, t_s: float) -> Handovers:
        assert self.filtered_dbm is not None and self._triggered is not None
        ready = self._triggered.any(axis=1) & (t_s >= self.interrupted_until_s - _EPS_S)
        device = np.flatnonzero(ready)
        if not len(device):
            return _empty_handovers()
        best = np.where(self._triggered[device], self._offsets(self.filtered_dbm)[device], -np.inf)
        target = np.argmax(best, axis=1)
        source = self.serving[device]
        ping_pong = (target == self.previous_cell[device]) & (
            t_s - self.last_handover_s[device] <= self.config.ping_pong_window_s + _EPS_S
        )
        end_s = np.full(len(device), t_s + self.config.interruption_s)
        self.serving[device] = target
        self.previous_cell[device] = source
        self.last_handover_s[device] = t_s
        self.interrupted_until_s[device] = end_s
        self.n_handovers[device] += 1
        self.n_ping_pongs[device] += ping_pong
        self._restart(device)
        return Handovers(device, source, target, np.full(len(device), t_s), end_s, ping_pong)

    def _restart(self, device: np.ndarray) -> None:
        """A new serving cell (or none): fresh A3 timers and list, T310 stopped."""
        assert self._enter is not None and self._leave is not None
        assert self._triggered is not None
        self._enter.since_s[device] = np.inf
        self._leave.since_s[device] = np.inf
        self._triggered[device] = False
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

    def _reattach(self, t_s: float, rsrp: np.ndarray) -> LinkEvents:
        due = ~self.attached & (self.back_at_s <= t_s + _EPS_S)
        device = np.flatnonzero(due)
        cell = np.argmax(self._offsets(rsrp)[device], axis=1)
        self.serving[device] = cell
        self.attached[device] = True
        self.previous_cell[device] = -1
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
        """The earliest time a timer runs out (a time-to-trigger, T310, the N310/N311
        counts, a re-attachment, an interruption with triggered cells waiting): an update
        then sees it at its exact time. ``inf`` when nothing is pending."""
        cfg = self.config
        times = [self.back_at_s]
        if self._enter is not None and self._triggered is not None:
            since_s = self._enter.since_s
            pending = ~self._triggered & np.isfinite(since_s)
            times.append(np.where(pending, since_s + cfg.time_to_trigger_s, np.nan))
            waiting = self._triggered.any(axis=1)
            times.append(np.where(waiting, self.interrupted_until_s, np.nan))
        running = ~np.isnan(self.t310_start_s)
        times.append(np.where(running, self.t310_start_s + cfg.t310_s, np.nan))
        times.append(np.where(running, np.nan, self.out_since_s + cfg.n310 * INDICATION_PERIOD_S))
        times.append(np.where(running, self.in_since_s + cfg.n311 * INDICATION_PERIOD_S, np.nan))
        flat = np.concatenate([np.ravel(t) for t in times])
        flat = flat[~np.isnan(flat)]
        return float(flat.min()) if len(flat) else float("inf")
