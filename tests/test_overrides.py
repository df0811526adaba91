"""An error caused by a --set names that override, and warnings print as one clean line
(issue 25, item 3)."""

from __future__ import annotations

import pytest

from netfl.cli import main
from netfl.errors import ScenarioError
from netfl.scenario import load_scenario


def _errors(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]


def test_an_override_that_makes_another_key_wrong_is_named(capsys):
    """devices.groups.0.count=3 makes fl.clients_per_round (5, from the file) too large:
    the error names the override, not the file's line and not the first --set."""
    args = ["--set", "fl.rounds=5", "--set", "devices.groups.0.count=3"]
    assert main(["validate", "compare_selection", *args]) == 2
    (line,) = _errors(capsys)
    assert line.startswith("error: --set devices.groups.0.count=3: fl.clients_per_round:")


def test_the_override_of_the_key_itself_is_named():
    with pytest.raises(ScenarioError) as info:
        load_scenario("compare_selection", ["fl.rounds=5", "fl.clients_per_round=100"])
    assert str(info.value).startswith("--set fl.clients_per_round=100: fl.clients_per_round:")


def test_a_problem_the_file_has_anyway_stays_with_the_file(write_scenario, tiny):
    tiny["fl"]["clients_per_round"] = 50  # more than the 6 devices, whatever is set
    path = write_scenario(tiny)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, ["fl.rounds=2", "seed=4"])
    assert str(info.value).startswith(f"{path}:")


def test_of_two_overrides_inside_a_section_the_one_that_breaks_it_is_named(write_scenario, tiny):
    """The problem is keyed "devices" and both overrides set keys inside it; leaving each
    out in turn shows the second one is the cause (the first one was blamed before)."""
    tiny["devices"]["groups"].append({**tiny["devices"]["groups"][0], "name": "b"})
    path = write_scenario(tiny)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, ["devices.groups.0.count=5", "devices.groups.1.name=a"])
    assert str(info.value) == (
        "--set devices.groups.1.name=a: devices: group names must be unique, got ['a', 'a']"
    )


def test_radio_warnings_are_one_line_without_python_s_prefix(capsys):
    """An overloaded direction with a deadline runs, with a warning naming the key."""
    assert (
        main(["validate", "compare_selection", "--set", "traffic.sources.0.arrival_rate_hz=100"])
        == 0
    )
    err = capsys.readouterr().err
    settled, worst = (part.split("%")[0] for part in err.split(" is ", 1)[1].split("(", 1))
    assert err.splitlines() == [
        "warning: traffic.sources.0.arrival_rate_hz: background load in the downlink is"
        f" {settled}% of its capacity where it settles ({worst}% with every other cell at"
        " full load): FL transfers may never finish (rounds end at the deadline)"
    ]
    assert "RadioWarning" not in err and ".py:" not in err
