"""Scenario checks for the radio that one config field cannot express.

Called from :func:`netfl.validation.scenario_problems`. Each problem names the key to fix:
a path-loss model outside its validity (frequency, distances, the LOS breakpoint with a
1 m UE), and background load at or above a direction's capacity (an error without a
deadline or time budget, since uploads may then never finish; a :class:`RadioWarning`
otherwise).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from channel_models.protocol import ChannelModel
from netfl.config import Scenario
from netfl.config.cell import CellConfig
from netfl.config.radio import LteRadioConfig
from netfl.config.traffic import ConstantLoadSource, FtpSource, FullBufferSource
from netfl.errors import Problem, RadioWarning

_KEYS = {
    "frequency": "radio.carrier_frequency_hz",
    "ue_height": "cell.ue_height_m",
    "bs_height": "cell.bs_height_m",
}


def radio_problems(scenario: Scenario) -> list[Problem]:
    """Problems of the ``radio``/``cell``/``traffic`` sections (empty if fine)."""
    config = scenario.radio
    if not isinstance(config, LteRadioConfig):
        if scenario.traffic.sources:
            return [Problem("traffic.sources", "background traffic needs radio.model: lte")]
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
    if c.multicell and config.model == "nr":
        return [Problem("radio.model", "nr supports a single cell for now; use model: lte")]
    if c.multicell:
        unsupported = _multicell_problems(scenario)
        if unsupported:
            return unsupported
    elif config.uplink.p0_dbm is not None:
        return [
            Problem(
                "radio.uplink.p0_dbm",
                "open-loop power control belongs to the multi-cell model (cell.sites,"
                " sectors, indoor_fraction); the single cell transmits tx_power_dbm",
            )
        ]
    found = channel.problems(config.carrier_frequency_hz, c.bs_height_m, c.ue_height_m)
    problems = [
        Problem(_KEYS.get(what, "radio.channel_model"), message) for what, message in found.items()
    ]
    if config.out_of_range == "refuse":
        check = _layout_distance_problems if c.multicell else _distance_problems
        problems += check(scenario, config.channel_model, channel)
    if not problems:
        problems += _load_problems(scenario)
    return problems


def _multicell_problems(scenario: Scenario) -> list[Problem]:
    """What the multi-cell model does not do (yet), each refused under its key."""
    config = scenario.radio
    assert isinstance(config, LteRadioConfig)
    why = "is not supported by the multi-cell model (cell.sites, sectors, indoor_fraction)"
    if config.model != "lte":
        return [
            Problem(
                "radio.model",
                f"{config.model} {why}: it schedules LTE resource blocks; use model: lte on a"
                " layout, or one NR cell",
            )
        ]
    problems = []
    if config.ul_interference_db:
        problems.append(
            Problem(
                "radio.ul_interference_db",
                "the multi-cell model computes uplink interference from the transfers in"
                " flight; leave ul_interference_db at 0",
            )
        )
    if config.fluctuation_eta is not None:
        problems.append(Problem("radio.fluctuation_eta", f"MAB-CS fluctuation {why}"))
    if config.fast_fading == "rayleigh_block":
        problems.append(Problem("radio.fast_fading", f"rayleigh_block {why}; use none or rayleigh"))
    if config.record_rb_allocations:
        problems.append(Problem("radio.record_rb_allocations", f"the RB log {why}"))
    for i, group in enumerate(scenario.devices.groups):
        if group.distance_m is not None:
            problems.append(
                Problem(
                    f"devices.groups.{i}.distance_m",
                    f"placing a group at a distance from 'the' BS {why}: devices spread"
                    " over the layout and each is served by its strongest cell",
                )
            )
    return problems


def _distance_problems(scenario: Scenario, name: str, channel: ChannelModel) -> list[Problem]:
    low, high = channel.distance_range_m()
    c = scenario.cell
    hint = "; or set radio.out_of_range: clip to clip distances to the valid range"
    problems = []
    if c.radius_m > high + 1e-9:
        problems.append(
            Problem(
                "cell.radius_m",
                f"devices up to {c.radius_m:g} m from the BS are beyond"
                f" {name}'s validity ({high:g} m){hint}",
            )
        )
    if c.min_distance_m < low - 1e-9:
        problems.append(
            Problem(
                "cell.min_distance_m",
                f"{c.min_distance_m:g} m is below the path-loss model's validity ({low:g} m){hint}",
            )
        )
    if c.interfering_rings > 0:
        farthest = (c.interfering_rings * math.sqrt(3.0) + 1.0) * c.radius_m
        if farthest > high + 1e-9:
            problems.append(
                Problem(
                    "cell.interfering_rings",
                    f"the farthest interfering BS is up to {farthest:.0f} m from a device,"
                    f" beyond the path-loss model's validity ({high:g} m){hint}",
                )
            )
    return problems


def farthest_site_m(cell: CellConfig) -> float:
    """The farthest a device of the layout can be from a site (2D, metres).

    Devices lie in their site's hexagon (circumradius R = ISD / sqrt(3)). Without
    wrap-around the farthest site is at most the largest site-to-site distance plus R
    away. With wrap-around (19 sites) each device sees the nearest of a site's images,
    which form a hexagonal lattice of spacing sqrt(19) ISD (netfl/radio/layout.py): no
    point is farther than the lattice's covering radius, sqrt(19 / 3) ISD, from one.
    """
    from netfl.radio.layout import layout_from_config

    layout = layout_from_config(cell)
    isd = layout.inter_site_distance_m
    if layout.wrap_around:
        return math.sqrt(19.0 / 3.0) * isd
    sites = layout.site_xy_m
    spread = np.hypot(*(sites[:, None, :] - sites[None, :, :]).transpose(2, 0, 1)).max()
    return float(spread) + layout.site_radius_m


def _layout_distance_problems(
    scenario: Scenario, name: str, channel: ChannelModel
) -> list[Problem]:
    """The multi-cell layout's distances against the path-loss model's validity: every
    device sees every site (the nearest image with wrap-around)."""
    low, high = channel.distance_range_m()
    c = scenario.cell
    hint = "; or set radio.out_of_range: clip to clip distances to the valid range"
    key = "cell.inter_site_distance_m" if c.inter_site_distance_m is not None else "cell.radius_m"
    farthest = farthest_site_m(c)
    problems = []
    if farthest > high + 1e-9:
        problems.append(
            Problem(
                key,
                f"devices of the {c.sites}-site layout are up to {farthest:g} m from a site,"
                f" beyond {name}'s validity ({high:g} m){hint}",
            )
        )
    if c.min_distance_m < low - 1e-9:
        problems.append(
            Problem(
                "cell.min_distance_m",
                f"{c.min_distance_m:g} m is below the path-loss model's validity ({low:g} m){hint}",
            )
        )
    return problems


def offered_load(scenario: Scenario) -> dict[str, tuple[float, list[str]]]:
    """Background load per direction as a fraction of its RBs, and the keys behind it.

    FTP Model 1 offers ``λ E[S] E[1/r]`` RB-seconds per second (``r``: the rate per RB of a
    background user with coverage, averaged over drops with a fixed stream; users without
    coverage are never drawn, see :class:`~netfl.radio.traffic.UserPool`); a constant load
    its fraction; full-buffer users saturate a ``fifo`` cell when their caps cover its RBs.
    """
    from netfl.radio.build import CellRadio

    config = scenario.radio
    assert isinstance(config, LteRadioConfig)
    load: dict[str, tuple[float, list[str]]] = {"uplink": (0.0, []), "downlink": (0.0, [])}
    radio: CellRadio | None = None
    # A fixed estimation stream: whether a scenario is overloaded must not depend on its seed.
    rng = np.random.default_rng(12345)
    for index, source in enumerate(scenario.traffic.sources):
        link = config.uplink if source.direction == "uplink" else config.downlink
        key = f"traffic.sources.{index}"
        if isinstance(source, ConstantLoadSource):
            share, key = source.load_fraction, f"{key}.load_fraction"
        elif isinstance(source, FtpSource):
            radio = radio or CellRadio(scenario)
            rates, _ = radio.user_draw(scenario, source.direction)(rng, 4000)
            covered = rates[rates > 0]
            size = float(np.mean(source.file_size_bits.sample(rng, 4000)))
            inverse = float(np.mean(1.0 / covered)) if covered.size else math.inf
            share = source.arrival_rate_hz * size * inverse / link.rb_count
            key = f"{key}.arrival_rate_hz"
        elif isinstance(source, FullBufferSource):
            cap = source.rb_per_flow or link.rb_count
            saturates = link.scheduler == "fifo" and source.users * cap >= link.rb_count
            share, key = (math.inf if saturates else 0.0), f"{key}.users"
        total, keys = load[source.direction]
        load[source.direction] = (total + share, [*keys, key])
    return load


def _load_problems(scenario: Scenario) -> list[Problem]:
    problems = []
    stops = scenario.fl.deadline_s is not None or scenario.fl.time_budget_s is not None
    for direction, (share, keys) in offered_load(scenario).items():
        if share < 1.0:
            continue
        message = (
            f"background load in the {direction} is {share:.0%} of its capacity: FL"
            f" transfers may never finish"
        )
        if not stops:
            problems.append(
                Problem(keys[-1], message + "; set fl.deadline_s (or fl.time_budget_s)")
            )
        else:
            warnings.warn(
                f"{keys[-1]}: {message} (rounds end at the deadline)", RadioWarning, stacklevel=2
            )
    return problems
