"""From a group's ``mobility`` section to its model, and all groups to one population.

:func:`build_mobility` elaborates one group: it takes the layout, the group's drop
positions and its own random stream (one ``SeedSequence.spawn`` child per group, so that
adding a moving group changes no other draw) and returns a
:class:`netfl.mobility.base.Mobility`. :class:`Population` advances every group in one
call, in group order, for the radio update: ``step = population.advance(dt_s)`` gives all
devices' positions and displacements, and ``population.moving`` is False when every group
is static (the update then skips mobility, shadowing and handover entirely).
"""

from __future__ import annotations

import numpy as np

from netfl.config.mobility import (
    ConstantVelocityMobility,
    GaussMarkovMobility,
    MobilityConfig,
    RandomDirectionMobility,
    RandomWaypointMobility,
    StaticMobility,
    TrajectoryMobility,
)
from netfl.errors import ScenarioError
from netfl.map.layout import Layout
from netfl.mobility.area import road_span_m
from netfl.mobility.base import Mobility, Step
from netfl.mobility.constant_velocity import ConstantVelocityModel
from netfl.mobility.draws import draw_speeds
from netfl.mobility.gauss_markov import GaussMarkovModel
from netfl.mobility.random_direction import RandomDirectionModel
from netfl.mobility.random_waypoint import RandomWaypointModel
from netfl.mobility.static import StaticModel
from netfl.mobility.trace_files import trajectory_model


def build_mobility(
    config: MobilityConfig,
    layout: Layout,
    xy_m: np.ndarray,
    rng: np.random.Generator,
    *,
    first_device: int = 0,
    key: str = "mobility",
) -> Mobility:
    """The model of one group of ``len(xy_m)`` devices (``xy_m`` their drop positions).

    ``key`` (for example ``devices.groups.1.mobility``) prefixes every error; a setting that
    the layout cannot hold (a road that misses it, ``at_edge: wrap`` without wrap-around) is
    refused with a :class:`ScenarioError` naming the key.
    """
    xy = np.array(xy_m, dtype=float).reshape(-1, 2)
    n = len(xy)
    if isinstance(config, StaticMobility):
        return StaticModel(xy)
    if isinstance(config, RandomWaypointMobility):
        return RandomWaypointModel(layout, n, config.speed_mps, config.pause_s, rng)
    if isinstance(config, RandomDirectionMobility):
        return RandomDirectionModel(
            layout, xy, config.speed_mps, config.travel_s, config.pause_s, rng
        )
    if isinstance(config, ConstantVelocityMobility):
        return _road(config, layout, n, rng, key)
    if isinstance(config, GaussMarkovMobility):
        mean_speed = draw_speeds(config.mean_speed_mps, rng, n, f"{key}.mean_speed_mps")
        if config.mean_direction_deg is None:
            mean_direction = rng.uniform(0.0, 2 * np.pi, n)
        else:
            mean_direction = np.full(n, np.radians(config.mean_direction_deg))
        return GaussMarkovModel(
            layout,
            xy,
            mean_speed,
            config.speed_std_mps,
            mean_direction,
            np.radians(config.direction_std_deg),
            config.alpha,
            config.alpha_interval_s,
            rng,
        )
    if isinstance(config, TrajectoryMobility):
        return trajectory_model(config, layout, first_device, n, key)
    raise TypeError(f"unknown mobility model {type(config).__name__}")  # pragma: no cover


def _road(
    config: ConstantVelocityMobility,
    layout: Layout,
    n: int,
    rng: np.random.Generator,
    key: str,
) -> ConstantVelocityModel:
    span = road_span_m(layout, config.start_m, config.heading_deg)
    if span is None:
        raise ScenarioError.single(
            f"{key}.start_m",
            f"the road through {list(config.start_m)} at {config.heading_deg:g} degrees"
            " misses the layout",
        )
    if config.at_edge == "wrap" and not layout.wrap_around:
        raise ScenarioError.single(
            f"{key}.at_edge", "wrap needs a wrap-around layout (cell.wrap_around: true)"
        )
    s_in, s_out = span
    if config.placement == "at_start" and not s_in <= 0.0 <= s_out:
        raise ScenarioError.single(
            f"{key}.start_m", "placement at_start needs start_m on the road inside the layout"
        )
    speed = draw_speeds(config.speed_mps, rng, n, f"{key}.speed_mps")
    s = rng.uniform(s_in, s_out, n) if config.placement == "along_road" else np.zeros(n)
    sign = np.where((np.arange(n) % 2 == 1) & config.two_way, -1.0, 1.0)
    return ConstantVelocityModel(
        layout, config.start_m, config.heading_deg, span, s, speed, sign, config.at_edge
    )


class Population:
    """All groups' models, advanced together in group order (module doc)."""

    def __init__(self, groups: list[Mobility]) -> None:
        self.groups = groups
        self.moving = not all(isinstance(g, StaticModel) for g in groups)
        self.xy_m = np.concatenate([g.xy_m for g in groups]) if groups else np.empty((0, 2))
        self._still = np.zeros(len(self.xy_m))

    @property
    def speed_mps(self) -> np.ndarray:
        if not self.moving:
            return self._still
        return np.concatenate([g.speed_mps for g in self.groups])

    def advance(self, dt_s: float) -> Step:
        """Every device's position after ``dt_s`` more seconds, and its displacement."""
        if not self.moving:
            return Step(self.xy_m, self._still)
        steps = [g.advance(dt_s) for g in self.groups]
        self.xy_m = np.concatenate([s.xy_m for s in steps])
        return Step(self.xy_m, np.concatenate([s.moved_m for s in steps]))
