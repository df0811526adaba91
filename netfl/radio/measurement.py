"""What a moving device measures for handover: which cells, how often, and how filtered.

A UE does not measure every cell of the network at every instant. TS 36.133 Sec. 8.1.2.2
(E-UTRA intra-frequency, no DRX) has it identify a new cell within T_identify_intra =
800 ms and report the RSRP of at least 8 identified cells per carrier (the serving cell
among them) once per physical-layer measurement period of 200 ms; TS 38.133 Table
9.2.5.2-1 gives NR FR1 the same 200 ms (max(200 ms, ceil(5 K_p) x SMTC period) x
CSSF_intra with the default 20 ms SMTC period, no DRX; FR2's Table 9.2.5.2-2 starts at
400 ms). :class:`MeasuredCells` keeps, for all devices at once:

- **the measured set**: ``count`` cells per device, its serving cell and the strongest
  others, chosen again at every cell search (:data:`CELL_SEARCH_PERIOD_S`, T_identify_intra)
  from the RSRP of every cell; a cell kept from one search to the next keeps its filtered
  value, a new one starts its filter at its first measurement (F_0 = M_1);
- **the clock**: measurements on the grid ``t0 + k * period_s`` (at the first radio update
  at or after each point), searches on the grid of :data:`CELL_SEARCH_PERIOD_S`;
- **the layer-3 filter** (TS 36.331 Sec. 5.5.3.2; TS 38.331 Sec. 5.5.3.2):
  F_n = (1 - a) F_(n-1) + a M_n in dBm, a = 1 / 2^(k/4) for one input per
  ``filter_input_period_s``: 200 ms in LTE (TS 36.331), one L1 measurement period in NR
  (TS 38.331: "X ms ... one intra-frequency L1 measurement period as defined in TS
  38.133"). With the default 200 ms period the two agree and a applies per measurement;
  another period adapts a so that the filter keeps its time constant,
  1 - a_T = (1 - a)^(T / X).

Cost: a measurement is O(devices x count), a search O(devices x cells) (an argpartition),
both numpy. Values are float32: RSRP to 1e-5 dB.
"""

from __future__ import annotations

import numpy as np

#: The input period for which TS 36.331's filter coefficient is specified (LTE), s.
FILTER_INPUT_PERIOD_S = 0.2
#: How often a device searches every cell for its measured set, s: TS 36.133 Sec. 8.1.2.2.1's
#: T_identify_intra (a new detectable intra-frequency cell is identified within 800 ms).
#: A vehicle at 120 km/h moves 27 m in that time, a seventh of a 200 m ISD.
CELL_SEARCH_PERIOD_S = 0.8
_EPS_S = 1e-9


def filter_weight(
    filter_coefficient: int, period_s: float, input_period_s: float = FILTER_INPUT_PERIOD_S
) -> float:
    """Weight a of a new input arriving every ``period_s`` for a filter specified for one
    every ``input_period_s`` (1 for k = 0: no filtering).

    >>> filter_weight(4, 0.2)
    0.5
    >>> round(filter_weight(4, 0.4), 6)  # two 200 ms inputs' worth: 1 - (1 - 1/2)^2
    0.75
    """
    a = 1.0 / 2 ** (filter_coefficient / 4)
    return 1.0 - (1.0 - a) ** (period_s / input_period_s)


class _Grid:
    """Instants ``t0 + k * period`` (counted, not summed: no drift); ``due(t)`` at the
    first time at or after the next one."""

    def __init__(self, period_s: float) -> None:
        self.period_s = period_s
        self.t0_s: float | None = None
        self.k = 0

    def due(self, t_s: float) -> bool:
        return self.t0_s is None or t_s >= self.t0_s + self.k * self.period_s - _EPS_S

    def next_s(self) -> float:
        return -np.inf if self.t0_s is None else self.t0_s + self.k * self.period_s

    def tick(self, t_s: float) -> None:
        if self.t0_s is None:
            self.t0_s = t_s
        self.k = max(self.k, int(np.floor((t_s - self.t0_s) / self.period_s + _EPS_S))) + 1


class MeasuredCells:
    """The measured cells of ``n_devices`` devices and their filtered RSRP (module doc).

    Parameters
    ----------
    n_devices, n_cells
        Devices, and cells in the layout.
    count
        Cells measured per device (at most ``n_cells``), the serving cell among them.
    period_s
        The physical-layer measurement period, s.
    filter_coefficient, filter_input_period_s
        The layer-3 filter's k and the input period it is specified for (module doc).
    search_period_s
        Between two cell searches, s.
    """

    def __init__(
        self,
        n_devices: int,
        n_cells: int,
        count: int,
        period_s: float,
        filter_coefficient: int,
        filter_input_period_s: float = FILTER_INPUT_PERIOD_S,
        search_period_s: float = CELL_SEARCH_PERIOD_S,
    ) -> None:
        self.n_cells, self.count = n_cells, min(count, n_cells)
        self.weight = filter_weight(filter_coefficient, period_s, filter_input_period_s)
        self.measurements, self.searches = _Grid(period_s), _Grid(search_period_s)
        #: ``(devices, count)`` the cells each device measures (every row ascending).
        self.cells = np.zeros((n_devices, self.count), dtype=np.int64)
        #: ``(devices, count)`` their layer-3 filtered RSRP, dBm (NaN: not measured yet).
        self.filtered_dbm = np.full((n_devices, self.count), np.nan, dtype=np.float32)

    @property
    def period_s(self) -> float:
        return self.measurements.period_s

    def due(self, t_s: float) -> bool:
        """Whether a radio update at ``t_s`` takes a measurement."""
        return self.measurements.due(t_s)

    def search_due(self, t_s: float) -> bool:
        """Whether the measurement at ``t_s`` is also a cell search (it needs every cell's
        RSRP current)."""
        return self.due(t_s) and self.searches.due(t_s)

    def search(
        self, rows: np.ndarray, rsrp_dbm: np.ndarray, serving: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Measure the serving cell and the ``count - 1`` strongest others of the devices
        ``rows`` (ascending) from now on (``rsrp_dbm``: theirs to every cell). Returns
        ``(changed, kept, was)``: the rows whose set changed and, for those, whether each
        new slot's cell was measured before and in which old slot (``(len(changed),
        count)``), for the caller's other per-slot state; the filter follows here."""
        level = np.array(rsrp_dbm, dtype=float)
        n = len(level)
        level[np.arange(n), serving] = np.inf  # always measured
        if self.count < self.n_cells:
            new = np.sort(np.argpartition(-level, self.count - 1, axis=1)[:, : self.count], 1)
        else:
            new = np.broadcast_to(np.arange(self.n_cells), (n, self.n_cells))
        old = self.cells[rows]
        moved = np.flatnonzero((new != old).any(axis=1))
        changed, new, old = rows[moved], new[moved], old[moved]
        # Rows ascending and cells ascending within rows: the keys row * cells + cell of
        # the old sets are sorted, and a binary search finds each new cell among them.
        base = np.arange(len(changed))[:, None] * self.n_cells
        old_keys, new_keys = (old + base).ravel(), new + base
        at = np.minimum(np.searchsorted(old_keys, new_keys), old_keys.size - 1)
        kept = old_keys[at] == new_keys
        was = at - np.arange(len(changed))[:, None] * self.count
        previous = self.filtered_dbm[changed]
        self.filtered_dbm[changed] = np.where(
            kept, np.take_along_axis(previous, np.where(kept, was, 0), 1), np.nan
        )
        self.cells[changed] = new
        return changed, kept, np.where(kept, was, 0)

    def measure(self, t_s: float, rsrp_dbm: np.ndarray) -> np.ndarray:
        """One measurement at ``t_s`` of every measured cell (``rsrp_dbm``: ``(devices,
        count)``, in the order of :attr:`cells`): the filtered values after it."""
        f = self.filtered_dbm
        m = np.asarray(rsrp_dbm, dtype=np.float32)
        f += np.float32(self.weight) * (m - f)
        fresh = np.isnan(f)
        f[fresh] = m[fresh]  # F_0 = M_1
        if self.searches.due(t_s):
            self.searches.tick(t_s)
        self.measurements.tick(t_s)
        return f

    def slot_of(self, rows: np.ndarray | slice, cell: np.ndarray) -> np.ndarray:
        """Where ``cell`` (one per row, measured) is in each row of :attr:`cells`."""
        return np.argmax(self.cells[rows] == np.asarray(cell)[:, None], axis=1)
