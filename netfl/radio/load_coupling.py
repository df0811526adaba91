"""The load-coupled operating point of a layout's cells: each cell's load sets the
interference the others see.

A cell ``i`` of one direction carries background files offered at ``a_i = λ_i E[S] / N_RB``
(bit/s per RB) and a reserved share ``c_i`` of its RBs; its load is the share of its RBs in
use, ``ρ_i = c_i + a_i m_i(ρ)`` with ``m_i`` the mean RB-seconds a bit costs its users,
which grows with the other cells' loads through their interference. The operating point is
the fixed point ``ρ = min(1, c + a m(ρ))`` (the load-coupling model: Siomina and Yuan,
"Analysis of cell load coupling for LTE network planning and optimization", IEEE Trans.
Wireless Commun. 11(6):2287-2297, 2012; Fehske, Klessig, Voigt, Fettweis, "Flow-level
models for capacity planning and management in interference-coupled wireless data
networks", IEEE Commun. Mag. 52(2):164-171, 2014), found by iterating from an idle
network, which rises to the least fixed point where ``m`` grows with ``ρ`` (the mean
field of those papers). A cell whose demand ``c + a m(ρ)`` reaches 1 at that point is
overloaded: its queue of files grows. In the sampled uplink below, a cell's demand can
also fall as another's load grows (a busier neighbour averages over more of its drawn
transmitters, diluting a dominant one); two cells coupled that way make the damped
iteration circle the fixed point (a Jacobian with complex eigenvalues), and where it has
not settled after half its steps, Powell's hybrid method (MINPACK ``hybrd``,
:func:`scipy.optimize.root`) takes over from where it stands.

Those papers put each other cell's *mean* emission ``ρ_j P g_j`` into the SINR. The engine
does not average: a cell of the fluid scheduler either has a flow and uses all its RBs, or
is idle (:mod:`netfl.radio.cells`), so a neighbour is on with probability ``q_j`` (its flows'
share of the RBs left to them) and off otherwise, and a user's rate is far better in the
gaps than at the mean interference. Here each other cell is on or off in ``states`` joint
samples (stratified: each cell on in exactly the share ``q_j`` of them, the last one
fractionally, so the result is continuous in ``ρ``), and in the uplink the transmitter of
an active neighbour is one of its users, drawn with the weight of the time it stays
(processor sharing keeps a file ``S / r`` seconds). One sample (``states=1``) is the mean
field of the papers.

A transfer that spans several of its neighbours' busy and idle periods, with the radio
update following its rate (``radio.update_interval_s``), spends ``1 / mean(r)`` RB-seconds a
bit over the states it saw; one that keeps its start's rate ``mean(1 / r)``. A transfer of
a user whose rate alone is ``r_u`` lasts ``T_u = E[S] / (N_cap r_u (1 - ρ_i))`` (M/G/1-PS:
sojourn = size over the capacity left, Kleinrock 1976 Sec. 4.4) against a neighbour's
busy-idle cycle ``1 / (λ (1 - ρ))``, and sees about ``L_u = 1 + T_u / cycle`` independent
states: the RB-seconds a bit are averaged over groups of ``L_u`` samples (interpolated
between powers of two). docs/radio.md ("Load planning") compares the result with the
engine's realised RB use.

Every step is numpy over (users x samples) and (samples x cells x cells): no loop over
links. The rate per RB is read from a table over SINR in dB (:class:`RateTable`), built
once per direction from the scenario's mapping.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

#: SINR grid of :class:`RateTable`, dB: below every mapping's first MCS, above its last.
TABLE_LOW_DB, TABLE_HIGH_DB, TABLE_STEP_DB = -40.0, 60.0, 0.02
#: Users drawn per busy cell and sample in the uplink (a busy cell's active transfers).
EMITTERS = 4
#: Steps of one sign after which a cell's damping cap doubles back (:func:`_iterate`).
STREAK = 20


@dataclass(frozen=True)
class RateTable:
    """Rate per RB (bit/s) over SINR in dB, tabulated on a uniform grid and read by linear
    interpolation: an O(1) lookup instead of the mapping's search, continuous in the SINR
    (so is the demand in the loads). Between a point without rate and one with, the
    nearer wins: a line there would give a user just above the lowest MCS a fraction of
    its rate (a huge cost in RB-seconds a bit).

    >>> table = RateTable.of(lambda sinr_db: 180e3 * np.log2(1 + 10 ** (sinr_db / 10)))
    >>> round(float(table(np.array([0.0]))[0]))
    180000
    """

    low_db: float
    step_db: float
    rates_bps: np.ndarray
    slopes_bps: np.ndarray
    """The step from each point's rate to the next one's (0 where either has no rate)."""

    @classmethod
    def of(
        cls,
        rate_per_rb: Callable[[np.ndarray], np.ndarray],
        low_db: float = TABLE_LOW_DB,
        high_db: float = TABLE_HIGH_DB,
        step_db: float = TABLE_STEP_DB,
    ) -> RateTable:
        grid = np.arange(low_db, high_db + step_db / 2, step_db)
        rates = np.asarray(rate_per_rb(grid), dtype=float)
        # Where one end has no rate, the lookup rounds to the nearer point instead.
        rates_at_next = np.append(rates[1:], rates[-1])
        slopes = np.where((rates > 0) & (rates_at_next > 0), rates_at_next - rates, 0.0)
        return cls(low_db, step_db, rates, slopes)

    def __call__(self, sinr_db: np.ndarray) -> np.ndarray:
        position = (np.asarray(sinr_db, dtype=float) - self.low_db) * (1.0 / self.step_db)
        np.clip(position, 0.0, len(self.rates_bps) - 1.0, out=position)
        index = position.astype(np.int32)
        position -= index
        rate = self.rates_bps[index] + self.slopes_bps[index] * position
        # The rate's edge (rate 0 on one side): the nearer point.
        edge = (self.slopes_bps[index] == 0.0) & (position >= 0.5)
        if edge.any():
            rate[edge] = self.rates_bps[np.minimum(index[edge] + 1, len(self.rates_bps) - 1)]
        return rate


@dataclass(frozen=True)
class CellUsers:
    """Users dropped over the layout as a cell's background users are: each one's serving
    cell and coupling gain (linear) to every cell; ``classes`` the class of each cell
    (None: each its own), cells alike by the layout's symmetry (every cell of a
    wrap-around layout), which share one load and pool their users' statistics."""

    serving: np.ndarray
    gain: np.ndarray
    classes: np.ndarray | None = None

    @property
    def n_cells(self) -> int:
        return int(self.gain.shape[1])

    @property
    def cell_class(self) -> np.ndarray:
        return self.classes if self.classes is not None else np.arange(self.n_cells)

    @functools.cached_property
    def own_gain(self) -> np.ndarray:
        return self.gain[np.arange(len(self.serving)), self.serving]

    @functools.cached_property
    def sorted_gain(self) -> np.ndarray:
        """``gain`` with the users in the order of :attr:`by_cell`."""
        return self.gain[self.by_cell[0]]

    @functools.cached_property
    def by_cell(self) -> tuple[np.ndarray, np.ndarray]:
        """The users sorted by serving cell, and where each cell's run starts."""
        order = np.argsort(self.serving, kind="stable")
        counts = np.bincount(self.serving, minlength=self.n_cells)
        return order, np.cumsum(counts) - counts


@dataclass(frozen=True)
class Direction:
    """One direction's demand and radio, as the solver needs them.

    ``offered``: ``λ_i E[S] / N_RB`` per cell (bit/s per RB; 0: no files); ``reserved``: the
    share of each cell's RBs always in use (constant load, 1: saturating full-buffer
    users); ``power_mw(rbs)``: each user's transmit power per RB (mW) when its transfer
    holds ``rbs`` RBs (the downlink's fixed power; the uplink's power control);
    ``uplink``: the interference comes from the other cells' users (else from their base
    stations); ``always_busy``: full-buffer users keep every cell transmitting;
    ``arrival_rate_hz`` and ``file_bits``: the files' rate per cell and mean size,
    for the transfers' durations; ``rb_cap``: the most RBs a transfer holds; ``follow``:
    a transfer's rate follows the interference while it runs (the radio update).
    """

    offered: np.ndarray
    reserved: np.ndarray
    power_mw: Callable[[np.ndarray], np.ndarray]
    noise_mw: float
    rates: RateTable
    n_rb: float
    rb_cap: float
    uplink: bool
    arrival_rate_hz: float = 0.0
    file_bits: float = 0.0
    follow: bool = True
    always_busy: bool = False
    """Every cell transmits on all its RBs all the time (full-buffer users who share them
    with the others): the interference is the worst case's, the demand is the files'."""


@dataclass(frozen=True)
class LoadSolution:
    """Per cell: the load at the operating point (``expected``, in [0, 1]), the demand
    there (``demand``: over 1 where the cell is overloaded) and the demand with every
    other cell at full load (``worst_case``)."""

    expected: np.ndarray
    demand: np.ndarray
    worst_case: np.ndarray
    iterations: int
    rb_seconds_per_bit: np.ndarray
    """Each user's RB-seconds a bit at the operating point (0: not covered)."""
    probe_rb_seconds_per_bit: np.ndarray | None = None
    """The same for a transfer of ``probe_bits`` (None: not asked)."""

    @property
    def overloaded(self) -> np.ndarray:
        return self.demand >= 1.0


class _Samples:
    """The stratified on/off states and emitter draws, fixed for one solve (common random
    numbers: the demand is then continuous in the loads)."""

    def __init__(self, n_cells: int, states: int, rng: np.random.Generator) -> None:
        self.states = states
        self.rank = np.argsort(rng.random((states, n_cells)), axis=0).astype(float)
        ranks = np.argsort(rng.random((EMITTERS, states, n_cells)), axis=1)
        self.pick = (ranks + rng.random((EMITTERS, 1, n_cells))) / states

    def on(self, busy: np.ndarray) -> np.ndarray:
        """``(states, cells)``: 1 where the cell is busy, 0 idle, one fractional state each
        so that every column's mean is ``busy`` exactly."""
        if self.states == 1:
            return busy[None, :].copy()
        return np.clip(busy[None, :] * self.states - self.rank, 0.0, 1.0)


def solve_load(
    users: CellUsers,
    direction: Direction,
    *,
    states: int = 32,
    rng: np.random.Generator | None = None,
    tolerance: float = 1e-3,
    max_iterations: int = 200,
    probe_bits: float | None = None,
) -> LoadSolution:
    """The load-coupled operating point of ``direction`` over ``users`` (module doc).

    >>> users = CellUsers(np.array([0, 1]), np.array([[1e-9, 1e-11], [1e-11, 1e-9]]))
    >>> d = Direction(np.full(2, 2e5), np.zeros(2), lambda rbs: np.full(2, 10.0), 1e-12,
    ...               RateTable.of(lambda s: 180e3 * np.log2(1 + 10 ** (s / 10))), 50, 50,
    ...               False)
    >>> solution = solve_load(users, d, states=1)
    >>> bool(0 < solution.expected[0] < solution.worst_case[0] < 1)
    True
    """
    rng = rng if rng is not None else np.random.default_rng(12345)
    samples = _Samples(users.n_cells, states, rng)
    model = _Model(users, direction, samples)
    idle = np.asarray(direction.reserved, dtype=float).copy()
    # The uplink's emitters are drawn with the weights of the mean-field operating point
    # (a first, cheap solve), then held, so that the sampled solve stays continuous.
    weights = None
    if direction.uplink and states > 1:
        mean_field = _Model(users, direction, _Samples(users.n_cells, 1, rng))
        rho, _, _ = _iterate(mean_field, idle, tolerance, max_iterations, reweight=True)
        weights = mean_field.weights
        model.hold_emitters(weights)
    rho, iterations, per_bit = _settle(model, idle, tolerance, max_iterations, weights is None)
    demand = model.demand(rho)[0]
    # Every other cell at full load for the whole of every transfer (no idle gaps to ride).
    worst = np.maximum(model.demand(np.ones(users.n_cells), spans=False)[0], demand)
    probe = None
    if probe_bits is not None:
        # What a transfer of another size pays there (an FL model): its duration decides
        # how many of its neighbours' states it averages over.
        model.d = replace(direction, file_bits=probe_bits)
        probe = model.demand(rho)[1]
    return LoadSolution(np.minimum(rho, 1.0), demand, worst, iterations, per_bit, probe)


def _settle(
    model: _Model, start: np.ndarray, tolerance: float, max_iterations: int, reweight: bool
) -> tuple[np.ndarray, int, np.ndarray]:
    """:func:`_iterate` for half the steps, then, where it has not settled, Powell's hybrid
    method on ``min(1, demand(ρ)) - ρ`` from its last iterate for the other half (module
    doc). Returns the demand evaluations used (``max_iterations`` where neither settled).
    A solve that reweights its emitters as it goes (the mean field's) has no fixed map to
    hand over, and iterates for all its steps."""
    patience = max_iterations if reweight else max_iterations // 2
    rho, iterations, per_bit = _iterate(model, start, tolerance, patience, reweight)
    if iterations < patience or reweight:
        return rho, iterations, per_bit
    from scipy.optimize import root  # lazy: validate's start-up (docs/benchmarks.md)

    def residual(loads: np.ndarray) -> np.ndarray:
        loads = np.clip(loads, 0.0, 1.0)
        return np.minimum(model.demand(loads)[0], 1.0) - loads

    found = root(residual, rho, method="hybr", options={"maxfev": max_iterations - patience})
    loads = np.clip(found.x, 0.0, 1.0)
    demand, per_bit_there = model.demand(loads)
    if np.max(np.abs(np.minimum(demand, 1.0) - loads)) >= tolerance:
        return rho, max_iterations, per_bit
    return loads, patience + found.nfev, per_bit_there


def _iterate(
    model: _Model, start: np.ndarray, tolerance: float, max_iterations: int, reweight: bool
) -> tuple[np.ndarray, int, np.ndarray]:
    """``ρ <- ρ + β (min(1, demand(ρ)) - ρ)`` per cell from ``start`` until no cell's
    residual exceeds ``tolerance``. While every cell's steps keep their sign and the
    largest shrinks by a ratio ``r``, the cells jump to the end of that geometric series
    (``1 / (1 - r)`` times the step); when a cell's step changes sign its ``β`` halves, and
    doubles back while the steps keep their sign, up to a cap: its value after that change,
    which doubles (up to 1) after every :data:`STREAK` steps of one sign (the transfers'
    durations, and with them the demand, fall as a cell's load nears 1, which can make
    plain iteration alternate; a cap that never grows back leaves a stiff cell crawling)."""
    rho = np.asarray(start, dtype=float)
    beta = np.ones_like(rho)
    cap = np.ones_like(rho)
    streak = np.zeros_like(rho)  # steps of one sign since the cell's last change of sign
    previous = np.zeros_like(rho)
    per_bit = np.zeros(0)
    for iteration in range(1, max_iterations + 1):
        demand, per_bit = model.demand(rho)
        if reweight:
            model.weights = per_bit
        step = np.minimum(demand, 1.0) - rho
        if np.max(np.abs(step)) < tolerance:
            return rho, iteration, per_bit
        flipped = step * previous < 0
        streak = np.where(flipped, 0, streak + 1)
        grow = streak >= STREAK
        cap = np.where(flipped, 0.5 * beta, np.where(grow, np.minimum(1.0, 2.0 * cap), cap))
        streak[grow] = 0
        beta = np.where(flipped, cap, np.minimum(cap, 2.0 * beta))
        factor = 1.0
        shrink = np.max(np.abs(step)) / max(np.max(np.abs(previous)), 1e-300)
        if not flipped.any() and 0.0 < shrink < 0.9:
            factor = 1.0 / (1.0 - shrink)
        rho = np.clip(rho + beta * factor * step, 0.0, 1.0)
        previous = step
    return rho, max_iterations, per_bit


class _Model:
    """The demand of every cell at given loads (module doc)."""

    def __init__(self, users: CellUsers, direction: Direction, samples: _Samples) -> None:
        self.users, self.d, self.samples = users, direction, samples
        n_cells = users.n_cells
        self.counts = np.bincount(users.serving, minlength=n_cells)
        self.cell_class = users.cell_class
        self.user_class = self.cell_class[users.serving]
        self.weights = np.ones(len(users.serving))
        self._emitters: np.ndarray | None = None

    def hold_emitters(self, weights: np.ndarray) -> None:
        """Draw each sample's transmitting users of every cell (:data:`EMITTERS` of them),
        with ``weights``."""
        samples = self.samples
        order, starts = self.users.by_cell
        cumulative = np.cumsum(weights[order])
        ends = starts + self.counts
        before = np.concatenate([[0.0], cumulative])
        base, total = before[starts], before[ends] - before[starts]
        index = np.searchsorted(cumulative, base + samples.pick * total, "right")
        index = np.clip(index, starts, np.maximum(ends - 1, starts))
        self._emitters = order[index]  # (emitters, states, cells): users of each cell

    def rbs_held(self, rho: np.ndarray) -> np.ndarray:
        """RBs a transfer of each user holds, averaged over its stay (what a power-limited
        uplink's power per RB, and so its cost, follows), at most its cap: the mean of the
        fluid scheduler's two limits at its cell's busy share ``q``. Transfers whose stay
        stretches with the sharing (rate in proportion to the RBs) hold ``N (1 - q)``:
        a stay is the work over ``1 - q`` (M/G/1-PS, Kleinrock 1976 Sec. 4.4). Transfers
        whose stay does not (power-limited: ``P_CMAX`` spread over the RBs, the rate
        hardly moves with them) are an infinite-server queue, their number Poisson of mean
        ``ln(1 / (1 - q))``, and hold ``N q / ln(1 / (1 - q))``. A cell's transfers are a
        mix; the RBs a transfer finds at its start, ``N (1 - q) ln(1 / (1 - q)) / q``,
        which this took before, put async_compare's uplink 31% above the run
        (docs/radio.md, "Load planning")."""
        d = self.d
        q = np.clip(self._busy(rho), 0.0, 1.0)[self.users.serving]
        log = -np.log1p(-np.minimum(q, 1.0 - 1e-12))
        infinite = np.where(q > 1e-9, q / np.maximum(log, 1e-300), 1.0)
        share = 0.5 * ((1.0 - q) + infinite)
        return np.maximum(np.minimum(d.rb_cap, d.n_rb * share), 1.0)

    def _busy(self, rho: np.ndarray) -> np.ndarray:
        """Probability each cell's flows hold its RBs: their share of the RBs left."""
        reserved = self.d.reserved
        free = np.maximum(1.0 - reserved, 1e-12)
        return np.clip((rho - reserved) / free, 0.0, 1.0)

    def demand(self, rho: np.ndarray, spans: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``c + a m(ρ)`` per cell, and each user's RB-seconds a bit (``spans``: averaged
        over the states a transfer spans, else ``mean(1 / r)``)."""
        users, d = self.users, self.d
        rho = np.minimum(rho, 1.0)
        power = d.power_mw(self.rbs_held(rho))
        signal = power * users.own_gain
        occupancy = d.reserved[None, :] + (1 - d.reserved[None, :]) * self.samples.on(
            self._busy(rho)
        )
        if d.always_busy:
            occupancy = np.ones_like(occupancy)
        interference = self._interference(occupancy, power)  # (users, states)
        sinr_db = 10.0 * np.log10(signal[:, None] / (d.noise_mw + interference))
        rate = d.rates(sinr_db)
        per_bit = self._per_bit(rate, rho, spans)
        covered = per_bit > 0
        group = self.user_class
        n_classes = int(self.cell_class.max()) + 1
        class_sum = np.bincount(group, weights=per_bit, minlength=n_classes)
        class_n = np.bincount(group, weights=covered, minlength=n_classes)
        mean = (class_sum / np.maximum(class_n, 1))[self.cell_class]
        return d.reserved + d.offered * mean, per_bit

    def _interference(self, occupancy: np.ndarray, power: np.ndarray) -> np.ndarray:
        users, d = self.users, self.d
        serving = users.serving
        if not d.uplink:
            # Downlink: the base stations on at their power per RB, but not the own one.
            # einsum without BLAS: its threads only spin on small products.
            seen = np.einsum("uc,kc->uk", users.gain, occupancy)
            seen -= users.own_gain[:, None] * occupancy[:, serving].T
            return d.power_mw(np.ones(1))[0] * np.maximum(seen, 0.0)
        if self._emitters is None:
            # Mean field: each cell's mean emission per RB (weighted by time in the cell).
            emission = _mean_emission(users, power, self.weights, self.counts)
            into = np.einsum("kj,ji->ki", occupancy, emission)
            into -= occupancy * np.diagonal(emission)[None, :]
        else:
            # A busy cell's transfers share its RBs, so its emission per RB is the mean of
            # its active users': about 1 / (1 - q) of them (M/G/1-PS given busy).
            share = self._emitter_share(occupancy)  # (emitters, cells)
            emitted = power[self._emitters][..., None] * users.gain[self._emitters]
            emitted = np.einsum("ekji,ej->kji", emitted, share) * occupancy[:, :, None]
            into = emitted.sum(axis=1) - np.einsum("kjj->kj", emitted)
        return np.maximum(into[:, serving].T, 0.0)

    def _emitter_share(self, occupancy: np.ndarray) -> np.ndarray:
        """Weights of each cell's drawn emitters: the first ``m`` of them, ``m`` the mean
        number of transfers of a busy cell (at most :data:`EMITTERS`)."""
        busy = np.clip(occupancy.mean(axis=0), 0.0, 1.0 - 1e-9)
        active = np.minimum(1.0 / (1.0 - busy), EMITTERS)
        weights = np.clip(active[None, :] - np.arange(EMITTERS)[:, None], 0.0, 1.0)
        return weights / weights.sum(axis=0, keepdims=True)

    def _per_bit(self, rate: np.ndarray, rho: np.ndarray, spans_on: bool) -> np.ndarray:
        """RB-seconds a bit of each user: ``1 / mean(r)`` over groups of the states its
        transfer spans (``mean(1 / r)`` for a transfer that keeps its start's rate)."""
        d, n_states = self.d, rate.shape[1]
        spans = np.ones(len(rate))
        if spans_on and d.follow and n_states > 1 and d.arrival_rate_hz > 0:
            alone = np.maximum(rate.mean(axis=1) * min(d.rb_cap, d.n_rb), 1e-9)
            slowdown = np.maximum(1.0 - np.minimum(rho, 1.0), 0.05)[self.users.serving]
            duration_s = d.file_bits / alone / slowdown
            cycle_s = 1.0 / (d.arrival_rate_hz * max(1.0 - float(np.mean(rho)), 0.05))
            spans = 1.0 + duration_s / cycle_s
        rows = []
        mean_rate = rate
        while True:  # groups of 1, 2, 4, ... states: each level the pairwise mean of the last
            served = mean_rate > 0
            inverse = np.divide(1.0, mean_rate, out=np.zeros_like(mean_rate), where=served)
            rows.append(inverse.sum(axis=1) / np.maximum(served.sum(axis=1), 1))
            if mean_rate.shape[1] % 2:
                break
            mean_rate = 0.5 * (mean_rate[:, 0::2] + mean_rate[:, 1::2])
        if len(rows) == 1:
            return rows[0]
        levels = np.array(rows)
        position = np.clip(np.log2(spans), 0.0, len(rows) - 1.0)
        low = np.minimum(position.astype(np.int64), len(rows) - 2)
        fraction = position - low
        columns = np.arange(len(rate))
        return levels[low, columns] * (1 - fraction) + levels[low + 1, columns] * fraction


def _mean_emission(
    users: CellUsers, power: np.ndarray, weights: np.ndarray, counts: np.ndarray
) -> np.ndarray:
    """``E[j, i]``: the weighted mean emission per RB of cell ``j``'s users onto cell ``i``
    (0 from a cell without users)."""
    order, starts = users.by_cell
    present = counts > 0
    emission = np.zeros((users.n_cells, users.n_cells))
    if not present.any():
        return emission
    weighted = weights[order]
    sums = np.add.reduceat((weighted * power[order])[:, None] * users.sorted_gain, starts[present])
    totals = np.add.reduceat(weighted, starts[present])
    emission[present] = sums / np.where(totals > 0, totals, 1.0)[:, None]
    return emission
