"""Moving devices in the radio update: positions, their channels, handover.

When some device group moves (``devices.groups.N.mobility``), the radio update
(:mod:`netfl.radio.update`) ticks every ``radio.update_interval_s`` and calls
:meth:`Motion.step`, one vectorised pass over all devices (no SimPy process per device):

1. **positions** advance (:mod:`netfl.mobility`: every group's model, its own stream);
2. **channels follow**, at each handover measurement (every ``measurement_period_s``):
   once a device has moved ``radio.channel_step_m``, the (device, site) links of the cells
   it measures (:mod:`netfl.radio.measurement`: its serving cell and the strongest others)
   are re-evaluated at its new place (between measurements a device's channel stays as it
   was, its position moves on, and the links in flight still follow the interference at
   every update): their LOS
   state and shadowing move along its path (:mod:`netfl.radio.shadowing`: spatially
   consistent LOS, AR(1) shadowing with the TR 38.901 Table 7.5-6 decorrelation distances,
   correlated between sites; a link whose LOS state flips draws a new shadowing) and their
   coupling gains follow (:func:`netfl.radio.propagation.coupling_gains`). At each cell
   search (every 0.8 s) every link of a device that has moved is re-evaluated, so the
   gains to the cells it does not measure, which still interfere, lag by at most a search
   period. A link's processes move by all the distance since they last moved, so looking
   at a link rarely keeps its statistics exact. The links in flight take the new gains
   (:meth:`Cells.follow`);
3. **handover** (:mod:`netfl.radio.handover`): at each measurement period the layer-3
   filtered RSRP of the measured cells, Event A3 with its time-to-trigger counted in
   periods, execution with an interruption during which the device's transfers pause and
   after which they continue in the target cell; at the same measurements radio link
   failure when the downlink SINR (against every cell) stays below Qout for T310 (the
   transfers are lost; the device is attached again to its strongest cell
   ``reestablishment_s`` later).

Every handover, failure and re-attachment is a timeline row (kinds ``handover``,
``radio_link_failure``, ``reattach``), and the moving devices' positions are sampled every
``output.trajectory_every_s`` (kind ``position``, columns ``x_m``, ``y_m``). Static devices
are never touched: their links stay exactly as the drop made them. The moving devices'
channel state (LOS, shadowing, gains in mW, handover registers) is float32 where its
rounding stays far below 0.01 dB (docs/mobility.md measures it).
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
from netfl.radio.cells import DL, Cells
from netfl.radio.cellular import CellularNetwork
from netfl.radio.handover import HandoverState, Rsrp, StepEvents
from netfl.radio.measurement import FILTER_INPUT_PERIOD_S
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
    Links,
    decorrelation_distance_m,
)
from netfl.radio.system import Placement, RadioSystem
from netfl.rng import Streams

#: Links re-evaluated in one vectorised pass: bounds the pass's temporaries (about 400 B a
#: link) to about 25 MB whatever the population, as :data:`netfl.radio.propagation.
#: BLOCK_DEVICES` bounds the drop's.
BLOCK_LINKS = 65536


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
            state.los_uniform[rows],
            LOS_DECORRELATION_M[kind],
            streams.get("radio.los_path"),
            dtype=np.float32,
        )
        los = self.los_state.uniform < self.p_los
        self._kind = kind
        self.shadowing = CorrelatedShadowing(
            shadowing_sigma_db(env, los, self._heights),
            decorrelation_distance_m(kind, los, self._heights.indoor),
            streams.get("radio.shadowing_path"),
            initial_db=state.shadowing_db[rows],
            los=los,
            **_site_correlation(env, state, rows, kind),
            dtype=np.float32,
        )
        self.los = los
        self.o2i_db = state.o2i_db[rows]
        #: Moving devices are outdoors at one height (radio.system.drop_devices): their links
        #: take it once, not per link (what depends on the height alone is computed once).
        one = _one_height(self._heights, self.o2i_db)
        assert one is not None, "moving devices are outdoors at one height (drop_devices)"
        self._one_height = one
        handover = scenario.radio.handover  # type: ignore[union-attr]
        self.handover = HandoverState(
            len(rows),
            network.devices.serving[rows].copy(),
            handover,
            layout.n_cells,
            # TS 38.331: the filter coefficient assumes one L1 measurement period per input;
            # TS 36.331: 200 ms.
            filter_input_period_s=handover.measurement_period_s
            if scenario.radio.model == "nr"
            else FILTER_INPUT_PERIOD_S,
        )
        self.sample_every_s = scenario.output.trajectory_every_s
        self._next_sample_s = 0.0
        #: A device's measured links are re-evaluated once it has moved this far since
        #: they were; all its links, at the first cell search once it has moved as far.
        self.step_m = scenario.radio.channel_step_m  # type: ignore[union-attr]
        self.pending_m = np.zeros(len(self.rows))
        self.unsearched_m = np.zeros(len(self.rows))
        self.travelled_m = np.zeros(len(self.rows))
        self._unseen_m = np.zeros(len(self.rows))  # moved since the last measurement
        #: The moving devices' coupling gains in mW, kept with ``gain_db`` (only _follow
        #: changes them): the handover's SINR needs all of them at every update, and
        #: converting all of them each tick made a moving run 1.09x slower (mobility_bench).
        self._gain_mw = mw_of_db(network.devices.gain_db[rows])

    @property
    def speed_mps(self) -> np.ndarray:
        """Every device's current speed (0 for static devices)."""
        return self.population.speed_mps

    def step(self, now_s: float, dt_s: float) -> None:
        """Advance every moving device by ``dt_s`` to ``now_s`` (module doc)."""
        move = self.population.advance(dt_s)
        self.xy_m = move.xy_m
        moved = move.moved_m[self.rows]
        self._unseen_m += moved  # inf (a new vehicle) stays inf until the next measurement
        self.travelled_m += np.where(np.isfinite(moved), moved, 0.0)
        if self.handover.measurement_due(now_s):
            self._follow_measured(now_s)
        else:  # between measurements nothing is measured: no channel needs its gains
            self._apply(self.handover.step(now_s, self._rsrp(), self._sinr))
        if self.sample_every_s is not None and now_s >= self._next_sample_s:
            self._sample(now_s)
            self._next_sample_s = now_s + self.sample_every_s

    def _follow_measured(self, now_s: float) -> None:
        """A measurement: the channels of the devices that moved a channel step since
        theirs were re-evaluated (every site's at a cell search), then the handover."""
        moved, self._unseen_m = self._unseen_m, np.zeros(len(self.rows))
        self.los_state.move(slice(None), moved)
        self.shadowing.move(slice(None), moved)
        self.pending_m += moved
        self.unsearched_m += moved
        everything = np.empty(0, dtype=np.int64)
        if self.handover.search_due(now_s):
            everything = np.flatnonzero(self.unsearched_m >= self.step_m)
            self.unsearched_m[everything] = 0.0
            self.pending_m[everything] = 0.0
        measured = np.flatnonzero(self.pending_m >= self.step_m)
        self.pending_m[measured] = 0.0
        links = self._links(everything, measured)
        for start in range(0, len(links), BLOCK_LINKS):  # bounded temporaries
            self._follow(links.subset(slice(start, start + BLOCK_LINKS)))
        self._apply(self.handover.step(now_s, self._rsrp(), self._sinr, searched=everything))

    def _links(self, everything: np.ndarray, measured: np.ndarray) -> Links:
        """The links to re-evaluate: every site of the devices ``everything``, the sites of
        their measured cells for ``measured``."""
        layout = self.system.layout
        mask = np.zeros((len(self.rows), layout.n_sites), dtype=bool)
        if len(measured):
            cells = self.handover.measured_cells[measured]
            mask[measured[:, None], layout.cell_site[cells]] = True
        mask[everything] = True
        return Links.of(mask)

    def _follow(self, links: Links) -> None:
        """The LOS states, shadowing and coupling gains of the ``links`` (of the moving
        devices) at the devices' new places."""
        system, env, layout = self.system, self.system.environment, self.system.layout
        flat, device, site = links.flat, links.device, links.site
        rows = self.rows[device]
        heights, o2i_db = self._one_height, np.zeros(1)  # outdoors at one height
        image = self._image.reshape(-1)
        geometry = site_geometry(layout, self.xy_m[rows], heights, env, image[flat], sites=site)
        p_los = geometry.p_los[:, 0]
        self.p_los.reshape(-1)[flat], image[flat] = p_los, geometry.image[:, 0]
        los = self.los_state.advance_links(links, p_los)
        flipped = np.flatnonzero(los != self.los.reshape(-1)[flat])
        if len(flipped):
            state = los[flipped][:, None]
            self.shadowing.redraw_links(
                links.subset(flipped),
                shadowing_sigma_db(env, state, heights)[:, 0],
                decorrelation_distance_m(self._kind, state, heights.indoor)[:, 0],
                los=los[flipped],
            )
        self.los.reshape(-1)[flat] = los
        shadow = self.shadowing.advance_links(links)
        if not env.shadowing:
            shadow = np.zeros_like(shadow)
        coupling, _ = coupling_gains(
            layout, geometry, heights, env, los[:, None], shadow[:, None], o2i_db
        )
        cells = site[:, None] * layout.sectors + np.arange(layout.sectors)
        devices, n_cells = self.network.devices, layout.n_cells
        devices.gain_db.reshape(-1)[rows[:, None] * n_cells + cells] = coupling
        self._gain_mw.reshape(-1)[device[:, None] * n_cells + cells] = mw_of_db(coupling)
        first = np.ones(len(device), dtype=bool)
        first[1:] = device[1:] != device[:-1]
        moved = rows[first]
        serving = devices.serving[moved]
        devices.ul_power_db[moved] = system.ul_power_db(-devices.gain_db[moved, serving])
        self.cells.follow(moved, devices.gain_db, devices.ul_power_db)

    def _rsrp(self) -> Rsrp:
        """The moving devices' RSRP source: the BS's per-RB power + their gains now."""
        gain_db = self.network.devices.gain_db[self._block]
        power_db = self.system.dl_power_db

        def rsrp(devices: np.ndarray, cells: np.ndarray | None) -> np.ndarray:
            if cells is None:
                return power_db + gain_db[devices]
            flat = cells + devices[:, None] * gain_db.shape[1]
            return power_db + gain_db.reshape(-1)[flat]

        return rsrp

    def _sinr(self) -> np.ndarray:
        return self._dl_sinr_db(self.network.devices.gain_db[self._block])

    def _dl_sinr_db(self, gain_db: np.ndarray) -> np.ndarray:
        """The moving devices' downlink SINR from their serving cells under the load now."""
        serving = self.network.devices.serving[self._block]
        mw = self._gain_mw
        own = mw[np.arange(len(mw)), serving]
        occupancy = self.cells.occupancy[DL]
        seen = np.maximum(mw @ occupancy.astype(mw.dtype) - own * occupancy[serving], 0.0)
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
        """Per-client handover counters and distance travelled (m) for ``clients.parquet``
        (0 for static devices)."""
        out = {}
        for name, values in (
            ("n_handovers", self.handover.n_handovers),
            ("n_ping_pongs", self.handover.n_ping_pongs),
            ("n_radio_link_failures", self.handover.n_failures),
            ("travelled_m", self.travelled_m),
        ):
            column = np.zeros(n, dtype=values.dtype)
            column[self.rows] = values
            out[name] = column
        return out


def mw_of_db(db: np.ndarray) -> np.ndarray:
    """10^(dB/10) in float32, through exp (a fifth of float64 power's cost; the moving
    devices' gains in mW, to 1e-7 of their value)."""
    return np.exp(np.asarray(db, dtype=np.float32) * np.float32(np.log(10.0) / 10.0))


def _site_correlation(
    env: Any, state: LargeScaleState, rows: np.ndarray, kind: str
) -> dict[str, Any]:
    """The shadowing's common parts of the moving devices (none: sites independent)."""
    if state.shadowing_common_z is None:
        return {}
    d_cor = decorrelation_distance_m(kind, np.array([[True, False]]))  # LOS, NLOS: outdoors
    return {
        "site_correlation": env.site_correlation,
        "common_z": state.shadowing_common_z[rows],
        "common_d_cor_m": np.repeat(d_cor, len(rows), axis=0),
    }


def _as_slice(rows: np.ndarray) -> slice | np.ndarray:
    """``rows`` (ascending) as a slice when they are contiguous, else unchanged."""
    if len(rows) and rows[-1] - rows[0] + 1 == len(rows):
        return slice(int(rows[0]), int(rows[-1]) + 1)
    return rows


def _one_height(heights: DeviceHeights, o2i_db: np.ndarray) -> DeviceHeights | None:
    """The devices' common height as a one-device :class:`DeviceHeights` when they are all
    outdoors at one height without O2I loss (moving devices are:
    :func:`netfl.radio.system.drop_devices`), else None."""
    h = heights.height_m
    if not len(h) or heights.indoor.any() or np.any(h != h[0]) or np.any(o2i_db != 0):
        return None
    return DeviceHeights(h[:1], heights.indoor[:1], heights.indoor_distance_m[:1])


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
