"""Trajectories from files: interpolation, the CSV and SUMO readers, and bad files refused.

``tests/data/sumo_grid_fcd.xml`` is a small SUMO floating-car-data trace generated offline
with the ``eclipse-sumo`` wheel (tests/data/README.md says how).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from netfl.config.mobility import TrajectoryMobility
from netfl.errors import ScenarioError
from netfl.map.layout import hex_layout
from netfl.mobility.build import build_mobility
from netfl.mobility.trajectory import TrajectoryModel

DATA = Path(__file__).parent / "data"
SUMO_TRACE = DATA / "sumo_grid_fcd.xml"
LAYOUT = hex_layout(7, 1, 200.0)
KEY = "devices.groups.1.mobility"


def trajectory(path, layout=LAYOUT, first=10, count=2, **extra):
    config = TrajectoryMobility(model="trajectory", file=str(path), **extra)
    xy = np.zeros((count, 2))
    return build_mobility(config, layout, xy, np.random.default_rng(0), first_device=first, key=KEY)


def write(tmp_path, text, name="trace.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_positions_are_exact_at_samples_and_linear_between():
    model = TrajectoryModel(
        [np.array([1.0, 3.0, 4.0]), np.array([0.0])],
        [np.array([[0.0, 0.0], [10.0, 20.0], [10.0, 0.0]]), np.array([[5.0, 5.0]])],
    )
    assert np.allclose(model.xy_m, [[0.0, 0.0], [5.0, 5.0]])  # before the first sample
    expected = {1.0: [0.0, 0.0], 2.0: [5.0, 10.0], 3.0: [10.0, 20.0], 3.5: [10.0, 10.0]}
    t = 0.0
    for when, xy in expected.items():
        step = model.advance(when - t)
        t = when
        assert np.allclose(step.xy_m[0], xy)
        assert np.allclose(step.xy_m[1], [5.0, 5.0])  # one sample: stands there
    assert model.speed_mps[0] == pytest.approx(np.hypot(0.0, -20.0))  # 3 s -> 4 s leg
    step = model.advance(10.0)
    assert np.allclose(step.xy_m[0], [10.0, 0.0])  # after the last sample
    assert step.moved_m[0] == pytest.approx(10.0)
    assert model.speed_mps[0] == 0.0


def test_a_csv_trace_drives_the_groups_devices(tmp_path):
    path = write(
        tmp_path,
        "time_s,device,x_m,y_m\n0,10,0,0\n2,10,20,0\n0,11,-5,5\n1,11,-5,15\n",
    )
    model = trajectory(path)
    assert np.allclose(model.advance(1.0).xy_m, [[10.0, 0.0], [-5.0, 15.0]])
    shifted = trajectory(path, offset_m=(100.0, 0.0), time_offset_s=2.0)
    assert np.allclose(shifted.xy_m, [[120.0, 0.0], [95.0, 15.0]])


BAD_CSV = [
    ("time_s,device,x\n0,10,0\n", ":1: .*header must name the columns.*missing x_m, y_m"),
    ("time_s,device,x_m,y_m\n0,10,0,zero\n", ":2: .*finite numbers"),
    ("time_s,device,x_m,y_m\n0,10,0,0\n0,12,0,0\n", ":3: .*unknown device 12.*10..11"),
    ("time_s,device,x_m,y_m\n0,10,0,0\n", "device 11 of the group has no rows"),
    (
        "time_s,device,x_m,y_m\n0,10,0,0\n0,11,0,0\n0,10,1,1\n",
        ":4: .*a second sample at the same time",
    ),
    ("time_s,device,x_m,y_m\n0,10,0,0\n0,11,5000,0\n", ":3: .*position.*outside"),
    ("time_s,device,x_m,y_m\n", "no rows"),
    ("", "malformed CSV"),
]


@pytest.mark.parametrize("text, message", BAD_CSV)
def test_bad_csv_files_are_refused_with_one_line_naming_the_key(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ScenarioError, match=message) as info:
        trajectory(path)
    assert f"{KEY}.file" in str(info.value) and "\n" not in str(info.value)


def test_missing_file_and_unknown_format_are_refused(tmp_path):
    with pytest.raises(ScenarioError, match=r"mobility\.file.*no trajectory file"):
        trajectory(tmp_path / "absent.csv")
    with pytest.raises(ScenarioError, match=r"mobility\.format.*cannot tell the format"):
        trajectory(write(tmp_path, "x", name="trace.txt"))


def test_outside_rows_can_be_clipped_onto_the_layout(tmp_path):
    path = write(tmp_path, "time_s,device,x_m,y_m\n0,10,0,0\n0,11,5000,0\n")
    model = trajectory(path, outside="clip")
    # Onto the edge of the eastern site's hexagon (ISD 200 m: its far edge at x = 300 m).
    assert model.xy_m[1] == pytest.approx([300.0, 0.0], abs=1e-6)


def test_a_sumo_fcd_trace_is_read_with_sumolib():
    pytest.importorskip("sumolib")
    model = trajectory(SUMO_TRACE, first=0, count=2, offset_m=(-150.0, -150.0))
    # Vehicle "0" is at (137.70, 1.60) at t = 0 and (122.73, 1.60) at t = 1 in the file.
    assert np.allclose(model.xy_m[0], [137.70 - 150, 1.60 - 150])
    assert np.allclose(model.advance(0.5).xy_m[0], [(137.70 + 122.73) / 2 - 150, 1.60 - 150])
    # Vehicle "1" first appears at t = 2: it waits at its first position until then.
    assert np.allclose(model.xy_m[1], [148.40 - 150, 287.70 - 150])


def test_bad_sumo_traces_are_refused(tmp_path):
    pytest.importorskip("sumolib")
    text = SUMO_TRACE.read_text()
    with pytest.raises(ScenarioError, match="the trace has 4 vehicles, the group 5"):
        trajectory(SUMO_TRACE, first=0, count=5, offset_m=(-150.0, -150.0))
    truncated = write(tmp_path, text[: len(text) // 2], name="cut.xml")
    with pytest.raises(ScenarioError, match=r"mobility\.file.*malformed SUMO FCD XML"):
        trajectory(truncated, first=0, count=1)
    geo = write(tmp_path, text.replace(' x="', ' lon="').replace(' y="', ' lat="'), "geo.xml")
    with pytest.raises(ScenarioError, match=r"attribute x is None.*geographic"):
        trajectory(geo, first=0, count=1)
    with pytest.raises(ScenarioError, match="vehicle '0' at time 0: position"):
        trajectory(SUMO_TRACE, first=0, count=1, offset_m=(5000.0, 0.0))
