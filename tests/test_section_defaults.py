"""A section written in part keeps the defaults of where it sits (issue 27 item 0).

``radio.downlink: {bandwidth_hz: 10 MHz}`` used to reset the whole downlink to the uplink's
defaults (23 dBm, 5 dB noise figure instead of the base station's 41 dBm and the device's
9 dB, 7 dB before the calibrated defaults): the downlink's defaults came from a
``default_factory`` that applies only when the section is missing. Every section of the
schema is checked here (found by walking it, tests/schema_keys.py), so a new one cannot
bring the bug back.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import BaseModel

from netfl.config.scenario import Scenario
from netfl.scenario import load_scenario, scenario_from_data
from tests.schema_keys import SchemaKey, put, schema_keys, sub_models, tag_of


def _at(scenario: Scenario, path: tuple[str | int, ...]) -> Any:
    node: Any = scenario
    for step in path:
        node = node[step] if isinstance(step, int) else getattr(node, step)
    return node


def _sections() -> list[tuple[SchemaKey, type[BaseModel], tuple[str | int, ...]]]:
    """Every section that has a default where it sits: (its key, its model, its path)."""
    out = []
    for key in schema_keys():
        for model, is_list in sub_models(key.field.annotation):
            path = (*key.path, 0) if is_list else key.path
            try:
                default = _at(Scenario.model_validate(key.context), path)
            except (IndexError, AttributeError):
                continue  # an empty list: no section sits there by default
            if type(default) is model:
                out.append((key, model, path))
    return out


SECTIONS = _sections()


def test_every_section_found():
    """The walk reaches the sections whose defaults depend on where they sit."""
    paths = {".".join(map(str, path)) for _, _, path in SECTIONS}
    assert {"radio.uplink", "radio.downlink", "devices.groups.0", "cell.backhaul"} <= paths


@pytest.mark.parametrize(
    ("key", "model", "path"), SECTIONS, ids=[".".join(map(str, s[2])) for s in SECTIONS]
)
def test_a_partial_section_keeps_its_positions_defaults(key, model, path):
    """For each key of the section: the section written with only that key (at the value
    it takes there by default) is the section left out."""
    context = Scenario.model_validate(key.context)
    default = _at(context, path)
    tag = tag_of(model)
    base = {tag[0]: tag[1]} if tag is not None else {}
    for name in model.model_fields:
        value = getattr(default, name)
        if isinstance(value, BaseModel) or (isinstance(value, list) and value):
            continue  # a nested section: checked at its own path
        partial = {**base, name: value}
        written = _at(Scenario.model_validate(put(key.context, path, partial)), path)
        assert written == default, (name, written, default)


def test_downlink_written_in_part_keeps_the_base_stations_defaults():
    """The calibrated network's (TR 36.873 V12.5.0 Table 8.2-1): BS 41 dBm per 10 MHz, UE
    noise figure 9 dB (docs/radio.md); the uplink's 23 dBm and 5 dB are the device's and
    the BS's."""
    downlink = scenario_from_data({"radio": {"downlink": {"bandwidth_hz": "10 MHz"}}}).radio
    assert (downlink.downlink.tx_power_dbm, downlink.downlink.noise_figure_db) == (41.0, 9.0)
    assert (downlink.uplink.tx_power_dbm, downlink.uplink.noise_figure_db) == (23.0, 5.0)


@pytest.mark.parametrize("direction", ["uplink", "downlink"])
def test_nr_link_written_in_part_keeps_its_directions_defaults(direction):
    """NR: the device's 23 dBm and the BS's 5 dB up; 44 dBm per 20 MHz (TR 38.901 Table
    7.8-1) scaled to the band and the device's 9 dB down."""
    radio = scenario_from_data(
        {"radio": {"model": "nr", direction: {"overhead_fraction": 0.1}}}
    ).radio
    link = getattr(radio, direction)
    # 100 MHz by default: 44 dBm per 20 MHz is 51 dBm (the per-MHz default is rounded
    # to 0.01 dB).
    down = 44.0 - 10 * math.log10(20) + 10 * math.log10(100)
    expected = (23.0, 5.0) if direction == "uplink" else (down, 9.0)
    assert link.tx_power_dbm == pytest.approx(expected[0], abs=0.005)
    assert link.noise_figure_db == expected[1]


def test_multicell_scenario_runs_its_downlink_at_9_db():
    """scenarios/multicell.yaml writes ``downlink: {tx_power_dbm: 41}``: its noise figure
    is the device's 9 dB (it was 5 dB, the uplink's, before the fix)."""
    scenario = load_scenario("multicell")
    assert scenario.radio.downlink.noise_figure_db == 9.0
