"""The background load a scenario's cells settle at, per direction, and the worst case.

Every source of ``traffic.sources`` runs in every cell (:mod:`netfl.radio.traffic`); this
module turns them into the demand of :mod:`netfl.radio.load_coupling` and solves for the
operating point: FTP Model 1 offers ``λ E[S] / N_RB`` (TR 36.814 A.2.1.3.1), a constant
load reserves its fraction, full-buffer users keep every cell's RBs busy. Users are dropped
over the layout like the background users of a run (:class:`netfl.radio.traffic.
LayoutUsers`: each belongs to the cell that serves it; those without coverage are never
drawn), from a fixed stream, so that whether a scenario is overloaded does not depend on
its seed; where the FL devices sit in some sites only (``cell.device_sites: centre``), more
users are dropped there, since the load FL meets is reported for those cells.

``netfl validate`` prints the result (:mod:`netfl.planning`), :mod:`netfl.radio.checks`
warns at the operating point (not the worst case), and ``summary.json`` reports what a run
realised in the cells that carried FL (``rb_utilisation_ul_background``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from channel_models.power_control import power_drop_db
from netfl.config import Scenario
from netfl.config.radio import LteRadioConfig
from netfl.config.traffic import ConstantLoadSource, FtpSource, FullBufferSource
from netfl.radio.cells import DL, UL, db_to_mw
from netfl.radio.load_coupling import CellUsers, Direction, LoadSolution, RateTable, solve_load
from netfl.radio.system import RadioSystem, drop_users

#: Users dropped a cell over the whole layout, at least :data:`MIN_USERS` in all; and a
#: cell of the FL devices' sites when those are some sites only. The uplink's load rests
#: on its few users at the cell edge (their RB-seconds a bit are 1 / SINR), so it takes
#: all of them; the downlink, whose rates have a floor, every :data:`DOWNLINK_EVERY`-th.
USERS_PER_CELL, MIN_USERS, USERS_PER_FL_CELL = 192, 4096, 1024
DOWNLINK_EVERY = 3
#: Joint on/off samples of the other cells (:func:`netfl.radio.load_coupling.solve_load`).
STATES = 16
#: The fixed stream of the users and samples.
PLANNING_SEED = 12345
_LONG = {UL: "uplink", DL: "downlink"}


@dataclass(frozen=True)
class BackgroundLoad:
    """One direction's background load per cell: at the operating point (``expected``, in
    [0, 1]), the demand there (over 1: overloaded) and with every other cell at full
    load (``worst_case``); which cells hold FL devices; the scenario keys behind it; and
    the capacity ``N_RB / E[RB-seconds a bit]`` of the FL cells at the operating point
    (None without FTP users to estimate it from)."""

    direction: str
    expected: np.ndarray
    demand: np.ndarray
    worst_case: np.ndarray
    fl_cells: np.ndarray
    keys: tuple[str, ...]
    capacity_bps: float | None
    fl_rb_seconds_per_bit: np.ndarray | None = None
    """RB-seconds a bit of the users of the FL devices' cells at the operating point for a
    transfer of ``link_bits`` (an FL transfer of ``M`` bits alone holds ``fl_rbs`` RBs for
    ``M x this / fl_rbs`` seconds); None unless asked for."""
    fl_rbs: float = 0.0
    """RBs an FL transfer holds alone (its cap, or the band)."""

    def over_fl_cells(self, per_cell: np.ndarray) -> float:
        """The mean of ``per_cell`` over the cells that hold FL devices."""
        return float(np.mean(per_cell[self.fl_cells]))


#: The last scenario's result, keyed by its content (``netfl validate`` asks up to three
#: times: the overload check, the printed plan, the run's forecast); a changed scenario
#: is a different key.
_LAST: dict[tuple[str, float | None], dict[str, BackgroundLoad]] = {}


def background_load(
    scenario: Scenario, link_bits: float | None = None
) -> dict[str, BackgroundLoad]:
    """Per direction (``uplink``, ``downlink``): the background load of every cell; with
    ``link_bits`` also what an FL transfer of that many bits costs there
    (``fl_rb_seconds_per_bit``), for which the radio is built even without background
    traffic."""
    key = scenario.model_dump_json()
    if link_bits is None and scenario.traffic.sources:
        # Solved anyway: what the model's transfers cost comes at one more evaluation.
        link_bits = scenario.fl.model_size_bits
    if (key, link_bits) not in _LAST:
        _LAST.clear()
        _LAST[key, link_bits] = _background_load(scenario, link_bits)
    return _LAST[key, link_bits]


def _background_load(scenario: Scenario, link_bits: float | None) -> dict[str, BackgroundLoad]:
    config = scenario.radio
    assert isinstance(config, LteRadioConfig)
    n_cells = scenario.cell.sites * scenario.cell.sectors
    fl_cells = np.ones(n_cells, dtype=bool)
    if scenario.cell.device_sites == "centre" and n_cells > 1:
        fl_cells[:] = False
        fl_cells[: scenario.cell.sectors] = True  # the centre site's sectors
    demands = _demands(scenario, n_cells)
    out: dict[str, BackgroundLoad] = {}
    system: RadioSystem | None = None
    users = None
    for d in (UL, DL):
        demand_of = demands[d]
        keys, files = demand_of.keys, demand_of.files
        saturated = bool(np.isinf(demand_of.reserved).any())
        reserved = np.minimum(demand_of.reserved, 1.0)
        idle = files is None and not reserved.any() and not demand_of.always_busy
        if idle and link_bits is None:
            zeros = np.zeros(n_cells)
            out[_LONG[d]] = BackgroundLoad(_LONG[d], zeros, zeros, zeros, fl_cells, keys, None)
            continue
        if system is None:
            system = _system(scenario)
            users = _drop(system, None if _symmetric(scenario) else fl_cells)
        assert users is not None
        solution, serving = _solve(system, users, d, demand_of, reserved, link_bits)
        capacity = None
        if files is not None:
            per_bit = solution.rb_seconds_per_bit
            mine = fl_cells[serving] & (per_bit > 0)
            capacity = float(system.n_rb[d] / np.mean(per_bit[mine])) if mine.any() else 0.0
        demand = np.where(saturated, math.inf, solution.demand)
        worst = np.where(saturated, math.inf, solution.worst_case)
        fl_per_bit = None
        probe = solution.probe_rb_seconds_per_bit
        if probe is not None:  # alike cells pool their users; else the FL devices' cells'
            mine = fl_cells[serving] | _symmetric(scenario)
            fl_per_bit = probe[mine & (probe > 0)]
        out[_LONG[d]] = BackgroundLoad(
            _LONG[d],
            solution.expected,
            demand,
            worst,
            fl_cells,
            keys,
            capacity,
            fl_per_bit,
            min(system.rb_cap[d], float(system.n_rb[d])),
        )
    return out


def uplink_power_per_rb_db(
    system: RadioSystem, coupling_loss_db: np.ndarray, rbs: np.ndarray
) -> np.ndarray:
    """A device's uplink transmit power per RB (dBm) when its transfer holds ``rbs`` RBs,
    as the radio transmits it: the open-loop power per RB (:meth:`RadioSystem.ul_power_db`,
    TS 36.213 Sec. 5.1.1.1) up to its power limit ``M*`` RBs, then ``P_CMAX`` spread over
    the RBs held (:func:`channel_models.power_control.power_drop_db`; no limit under
    ``fixed_per_rb``)."""
    power_db = np.asarray(system.ul_power_db(coupling_loss_db), dtype=float)
    return power_db - power_drop_db(rbs, system.ul_limit_rb(power_db))


# -- the pieces --------------------------------------------------------------------------

_Files = tuple[float, float, float]  # arrival rate per cell (1/s), mean size (bit), RB cap


def _demands(scenario: Scenario, n_cells: int) -> dict[str, _Demand]:
    """Per direction, what its sources ask of every cell."""
    config = scenario.radio
    assert isinstance(config, LteRadioConfig)
    out = {}
    for d in (UL, DL):
        link = config.uplink if d == UL else config.downlink
        offered, reserved, keys, busy = 0.0, 0.0, [], False
        rate_hz = bits = 0.0
        cap = float(link.flow_rb_cap)
        for index, source in enumerate(scenario.traffic.sources):
            if source.direction != _LONG[d]:
                continue
            key = f"traffic.sources.{index}"
            if isinstance(source, ConstantLoadSource):
                reserved += source.load_fraction
                keys.append(f"{key}.load_fraction")
            elif isinstance(source, FullBufferSource):
                # They keep every cell busy; under fifo with caps covering the RBs they
                # take them all, under sharing FL transfers get their share beside them.
                flow_cap = source.rb_per_flow or link.rb_count
                fifo = link.scheduler == "fifo" and source.users * flow_cap >= link.rb_count
                reserved += math.inf if fifo else 0.0
                busy = True
                keys.append(f"{key}.users")
            elif isinstance(source, FtpSource):
                size = source.file_size_bits.expected()
                offered += source.arrival_rate_hz * size / link.rb_count
                bits = (bits * rate_hz + size * source.arrival_rate_hz) / (
                    rate_hz + source.arrival_rate_hz
                )
                rate_hz += source.arrival_rate_hz
                cap = min(cap, float(source.rb_per_flow or link.rb_count))
                keys.append(f"{key}.arrival_rate_hz")
        files = (rate_hz, bits, cap) if rate_hz > 0 else None
        out[d] = _Demand(
            np.full(n_cells, offered), np.full(n_cells, reserved), tuple(keys), files, busy
        )
    return out


@dataclass(frozen=True)
class _Demand:
    """One direction's sources: offered bit/s per RB, reserved share (inf: saturating
    full-buffer users), keys, the files' rate, mean size and RB cap (None without FTP
    sources), and whether full-buffer users keep every cell busy."""

    offered: np.ndarray
    reserved: np.ndarray
    keys: tuple[str, ...]
    files: _Files | None
    always_busy: bool


def _system(scenario: Scenario) -> RadioSystem:
    from netfl.registry import channel_models

    config = scenario.radio
    assert isinstance(config, LteRadioConfig)
    return RadioSystem(scenario, channel_models().load(config.channel_model))


def _symmetric(scenario: Scenario) -> bool:
    """Whether every cell is alike (one site, or wrap-around: each cell sees the same
    rings of neighbours), so that all cells share one load and pool their users."""
    cell = scenario.cell
    return cell.sites * cell.sectors == 1 or bool(cell.wrap_around)


def _drop(system: RadioSystem, fl_cells: np.ndarray | None) -> _Dropped:
    """Users over the layout, and more in the centre site where only its cells hold FL
    devices (``fl_cells``; None: the cells are alike and pool their users)."""
    rng = np.random.default_rng(PLANNING_SEED)
    placements = [drop_users(system, max(USERS_PER_CELL * system.n_cells, MIN_USERS), rng)]
    if fl_cells is not None and not fl_cells.all():
        placements.append(drop_users(system, USERS_PER_FL_CELL * int(fl_cells.sum()), rng, 0))
    gains = [system.gains(p, rng, rng, rng) for p in placements]
    gain_db = np.concatenate([g.coupling_gain_db for g in gains])
    serving = np.concatenate([g.serving_cell for g in gains])
    classes = np.zeros(system.n_cells, dtype=np.int64) if fl_cells is None else None
    return _Dropped(serving, gain_db, classes)


@dataclass(frozen=True)
class _Dropped:
    serving: np.ndarray
    gain_db: np.ndarray
    classes: np.ndarray | None

    @functools.cached_property
    def loss_db(self) -> np.ndarray:
        return -self.gain_db[np.arange(len(self.serving)), self.serving]

    @functools.cached_property
    def gain_mw(self) -> np.ndarray:
        return db_to_mw(self.gain_db)

    def every(self, step: int) -> _Dropped:
        """Every ``step``-th user (a smaller sample of the same drop)."""
        return _Dropped(self.serving[::step], self.gain_db[::step], self.classes)


def _solve(
    system: RadioSystem,
    users: _Dropped,
    d: str,
    demand: _Demand,
    reserved: np.ndarray,
    link_bits: float | None,
) -> tuple[LoadSolution, np.ndarray]:
    """The operating point over the users with coverage in ``d``, and their cells."""
    if d == DL:
        users = users.every(DOWNLINK_EVERY)
    loss = users.loss_db
    if d == UL:
        power_db = uplink_power_per_rb_db(system, loss, np.full(len(loss), system.n_rb[d]))
    else:
        power_db = np.full(len(loss), system.dl_power_db)
    snr_db = power_db - loss - system.noise_db[d]
    covered = system.rate_per_rb(d, snr_db) > 0
    loss = loss[covered]
    cell_users = CellUsers(users.serving[covered], users.gain_mw[covered], users.classes)
    if d == UL:

        def power_mw(rbs: np.ndarray) -> np.ndarray:
            return db_to_mw(uplink_power_per_rb_db(system, loss, rbs))

    else:
        dl_mw = float(db_to_mw(system.dl_power_db))

        def power_mw(rbs: np.ndarray) -> np.ndarray:
            return np.full(np.shape(rbs), dl_mw)

    files = demand.files
    rate_hz, bits, cap = files if files is not None else (0.0, 0.0, system.rb_cap[d])
    direction = Direction(
        offered=demand.offered,
        reserved=reserved,
        power_mw=power_mw,
        noise_mw=float(db_to_mw(system.noise_db[d])),
        rates=RateTable.of(lambda sinr_db: system.rate_per_rb(d, sinr_db)),
        n_rb=float(system.n_rb[d]),
        rb_cap=min(cap, float(system.n_rb[d])),
        uplink=d == UL,
        arrival_rate_hz=rate_hz,
        file_bits=bits,
        follow=getattr(system.config, "update_interval_s", None) is not None,
        always_busy=demand.always_busy,
    )
    rng = np.random.default_rng(PLANNING_SEED)
    solution = solve_load(cell_users, direction, states=STATES, rng=rng, probe_bits=link_bits)
    return solution, cell_users.serving
