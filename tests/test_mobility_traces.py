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


def test_a_sumo_fcd_trace_is_read():
    model = trajectory(SUMO_TRACE, first=0, count=2, offset_m=(-150.0, -150.0))
    # Vehicle "0" is at (137.70, 1.60) at t = 0 and (122.73, 1.60) at t = 1 in the file.
    assert np.allclose(model.xy_m[0], [137.70 - 150, 1.60 - 150])
    assert np.allclose(model.advance(0.5).xy_m[0], [(137.70 + 122.73) / 2 - 150, 1.60 - 150])
    # Vehicle "1" first appears at t = 2: it waits at its first position until then.
    assert np.allclose(model.xy_m[1], [148.40 - 150, 287.70 - 150])


def test_bad_sumo_traces_are_refused(tmp_path):
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


# -- hostile trajectory inputs (issue 34, part 3) -------------------------------------------

FCD = (
    '<fcd-export>\n<timestep time="0.00">\n'
    '<vehicle id="{a}" x="10.0" y="0.0"/><vehicle id="b" x="20.0" y="0.0"/>\n'
    "</timestep>\n</fcd-export>\n"
)


@pytest.mark.parametrize(
    ("encoding", "declared"),
    [("utf-8", None), ("utf-16", None), ("iso-8859-1", "ISO-8859-1"), ("utf-16", "UTF-16")],
)
def test_sumo_traces_in_a_declared_or_marked_encoding_are_read(tmp_path, encoding, declared):
    """UTF-16 (its byte-order mark says so) and ISO-8859-1 declared in the XML declaration
    decode as declared: the vehicle id with an accented letter is the same."""
    text = FCD.format(a="véhicule")
    if declared:
        text = f'<?xml version="1.0" encoding="{declared}"?>\n{text}'
    path = tmp_path / "fcd.xml"
    path.write_bytes(text.encode(encoding))
    model = trajectory(path, first=0, count=2)
    assert np.allclose(model.xy_m, [[10.0, 0.0], [20.0, 0.0]])
    from netfl.mobility.trace_files import read_sumo_fcd

    assert read_sumo_fcd(str(path), KEY, 2).labels[0] == "vehicle 'véhicule' at time 0"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            bytes(range(256)) * 8,
            r"fcd\.xml:1:1: .*mobility\.file: malformed SUMO FCD XML: .*binary",
        ),
        (FCD.format(a="é").encode("iso-8859-1"), r"malformed SUMO FCD XML: not well-formed"),
        (b"<a>" * 100_000 + b"</a>" * 100_000, r"elements nested deeper than 32 levels"),
        (FCD.replace('id="{a}" ', "").encode(), r"the <vehicle> number 1 of the <timestep> at"),
        (
            b'<!DOCTYPE x [<!ENTITY a "aaaa">]><fcd-export/>',
            r"has a document type declaration \(DOCTYPE\)",
        ),
        (
            FCD.format(a="a").replace('x="10.0"', 'x="' + "9" * 10**6 + 'x"').encode(),
            r"x is '9{37}\.\.\.'",
        ),
    ],
    ids=["binary", "undeclared-latin-1", "nested", "no-id", "doctype", "long-field"],
)
def test_hostile_sumo_traces_are_refused_naming_the_file_and_key(tmp_path, content, message):
    path = tmp_path / "fcd.xml"
    path.write_bytes(content)
    with pytest.raises(ScenarioError, match=message) as info:
        trajectory(path, first=0, count=2)
    line = str(info.value)
    assert f"{KEY}.file" in line and str(path) in line
    assert "\n" not in line and len(line) < 500  # a bounded excerpt, never the field whole


def test_a_vehicle_without_an_id_never_takes_a_device(tmp_path):
    """Before: two id-less vehicles merged into one vehicle "None" that took device 0."""
    path = write(tmp_path, FCD.replace('id="{a}" ', ""), "fcd.xml")
    with pytest.raises(ScenarioError, match="has no id: each vehicle needs its own"):
        trajectory(path, first=0, count=1)


def test_files_that_are_not_regular_or_too_large_are_refused_before_reading(tmp_path, monkeypatch):
    from netfl.mobility import trace_files

    for name in ("trace.csv", "trace.xml"):
        with pytest.raises(ScenarioError, match=r"is not a regular file .*read whole"):
            trajectory(Path("/dev/zero"), format=name[-3:].replace("xml", "sumo_fcd"))
    monkeypatch.setattr(trace_files, "MAX_TRACE_BYTES", 10)
    path = write(tmp_path, "time_s,device,x_m,y_m\n0,10,0,0\n0,11,0,0\n")
    with pytest.raises(ScenarioError, match=r"the file is 40 bytes; trajectory files are limited"):
        trajectory(path)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("0,10,1e22,0", r"position \(1e\+22, 0\) m is outside"),
        ("0,10,inf,0", "finite numbers"),
        ("1e11,10,0,0", r"time_s 1e\+11 is past"),
        ("0,10," + "7" * 10**6 + ",0", r"got \['0', '10', '7{37}\.\.\.', '0'\]"),
    ],
)
def test_absurd_csv_rows_are_refused_with_a_bounded_excerpt(tmp_path, row, message):
    path = write(tmp_path, f"time_s,device,x_m,y_m\n{row}\n0,11,0,0\n")
    with pytest.raises(ScenarioError, match=message) as info:
        trajectory(path)
    assert ":2: " in str(info.value) and len(str(info.value)) < 500


@pytest.mark.parametrize("x", ["1e22", "1e300"])
def test_far_rows_are_clipped_onto_the_layout(tmp_path, x):
    """The inside test no longer overflows (an integer cast wrapped 1e21 m and beyond
    into the layout): outside: clip moves such rows onto its edge."""
    from netfl.mobility.area import inside_layout

    path = write(tmp_path, f"time_s,device,x_m,y_m\n0,10,{x},0\n0,11,0,0\n")
    model = trajectory(path, outside="clip")
    assert inside_layout(LAYOUT, model.xy_m).all()
    assert model.xy_m[0, 0] == pytest.approx(300.0, abs=1e-6)  # the eastern site's far edge


def test_the_inside_test_is_safe_at_any_distance():
    from netfl.mobility.area import clip_to_layout, inside_layout

    far = np.array([[1e21, 0.0], [-3e21, 5.0], [1e300, 1e300], [np.inf, 0], [np.nan, 0]])
    assert not inside_layout(LAYOUT, far).any()
    wrap = hex_layout(19, 3, 200.0, wrap_around=True)
    assert not inside_layout(wrap, far).any()
    assert inside_layout(LAYOUT, clip_to_layout(LAYOUT, far[:3])).all()


def test_a_trace_edited_after_a_checkpoint_is_refused_at_resume(tmp_path, capsys):
    """The checkpoint keeps each input file's SHA-256; --resume refuses a trace changed
    since, naming its key (it was mixed into the resumed run silently)."""
    import json

    import yaml

    from netfl.cli import main

    trace = write(tmp_path, "time_s,device,x_m,y_m\n0,0,0,0\n10,0,50,0\n0,1,10,10\n")
    data = {
        "name": "t",
        "radio": {"model": "lte"},
        "devices": {"groups": [{"count": 2, "n_samples": 40, "mobility": {
            "model": "trajectory", "file": str(trace)}}]},
        "fl": {"rounds": 4, "clients_per_round": 1, "model_size_bits": 1e6,
               "checkpoint_every": 1},
        "learning": "none",
    }  # fmt: skip
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    run = tmp_path / "run"
    assert main(["simulate", str(tmp_path / "s.yaml"), "--out", str(run), "--quiet"]) == 0
    summary = json.loads((run / "summary.json").read_text())
    summary["status"] = "failed"  # as if it had stopped after its last checkpoint
    (run / "summary.json").write_text(json.dumps(summary))
    trace.write_text("time_s,device,x_m,y_m\n0,0,0,0\n10,0,60,0\n0,1,10,10\n")
    capsys.readouterr()
    assert main(["simulate", "--resume", str(run), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "devices.groups.0.mobility.file: the file changed since the checkpoint" in err
