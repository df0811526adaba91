"""The ``mobility`` and ``handover`` schema: documented keys, 3GPP sets, bad values named."""

from __future__ import annotations

import pytest
from pydantic import Field, ValidationError

from netfl.config.base import StrictModel
from netfl.config.mobility import (
    FILTER_COEFFICIENTS,
    TIME_TO_TRIGGER_S,
    HandoverConfig,
    MobilityConfig,
    StaticMobility,
)
from netfl.scenario import validation_problems
from tests.test_docs import _models


class Holder(StrictModel):
    """Stands in for the scenario sections the lead will attach these to."""

    mobility: MobilityConfig = Field(default=StaticMobility(), description="A group's mobility.")
    handover: HandoverConfig = Field(default=HandoverConfig(), description="The handover.")


def problems(data):
    with pytest.raises(ValidationError) as info:
        Holder.model_validate(data)
    return [(p.key, p.message) for p in validation_problems(info.value, data)]


def test_every_key_is_documented():
    def walk(model):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no description"
            for sub in _models(field.annotation):
                walk(sub)

    walk(Holder)


def test_defaults_follow_3gpp():
    config = HandoverConfig()
    assert config.time_to_trigger_s in TIME_TO_TRIGGER_S
    assert config.filter_coefficient == 4 in FILTER_COEFFICIENTS  # TS 36.331 default fc4
    assert (config.qout_db, config.qin_db, config.t310_s) == (-8.0, -6.0, 1.0)
    assert config.ping_pong_window_s == 1.0
    # TS 36.133 Sec. 8.1.2.2: 200 ms measurement period, at least 8 cells per carrier.
    assert (config.measurement_period_s, config.measured_cells) == (0.2, 8)
    # Units in strings convert like every other key.
    assert HandoverConfig(time_to_trigger_s="480 ms").time_to_trigger_s == 0.48


@pytest.mark.parametrize(
    "data, key, message",
    [
        ({"handover": {"time_to_trigger_s": 0.3}}, "handover.time_to_trigger_s", "one of 0,"),
        ({"handover": {"hysteresis_db": 0.3}}, "handover.hysteresis_db", "multiple of 0.5"),
        ({"handover": {"a3_offset_db": 20}}, "handover.a3_offset_db", "[-15, 15]"),
        ({"handover": {"filter_coefficient": 10}}, "handover.filter_coefficient", "one of"),
        ({"handover": {"t310_s": 3}}, "handover.t310_s", "TS 36.331 t310"),
        ({"handover": {"n310": 5}}, "handover.n310", "1, 2, 3, 4, 6, 8, 10, 20"),
        ({"handover": {"qin_db": -9}}, "handover.qin_db", "above qout_db"),
        ({"handover": {"interruption_s": -1}}, "handover.interruption_s", "greater than"),
        ({"handover": {"measured_cells": 0}}, "handover.measured_cells", "greater than"),
        ({"handover": {"measurement_period_s": 0}}, "handover.measurement_period_s", "greater"),
        (
            {"mobility": {"model": "random_direction", "speed_mps": -3}},
            "mobility.speed_mps",
            "cannot be negative",
        ),
        (
            {
                "mobility": {
                    "model": "gauss_markov",
                    "mean_speed_mps": {"dist": "normal", "mean": 1, "std": 1},
                }
            },
            "mobility.mean_speed_mps",
            "cannot be negative",
        ),
        (
            {
                "mobility": {
                    "model": "random_waypoint",
                    "speed_mps": {"dist": "uniform", "low": 0, "high": 2},
                }
            },
            "mobility.speed_mps",
            "bounded away from 0",
        ),
        (
            {
                "mobility": {
                    "model": "random_direction",
                    "pause_s": {"dist": "normal", "mean": 1, "std": 1},
                }
            },
            "mobility.pause_s",
            "must be constant, uniform",
        ),
        (
            {"mobility": {"model": "random_direction", "travel_s": 0}},
            "mobility.travel_s",
            "must be positive",
        ),
        ({"mobility": {"model": "gauss_markov", "alpha": 1.5}}, "mobility.alpha", "less than"),
        ({"mobility": {"model": "teleport"}}, "mobility", "static"),
        (
            {"mobility": {"model": "constant_velocity", "heading": 3}},
            "mobility.heading",
            "did you mean 'heading_deg'",
        ),
    ],
)
def test_bad_values_are_refused_naming_the_key(data, key, message):
    found = problems(data)
    assert len(found) == 1, found
    assert found[0][0] == key
    assert message in found[0][1]
