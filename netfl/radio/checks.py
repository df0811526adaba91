"""Scenario checks for the radio that one config field cannot express.

Called from :func:`netfl.validation.scenario_problems`. Each problem names the key to fix:
a path-loss model outside its validity (frequency, distances, the LOS breakpoint with a
1 m UE), background load at or above a direction's capacity where the cells settle (an
error without a deadline or time budget, since uploads may then never finish; a
:class:`RadioWarning` otherwise), and block fading under a rate mapping with a floor
without a deadline.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from channel_models.protocol import ChannelModel
from channel_models.tr38901 import ThreeGppModel
from netfl.config import Scenario
from netfl.config.cell import CellConfig
from netfl.config.mobility import MEASURED_CELLS_MINIMUM
from netfl.config.radio import RB_BANDWIDTH_HZ, LteRadioConfig
from netfl.errors import Problem, RadioWarning, ScenarioError
from netfl.map.layout import layout_from_config
from netfl.radio.link import rate_mapping

_KEYS = {
    "frequency": "radio.carrier_frequency_hz",
    "ue_height": "cell.ue_height_m",
    "bs_height": "cell.bs_height_m",
}


def radio_problems(scenario: Scenario) -> list[Problem]:
    """Problems of the ``radio``/``cell``/``traffic`` sections (empty if fine)."""
    config = scenario.radio
    moving = [i for i, g in enumerate(scenario.devices.groups) if g.mobility.model != "static"]
    if not isinstance(config, LteRadioConfig):
        if scenario.traffic.sources:
            return [Problem("traffic.sources", "background traffic needs radio.model: lte")]
        if moving:
            return [
                Problem(
                    f"devices.groups.{moving[0]}.mobility",
                    "moving devices need a radio with a layout (radio.model: lte or nr);"
                    " the fixed-rate radio has no positions to move through",
                )
            ]
        return []
    from netfl.registry import channel_models

    registry = channel_models()
    if config.channel_model not in registry:
        return [Problem("radio.channel_model", registry.unknown_message(config.channel_model))]
    try:
        channel = registry.load(config.channel_model)
    except (ValueError, KeyError) as exc:
        return [Problem("radio.channel_model", str(exc))]
    if not isinstance(channel, ChannelModel):
        return [
            Problem(
                "radio.channel_model",
                f"'{config.channel_model}' is not a path-loss model (a rate mapping?): it"
                " lacks one of the methods of channel_models.protocol.ChannelModel",
            )
        ]
    c = scenario.cell
    if c.indoor_fraction > 0 and not isinstance(channel, ThreeGppModel):
        return [
            Problem(
                "cell.indoor_fraction",
                f"indoor devices sit on floors at several heights, which {config.channel_model}"
                " (one device height) cannot take: use a TR 38.901 or TR 36.873 model"
                " (tr38901_umi, tr36873_umi, ...) or indoor_fraction: 0",
            )
        ]
    found = channel.problems(config.carrier_frequency_hz, c.bs_height_m, c.ue_height_m)
    problems = [
        Problem(_KEYS.get(what, "radio.channel_model"), message) for what, message in found.items()
    ]
    if config.out_of_range == "refuse":
        problems += _distance_problems(scenario, config.channel_model, channel)
    if not problems and moving:
        problems += _mobility_problems(scenario, channel, moving)
    if not problems:
        problems += _load_problems(scenario) + _block_fading_problems(scenario)
    return problems


def _mobility_problems(
    scenario: Scenario, channel: ChannelModel, moving: list[int]
) -> list[Problem]:
    """What moving devices need: a radio update that ticks, a path-loss model whose
    environment gives the decorrelation distances, and models the layout can hold (a
    road on it, wrap-around for wrapping, a trajectory file that reads)."""
    from netfl.radio.motion import build_population
    from netfl.rng import Streams

    config = scenario.radio
    assert isinstance(config, LteRadioConfig)
    key = f"devices.groups.{moving[0]}.mobility"
    if not config.update_interval_s:
        return [
            Problem(
                "radio.update_interval_s",
                f"{key} moves devices at each radio update: give a positive interval"
                " (0.1 s: the default)",
            )
        ]
    problems = _measurement_problems(scenario, config.update_interval_s)
    if problems:
        return problems
    if getattr(channel, "environment", None) not in ("umi", "uma", "rma"):
        return [
            Problem(
                "radio.channel_model",
                f"{key}: moving devices need a model with a 3GPP/ITU environment (umi, uma)"
                " for their shadowing and LOS decorrelation distances",
            )
        ]
    layout = layout_from_config(scenario.cell)
    xy = np.repeat(layout.site_xy_m[:1], scenario.devices.n_clients, axis=0)
    try:
        build_population(scenario, layout, xy, Streams(scenario.seed))
    except ScenarioError as exc:
        return exc.problems
    return []


def _measurement_problems(scenario: Scenario, update_interval_s: float) -> list[Problem]:
    """A handover measurement period the radio update can take and the time-to-trigger can
    count, and a measured-cell count the layout has (docs/mobility.md, "Handover")."""
    config = scenario.radio
    assert isinstance(config, LteRadioConfig)
    handover, key = config.handover, "radio.handover"
    period, ttt = handover.measurement_period_s, handover.time_to_trigger_s
    if period < update_interval_s - 1e-12:
        return [
            Problem(
                f"{key}.measurement_period_s",
                f"{period:g} s is shorter than radio.update_interval_s ({update_interval_s:g} s):"
                " a device measures at radio updates; give at least the update interval",
            )
        ]
    if 0 < ttt < period - 1e-12:
        return [
            Problem(
                f"{key}.measurement_period_s",
                f"{period:g} s is longer than time_to_trigger_s ({ttt:g} s), which a device"
                " counts in measurement periods: give at most the time-to-trigger (and"
                " radio.update_interval_s at most that)",
            )
        ]
    cells = scenario.cell.sites * scenario.cell.sectors
    measured = handover.measured_cells
    if measured > max(cells, MEASURED_CELLS_MINIMUM):
        return [
            Problem(
                f"{key}.measured_cells",
                f"{measured} is more than the layout's {cells} cells (cell.sites x cell.sectors)",
            )
        ]
    return []


def layout_distance_range_m(cell: CellConfig) -> tuple[float, float]:
    """The shortest and longest device-to-site distance of a layout: the devices' minimum
    distance to their own site, and the farthest point of any site's hexagon from any site
    (its nearest image under wrap-around)."""
    layout = layout_from_config(cell)
    angles = np.radians(30.0 + 60.0 * np.arange(6))
    corners = np.column_stack([np.cos(angles), np.sin(angles)]) * cell.radius_m
    points = (layout.site_xy_m[:, None, :] + corners[None, :, :]).reshape(-1, 2)
    offsets = layout.site_offsets_m(points)
    return cell.min_distance_m, float(np.hypot(offsets[..., 0], offsets[..., 1]).max())


def _distance_problems(scenario: Scenario, name: str, channel: ChannelModel) -> list[Problem]:
    low, high = channel.distance_range_m()
    c = scenario.cell
    hint = "; or set radio.out_of_range: clip to clip distances to the valid range"
    nearest, farthest = layout_distance_range_m(c)
    problems = []
    if farthest > high + 1e-9:
        where = "the BS" if c.sites == 1 else "the farthest site they hear"
        problems.append(
            Problem(
                "cell.radius_m" if c.sites == 1 else "cell.inter_site_distance_m",
                f"devices up to {farthest:.0f} m from {where} are beyond"
                f" {name}'s validity ({high:g} m){hint}",
            )
        )
    if nearest < low - 1e-9:
        problems.append(
            Problem(
                "cell.min_distance_m",
                f"{nearest:g} m is below the path-loss model's validity ({low:g} m){hint}",
            )
        )
    return problems


def _block_fading_problems(scenario: Scenario) -> list[Problem]:
    """Under ``rayleigh_block`` one fade holds for a whole transfer: a mapping with a lowest
    MCS or CQI (``lte_tbs``, ``lte_cqi``, ``nr_cqi``) gives a deep fade the rate 0, and a
    round without a deadline or a time budget then never ends (issue 26)."""
    config, fl = scenario.radio, scenario.fl
    assert isinstance(config, LteRadioConfig)
    if config.fast_fading != "rayleigh_block" or {fl.deadline_s, fl.time_budget_s} != {None}:
        return []
    floor = any(
        float(rate_mapping(config, d).rate_bps(np.array([1e-6]), RB_BANDWIDTH_HZ)[0]) <= 0
        for d in ("ul", "dl")
    )
    if not floor:
        return []
    return [
        Problem(
            "radio.fast_fading",
            "rayleigh_block can fade a transfer below the rate mapping's lowest MCS (rate 0)"
            " for its whole duration, and then the round never ends: set fl.deadline_s or"
            " fl.time_budget_s, use fast_fading: rayleigh, or a mapping without a floor"
            " (shannon_with_loss)",
        )
    ]


def _load_problems(scenario: Scenario) -> list[Problem]:
    """A direction whose cells that hold FL devices are overloaded at the operating point
    (:mod:`netfl.radio.background_load`): an error without a deadline or time budget (FL
    transfers may never finish), a warning otherwise. The worst case (every other cell at
    full load) is only said beside it: cells do not settle there."""
    if not scenario.traffic.sources:
        return []
    from netfl.radio.background_load import background_load

    problems = []
    stops = scenario.fl.deadline_s is not None or scenario.fl.time_budget_s is not None
    for direction, load in background_load(scenario).items():
        demand = load.over_fl_cells(load.demand)
        if demand < 1.0:
            continue
        worst = load.over_fl_cells(load.worst_case)
        message = (
            f"background load in the {direction} is {_share(demand)} of its capacity where it"
            f" settles ({_share(worst)} with every other cell at full load): FL transfers may"
            f" never finish"
        )
        if not stops:
            problems.append(
                Problem(load.keys[-1], message + "; set fl.deadline_s (or fl.time_budget_s)")
            )
        else:
            warnings.warn(
                f"{load.keys[-1]}: {message} (rounds end at the deadline)",
                RadioWarning,
                stacklevel=2,
            )
    return problems


def _share(fraction: float) -> str:
    return "all (saturating full-buffer users)" if math.isinf(fraction) else f"{fraction:.0%}"
