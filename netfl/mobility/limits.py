"""What the mobility models can simulate in bounded time, checked at validation.

The radio update advances every moving device once each ``radio.update_interval_s``
(:mod:`netfl.radio.motion`). A model with legs walks, within one update, every leg that
ends inside it, one vectorised pass per leg (:class:`netfl.mobility.base.LegsAndPauses`):
its cost per update grows with the legs per update, without bound as legs shrink. So legs
shorter than an update on average are refused: ``random_direction``'s mean travel time,
and ``random_waypoint``'s mean leg, E[D] E[1/V] (E[D] the mean distance between two
points of the layout: Navidi & Camp 2004's leg). The schema already bounds what the
other models need (speeds within :data:`netfl.config.mobility.MAX_SPEED_MPS`, positions
within :data:`~netfl.config.mobility.MAX_COORDINATE_M`); constant velocity, Gauss-Markov
and trajectories cost the same per update whatever their parameters.

Two more checks of positions and time: a group's ``distance_m`` placing devices beyond
the layout is refused, and an update interval so long that moving devices jump (over a
second) is said in a warning.
"""

from __future__ import annotations

from netfl.config import Scenario
from netfl.config.dist import upper_reach
from netfl.config.mobility import RandomDirectionMobility, RandomWaypointMobility
from netfl.config.radio import LteRadioConfig
from netfl.errors import Problem
from netfl.map.geometry import SITE_RINGS
from netfl.map.layout import layout_from_config

#: An update interval past which moving devices are said to jump, s.
LONG_UPDATE_S = 1.0


def motion_problems(scenario: Scenario) -> list[Problem]:
    """Mobility settings that would not finish in bounded time, and placements beyond
    the layout (module doc); empty for the fixed-rate radio, which has no layout."""
    radio = scenario.radio
    if not isinstance(radio, LteRadioConfig):
        return []
    layout = layout_from_config(scenario.cell)
    rings = SITE_RINGS[layout.n_sites]
    diameter_m = 2 * (rings * layout.inter_site_distance_m + layout.site_radius_m)
    interval_s = radio.update_interval_s or 0.0
    problems = []
    for index, group in enumerate(scenario.devices.groups):
        key = f"devices.groups.{index}"
        if group.distance_m is not None and not upper_reach(group.distance_m) <= diameter_m:
            problems.append(
                Problem(
                    f"{key}.distance_m",
                    f"places devices up to {upper_reach(group.distance_m):.4g} m from their"
                    f" site, beyond the layout (it spans {diameter_m:.0f} m)",
                )
            )
        mobility = group.mobility
        if isinstance(mobility, RandomDirectionMobility) and interval_s > 0:
            travel_s = mobility.travel_s.expected()
            if travel_s < interval_s:
                problems.append(
                    Problem(
                        f"{key}.mobility.travel_s",
                        _short_legs(f"last {travel_s:.3g} s", travel_s, interval_s),
                    )
                )
        if isinstance(mobility, RandomWaypointMobility) and interval_s > 0:
            from netfl.mobility.draws import mean_inverse_speed
            from netfl.mobility.random_waypoint import mean_leg_length_m

            leg_s = mean_leg_length_m(layout) * mean_inverse_speed(mobility.speed_mps)
            if leg_s < interval_s:
                problems.append(
                    Problem(
                        f"{key}.mobility.speed_mps",
                        _short_legs(f"across the layout take {leg_s:.3g} s", leg_s, interval_s),
                    )
                )
    return problems


def _short_legs(legs: str, leg_s: float, interval_s: float) -> str:
    return (
        f"legs {legs} on average, shorter than radio.update_interval_s ({interval_s:g} s):"
        f" each update would walk about {interval_s / max(leg_s, 1e-300):.3g} legs of every"
        " device; make legs last at least one update"
    )


def motion_warnings(scenario: Scenario) -> list[tuple[str, str]]:
    """``(key, message)`` where moving devices advance in jumps: an update interval over
    :data:`LONG_UPDATE_S` (``radio.update_interval_s: 1e9`` left them standing)."""
    radio = scenario.radio
    moving = [g for g in scenario.devices.groups if g.mobility.model != "static"]
    if not isinstance(radio, LteRadioConfig) or not moving:
        return []
    interval_s = radio.update_interval_s or 0.0
    if interval_s <= LONG_UPDATE_S:
        return []
    return [
        (
            "radio.update_interval_s",
            f"moving devices advance, and handover and radio link failure are checked, only"
            f" every {interval_s:g} s: devices jump between updates and stand still for"
            f" runs shorter than that (the default is 0.1 s; TS 36.133 measures every"
            f" 0.2 s)",
        )
    ]
