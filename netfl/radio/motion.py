"""Moving devices in the radio update: positions, their channels, handover.

When some device group moves (``devices.groups.N.mobility``), the radio update
(:mod:`netfl.radio.update`) ticks every ``radio.update_interval_s`` and calls
:meth:`Motion.step`, one vectorised pass over all devices (no SimPy process per device):

1. **positions** advance (:mod:`netfl.mobility`: every group's model, its own stream);
2. **channels follow**: for the devices that moved, the LOS state of each (device, site)
   link and its shadowing move along the path (:mod:`netfl.radio.shadowing`: spatially
   consistent LOS, AR(1) shadowing with the TR 38.901 Table 7.5-6 decorrelation
   distances; a link whose LOS state flips draws a new shadowing), and their coupling gains
   to every cell are re-evaluated from the new geometry (:func:`netfl.radio.propagation.
   coupling_gains`); their links in flight take the new gains (:meth:`Cells.follow`);
3. **handover** (:mod:`netfl.radio.handover`): layer-3 filtered RSRP, Event A3 with its
   time-to-trigger, execution with an interruption during which the device's transfers
   pause and after which they continue in the target cell, radio link failure when the
   downlink SINR stays below Qout for T310 (the transfers are lost; the device is attached
   again to its strongest cell ``reestablishment_s`` later).

Every handover, failure and re-attachment is a timeline row (kinds ``handover``,
``radio_link_failure``, ``reattach``), and the moving devices' positions are sampled every
``output.trajectory_every_s`` (kind ``position``, columns ``x_m``, ``y_m``). Static devices
are never touched: their links stay exactly as the drop made them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from netfl.config import Scenario
from netfl.config.mobility import StaticMobility
from netfl.errors import ScenarioError
from netfl.map.layout import Layout
from netfl.mobility.base import Mobility
from netfl.mobility.build import Population, build_mobility
from netfl.mobility.static import StaticModel
from netfl.radio.cells import DL, Cells, db_to_mw
from netfl.radio.cellular import CellularNetwork
from netfl.radio.handover import HandoverState, StepEvents
from netfl.radio.propagation import (
    DeviceHeights,
    LargeScaleState,
    coupling_gains,
    shadowing_sigma_db,
    site_geometry,
)
from netfl.radio.shadowing import (
    LOS_DECORRELATION_M,
    CorrelatedLosState,
    CorrelatedShadowing,
    decorrelation_distance_m,
)
from netfl.radio.system import Placement, RadioSystem
from netfl.rng import Streams


def moving_groups(scenario: Scenario) -> list[int]:
    """Indices of the device groups that move."""
    return [
        i
        for i, group in enumerate(scenario.devices.groups)
        if not isinstance(group.mobility, StaticMobility)
    ]


def moving_rows(scenario: Scenario) -> np.ndarray:
    """The moving devices (rows of the devices' arrays), in group order."""
    moving, start = [], 0
    for group in scenario.devices.groups:
        if not isinstance(group.mobility, StaticMobility):
            moving.append(np.arange(start, start + group.count))
        start += group.count
    return np.concatenate(moving) if moving else np.empty(0, dtype=np.int64)


def build_population(
    scenario: Scenario, layout: Layout, xy_m: np.ndarray, streams: Streams
) -> Population:
    """Every group's mobility model from its drop positions ``xy_m`` (a moving group from
    its own stream ``devices.<g>.mobility``); the models' positions at t = 0 are where the
    devices' links are first drawn (a road places its vehicles on the road)."""
    models: list[Mobility] = []
    start = 0
    for i, group in enumerate(scenario.devices.groups):
        rows = slice(start, start + group.count)
        start += group.count
        if isinstance(group.mobility, StaticMobility):
            models.append(StaticModel(xy_m[rows]))
            continue
        models.append(
            build_mobility(
                group.mobility,
                layout,
                xy_m[rows],
                streams.get(f"devices.{i}.mobility"),
                first_device=rows.start,
                key=f"devices.groups.{i}.mobility",
            )
        )
    return Population(models)


class Motion:
    """The moving devices of a network, advanced at each radio update (module doc)."""

    def __init__(
        self,
        scenario: Scenario,
        system: RadioSystem,
        placement: Placement,
        population: Population,
        state: LargeScaleState,
        network: CellularNetwork,
        cells: Cells,
        streams: Streams,
        timeline: Any,
    ) -> None:
        self.system, self.network, self.cells, self.timeline = system, network, cells, timeline
        self.heights = placement.heights
        layout = system.layout
        self.population, self.rows = population, moving_rows(scenario)
        #: The moving devices' rows as a slice when they are contiguous (every device
        #: moves, or one block of groups): their gains are then read without a copy.
        self._block = _as_slice(self.rows)
        self.xy_m = placement.xy_m.copy()
        env = system.environment
        kind = _environment_kind(env.model)
        rows = self.rows
        self._heights = _subset(placement.heights, rows)
        geometry = site_geometry(layout, self.xy_m[rows], self._heights, env)
        self.p_los, self._image = geometry.p_los, geometry.image
        self.los_state = CorrelatedLosState(
            state.los_uniform[rows], LOS_DECORRELATION_M[kind], streams.get("radio.los_path")
        )
        los = self.los_state.uniform < self.p_los
        self._kind = kind
        self.shadowing = CorrelatedShadowing(
            shadowing_sigma_db(env, los, self._heights),
            decorrelation_distance_m(kind, los, self._heights.indoor),
            streams.get("radio.shadowing_path"),
            initial_db=state.shadowing_db[rows],
        )
        self.los = los
        self.o2i_db = state.o2i_db[rows]
        handover = scenario.radio.handover  # type: ignore[union-attr]
        self.handover = HandoverState(len(rows), network.devices.serving[rows].copy(), handover)
        self.interruption_s = handover.interruption_s
        self.sample_every_s = scenario.output.trajectory_every_s
        self._next_sample_s = 0.0
        #: A device's channel is re-evaluated once it has moved this far since the last time.
        self.step_m = scenario.radio.channel_step_m  # type: ignore[union-attr]
        self.pending_m = np.zeros(len(self.rows))
        #: The moving devices' coupling gains in mW, kept with ``gain_db`` (only _follow
        #: changes them): the handover's SINR needs all of them at every update, and
        #: converting all of them each tick made a moving run 1.09x slower (mobility_bench).
        self._gain_mw = db_to_mw(network.devices.gain_db[rows])

    @property
    def speed_mps(self) -> np.ndarray:
        """Every device's current speed (0 for static devices)."""
        return self.population.speed_mps

    def step(self, now_s: float, dt_s: float) -> None:
        """Advance every moving device by ``dt_s`` to ``now_s`` (module doc)."""
        move = self.population.advance(dt_s)
        self.xy_m = move.xy_m
        self.pending_m += move.moved_m[self.rows]
        due = np.flatnonzero(self.pending_m >= self.step_m)
        if len(due):
            self._follow(due)
        self._hand_over(now_s, dt_s)
        if self.sample_every_s is not None and now_s >= self._next_sample_s:
            self._sample(now_s)
            self._next_sample_s = now_s + self.sample_every_s

    def _follow(self, due: np.ndarray) -> None:
        """The LOS states, shadowing and coupling gains of the moving devices ``due`` (their
        indices among the moving ones) at their new places."""
        system, env = self.system, self.system.environment
        rows = self.rows[due]
        moved = self.pending_m[due]
        self.pending_m[due] = 0.0
        heights = _subset(self._heights, due)
        geometry = site_geometry(system.layout, self.xy_m[rows], heights, env, self._image[due])
        self.p_los[due], self._image[due] = geometry.p_los, geometry.image
        los = self.los_state.advance_rows(due, moved, geometry.p_los)
        device, site = np.nonzero(los != self.los[due])  # links whose LOS state flipped
        if len(device):
            flipped = los[device, site][:, None]
            at = _subset(heights, device)
            self.shadowing.redraw_links(
                due[device],
                site,
                shadowing_sigma_db(env, flipped, at)[:, 0],
                decorrelation_distance_m(self._kind, flipped, at.indoor)[:, 0],
            )
        self.los[due] = los
        shadow = self.shadowing.advance_rows(due, moved)
        if not env.shadowing:
            shadow = np.zeros_like(shadow)
        coupling, _ = coupling_gains(
            system.layout, geometry, heights, env, los, shadow, self.o2i_db[due]
        )
        devices = self.network.devices
        devices.gain_db[rows] = coupling
        self._gain_mw[due] = db_to_mw(coupling)
        serving = devices.serving[rows]
        devices.ul_power_db[rows] = system.ul_power_db(-coupling[np.arange(len(rows)), serving])
        self.cells.follow(rows, devices.gain_db, devices.ul_power_db)

    def _hand_over(self, now_s: float, dt_s: float) -> None:
        devices = self.network.devices
        gain_db = devices.gain_db[self._block]
        rsrp = self.system.dl_power_db + gain_db
        events = self.handover.step(now_s, dt_s, rsrp, self._dl_sinr_db(gain_db))
        self._apply(events)

    def _dl_sinr_db(self, gain_db: np.ndarray) -> np.ndarray:
        """The moving devices' downlink SINR from their serving cells under the load now."""
        serving = self.network.devices.serving[self._block]
        mw = self._gain_mw
        own = mw[np.arange(len(mw)), serving]
        occupancy = self.cells.occupancy[DL]
        seen = np.maximum(mw @ occupancy - own * occupancy[serving], 0.0)
        interference = self.cells.dl_power_mw * seen
        signal = self.system.dl_power_db + gain_db[np.arange(len(mw)), serving]
        return np.asarray(self.system.sinr_db(DL, signal, interference))

    def _apply(self, events: StepEvents) -> None:
        rows, record = self.rows, self.timeline.record
        h = events.handovers
        if len(h.device):  # a step's handovers are at its time, with the same interruption
            devices = rows[h.device]
            t_s, end_s = float(h.t_s[0]), float(h.interruption_end_s[0])
            self.network.hand_over(devices, h.target, end_s)
            self.timeline.record_rows(
                t_s,
                "handover",
                devices.tolist(),
                duration_s=(h.interruption_end_s - h.t_s).tolist(),
                cell=h.target.tolist(),
                source_cell=h.source.tolist(),
                ping_pong=h.ping_pong.tolist(),
            )
        f = events.failures
        for i, cell, t_s in zip(f.device.tolist(), f.cell.tolist(), f.t_s.tolist(), strict=True):
            device = int(rows[i])
            self.network.lose_link(device)
            record(t_s, "radio_link_failure", client=device, cell=cell)
        a = events.reattached
        for i, cell, t_s in zip(a.device.tolist(), a.cell.tolist(), a.t_s.tolist(), strict=True):
            device = int(rows[i])
            self.network.attach(device, cell)
            record(t_s, "reattach", client=device, cell=cell)

    def _sample(self, now_s: float) -> None:
        rows = self.rows
        xy = self.xy_m[rows]
        for device, x, y in zip(rows.tolist(), xy[:, 0].tolist(), xy[:, 1].tolist(), strict=True):
            self.timeline.record(now_s, "position", client=device, x_m=x, y_m=y)

    def client_totals(self, n: int) -> dict[str, np.ndarray]:
        """Per-client handover counters for ``clients.parquet`` (0 for static devices)."""
        out = {}
        for name, values in (
            ("n_handovers", self.handover.n_handovers),
            ("n_ping_pongs", self.handover.n_ping_pongs),
            ("n_radio_link_failures", self.handover.n_failures),
        ):
            column = np.zeros(n, dtype=np.int64)
            column[self.rows] = values
            out[name] = column
        return out


def _as_slice(rows: np.ndarray) -> slice | np.ndarray:
    """``rows`` (ascending) as a slice when they are contiguous, else unchanged."""
    if len(rows) and rows[-1] - rows[0] + 1 == len(rows):
        return slice(int(rows[0]), int(rows[-1]) + 1)
    return rows


def _subset(heights: DeviceHeights, rows: np.ndarray) -> DeviceHeights:
    return DeviceHeights(
        heights.height_m[rows], heights.indoor[rows], heights.indoor_distance_m[rows]
    )


def _environment_kind(model: Any) -> str:
    """``umi``/``uma`` (the decorrelation tables' keys) of a path-loss model."""
    kind = getattr(model, "environment", None)
    if kind not in ("umi", "uma", "rma"):
        raise ScenarioError.single(
            "radio.channel_model",
            "moving devices need a path-loss model with a 3GPP/ITU environment (umi, uma)"
            " for their decorrelation distances; this model has none",
        )
    return str(kind)
