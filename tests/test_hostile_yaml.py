"""Hostile YAML: alias bombs, deep nesting, huge files and fuzzed scenarios (issue 16.1),
and bad values for every key of the schema (issue 27 item 7)."""

from __future__ import annotations

import re
import tempfile
import warnings
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from netfl.config.scenario import Scenario
from netfl.yaml_guard import MAX_DEPTH, MAX_EXPANDED_VALUES, MAX_SCENARIO_BYTES
from tests.fuzz_scenarios import (
    check_outcome,
    counted,
    motion_scenario,
    scenario_bytes,
    validate_file,
    warm_up,
)
from tests.schema_keys import hostile_values, schema_keys, valid

#: A hang guard, not a speed goal: a file whose validation has no bound (an alias bomb, a
#: recursion) runs for minutes or forever, one that is refused takes well under a second
#: alone; 60 s keeps a loaded CI machine from failing the check
#: (``benchmarks/bench_fuzz_validate.py`` measures the real times).
PER_FILE_S = 60.0


def billion_laughs(levels: int = 9) -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * 9) + "]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _validate_text(tmp_path: Path, text: str | bytes) -> tuple[Path, int, str, float]:
    path = tmp_path / "hostile.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    code, err, wall = validate_file(path)
    return path, code, err, wall


def test_billion_laughs_refused_with_position(tmp_path: Path) -> None:
    path, code, err, wall = _validate_text(tmp_path, billion_laughs())
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith(f"error: {path}:")
    assert f"more than {MAX_EXPANDED_VALUES:,} values" in err
    assert wall < PER_FILE_S


def test_few_aliases_are_fine(tmp_path: Path) -> None:
    text = "seed: &s 3\nname: x\nfl: {rounds: 2, clients_per_round: *s}\n"
    assert _validate_text(tmp_path, text)[1] == 0


@pytest.mark.parametrize("opener", ["[", "{a: "])
def test_deep_nesting_refused(tmp_path: Path, opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    path, code, err, wall = _validate_text(tmp_path, "x: " + opener * 5000 + closer * 5000)
    assert code == 2
    assert err.count("\n") == 1
    assert f"error: {path}:1:" in err and f"nested deeper than {MAX_DEPTH} levels" in err
    assert wall < PER_FILE_S


def test_deep_nesting_through_aliases_refused(tmp_path: Path) -> None:
    lines = ["a0: &a0 [[[[[[[[[[x]]]]]]]]]]"]
    lines += [f"a{i}: &a{i} [[[[[[[[[[*a{i - 1}]]]]]]]]]]" for i in range(1, 8)]
    _, code, err, _ = _validate_text(tmp_path, "\n".join(lines))
    assert code == 2 and "nested deeper" in err


def test_large_file_refused_before_reading(tmp_path: Path) -> None:
    path, code, err, _ = _validate_text(tmp_path, "#" * (MAX_SCENARIO_BYTES + 1))
    assert code == 2
    assert err == (
        f"error: {path}: the file is {MAX_SCENARIO_BYTES + 1:,} bytes; scenarios are"
        f" limited to {MAX_SCENARIO_BYTES:,} bytes (a scenario is a few kilobytes)\n"
    )


@pytest.mark.parametrize(
    "content", [b"a: \x00 b\n", b"\xff\xfe\x00", b"a:\n  - b\n c: [\n", b"'\n\n\xe2\x80\xa8"]
)
def test_broken_bytes_give_one_line(tmp_path: Path, content: bytes) -> None:
    path, code, err, _ = _validate_text(tmp_path, content)
    assert code == 2
    check_outcome(path, code, err)
    assert err.count("\n") == 1


@pytest.fixture(scope="module", autouse=True)
def _imported(tmp_path_factory: pytest.TempPathFactory) -> None:
    warm_up(tmp_path_factory.mktemp("warm-up"))


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(content=scenario_bytes())
def test_fuzzed_files_exit_0_or_2_with_one_line_errors(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.yaml"
        path.write_bytes(content)
        code, err, wall = validate_file(path)
    check_outcome(path, code, err)
    assert wall < PER_FILE_S


@pytest.mark.parametrize("content", ["", "# only a comment\n", "{}\n"])
def test_empty_scenario_says_it_runs_every_default(tmp_path: Path, content: str) -> None:
    path, code, err, _ = _validate_text(tmp_path, content)
    assert code == 0
    assert err == (
        f"warning: {path}: the scenario is empty, so every key takes its default"
        " (`netfl validate --print` shows them)\n"
    )


# -- bad values for every key, generated from the schema (issue 27 item 7) ----------------

SCHEMA_CASES = [(key, value) for key in schema_keys() for value in hostile_values(key)]
_ERROR_LINE = re.compile(r"^error: (?P<source>.+?)(:\d+:\d+)?: (?P<key>[A-Za-z_][\w.]*): \S")


def test_every_key_is_reached_and_gets_bad_values():
    """The walk puts every key in force (its context validates) and derives bad values
    for it, so a key added to the schema is fuzzed without anyone listing it."""
    keys = schema_keys()
    assert len(keys) > 200
    for key in keys:
        if not key.dotted.startswith("learning.partition."):  # a kind needs its own key
            assert valid(key.context), key.dotted
        assert len(hostile_values(key)) >= 4, key.dotted


def test_bad_values_of_every_key_exit_0_or_2_naming_a_key(tmp_path: Path) -> None:
    """Every key of the schema with wrong types, negative, zero, huge and non-finite
    numbers, unknown choices and broken distributions: ``netfl validate`` accepts the
    value or refuses it with one line per problem, each naming a key, within
    :data:`PER_FILE_S`; never a traceback."""
    path = tmp_path / "scenario.yaml"
    failures = []
    for key, value in SCHEMA_CASES:
        path.write_text(yaml.safe_dump(key.scenario(value)))
        code, err, wall = validate_file(path)
        lines = err.splitlines()
        errors = [line for line in lines if line.startswith("error: ")]
        ok = code in (0, 2) and wall < PER_FILE_S and "Traceback" not in err
        ok = ok and all(line.startswith(("error: ", "warning: ")) for line in lines)
        if code == 2:
            matches = [_ERROR_LINE.match(line) for line in errors]
            ok = ok and bool(errors) and all(m is not None for m in matches)
            ok = ok and all(m["key"].split(".")[0] in Scenario.model_fields for m in matches if m)
        if not ok:
            shown = repr(value)[:80]
            failures.append(f"{key.dotted} = {shown}: exit {code}, {wall:.1f} s: {err[:300]!r}")
    assert not failures, "\n".join(failures[:20])


# -- motion that cannot be simulated in bounded time is refused (issue 34, part 3) --------

MOBILE = {
    "name": "m",
    "radio": {"model": "lte"},
    "devices": {"groups": [{"count": 4, "n_samples": 40, "mobility": {"model": "static"}}]},
    "fl": {"rounds": 2, "clients_per_round": 2, "model_size_bits": 1e6},
    "learning": "none",
}


@pytest.mark.parametrize(
    ("mobility", "sets", "key", "says"),
    [
        ({"model": "random_waypoint", "speed_mps": 1e9}, [], "mobility.speed_mps",
         "past the 138.9 m/s (500 km/h)"),
        ({"model": "random_waypoint", "speed_mps": 1e9}, ["cell.wrap_around=true"],
         "mobility.speed_mps", "past the 138.9 m/s"),
        ({"model": "random_direction", "speed_mps": 1e300}, [], "mobility.speed_mps",
         "speeds reach 1e+300 m/s"),
        ({"model": "random_direction", "speed_mps": {"dist": "lognormal", "median": 30,
          "sigma": 1}}, [], "mobility.speed_mps", "speeds reach 1.21e+04 m/s"),
        ({"model": "gauss_markov", "speed_std_mps": 1e308}, [], "mobility.speed_std_mps",
         "(the mean's reach + 6 speed_std_mps)"),
        ({"model": "random_direction", "travel_s": 1e-12}, [], "mobility.travel_s",
         "shorter than radio.update_interval_s (0.1 s)"),
        ({"model": "trajectory", "file": "x.csv", "offset_m": [1e308, 0]}, [],
         "mobility.offset_m.0", "less than or equal to 10000000"),
        ({"model": "constant_velocity", "start_m": [1e21, 0]}, [], "mobility.start_m.0",
         "less than or equal to 10000000"),
        ({"model": "random_direction"}, ["radio.update_interval_s=1e-9"],
         "radio.update_interval_s", "shorter than a subframe (1 ms"),
        ({"model": "random_direction"}, ["radio.update_interval_s=1e-300"],
         "radio.update_interval_s", "shorter than a subframe"),
        ({"model": "random_direction"}, ["radio.handover.interruption_s=1e308"],
         "radio.handover.interruption_s", "less than or equal to 30"),
        ({"model": "static"}, ["fl.protocol=hierarchical", "fl.kappa1=1000", "fl.kappa2=1000"],
         "fl.kappa2", "kappa1 x kappa2 = 1,000,000 local updates of every selected"),
        ({"model": "static"}, ["devices.groups.0.distance_m=1e308"],
         "devices.groups.0.distance_m", "beyond the layout"),
    ],
)  # fmt: skip
def test_motion_that_cannot_finish_is_refused_naming_the_key(
    tmp_path: Path, capsys, mobility, sets, key, says
) -> None:
    from netfl.cli import main

    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump({**MOBILE, "devices": {"groups": [
        {**MOBILE["devices"]["groups"][0], "mobility": mobility}]}}))  # fmt: skip
    args = ["validate", str(path)] + [a for s in sets for a in ("--set", s)]
    assert main(args) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and f"{key}: " in errors[0] and says in errors[0], err


def test_a_radio_update_that_leaves_devices_standing_is_said(tmp_path: Path, capsys) -> None:
    from netfl.cli import main

    path = tmp_path / "m.yaml"
    data = json_copy(MOBILE)
    data["devices"]["groups"][0]["mobility"] = {"model": "constant_velocity"}
    path.write_text(yaml.safe_dump(data))
    # a device measures at radio updates: the measurement period and the time-to-trigger
    # counted in it follow the long update (shorter, they are refused)
    sets = [
        "radio.update_interval_s=1e9",
        "radio.handover.measurement_period_s=1e9",
        "radio.handover.time_to_trigger_s=0",
    ]
    assert main(["validate", str(path), *(a for s in sets for a in ("--set", s))]) == 0
    err = capsys.readouterr().err
    assert "warning: radio.update_interval_s: moving devices advance" in err
    assert "only every 1e+09 s" in err


def json_copy(data: dict) -> dict:
    return yaml.safe_load(yaml.safe_dump(data))


@given(motion_scenario())
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_motion_that_validates_finishes_in_bounded_work(data: dict) -> None:
    """Whatever the motion keys (speeds, legs, pauses, the update interval, the
    interruption, positions, kappa1 x kappa2, from 1e-300 to 1e300): a scenario that
    validates runs to its end computing a bounded number of SimPy events and leg passes
    (no timing: a run that would hang fails on the counts), unless ``netfl validate``'s
    forecast says that it is long: a valid scenario may ask for millions of radio updates
    (1 ms updates over a 2,000 s hierarchical run), and then validate must say so
    (issue 34, part 1) rather than the run being short."""
    from netfl.errors import ScenarioError
    from netfl.forecast import forecast
    from netfl.scenario import scenario_from_data
    from netfl.simulation import simulate

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scenario = scenario_from_data(data)
    except ScenarioError:
        return
    plan = forecast(scenario)
    interval_s = getattr(scenario.radio, "update_interval_s", None)
    if interval_s and plan.sim_time_s is not None and plan.sim_time_s / interval_s > 400_000:
        # Past the event bound below by the forecast's own count: validate states minutes.
        assert plan.wall is not None and plan.wall.total_s > 60.0, plan.lines()
        return
    with tempfile.TemporaryDirectory() as folder, counted(500_000, 50.0) as counts:
        result = simulate(scenario, Path(folder) / "run")
    assert result.summary["status"] == "completed"
    # counted() enforced the pass bound; that it was in force: the legged models moved.
    model = data["devices"]["groups"][0]["mobility"]["model"]
    legged = model in ("random_direction", "random_waypoint")
    if legged and interval_s and result.summary["sim_time_s"] > interval_s:
        assert counts["ticks"] > 0
