"""Scenario loading and validation: good files, and each kind of bad input."""

from __future__ import annotations

import pytest
import yaml

from netfl.config import Scenario
from netfl.errors import ScenarioError, ScenarioWarning
from netfl.scenario import builtin_scenarios, dump_scenario, load_scenario, scenario_from_data


def _error(write_scenario, data, overrides=()) -> ScenarioError:
    path = write_scenario(data)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, overrides)
    return info.value


def test_builtin_quickstart_loads():
    scenario = load_scenario()
    assert scenario.name == "quickstart"
    assert scenario.devices.n_clients == 20


def test_defaults_fill_every_key(write_scenario):
    with pytest.warns(ScenarioWarning, match="empty, so every key takes its default"):
        scenario = load_scenario(write_scenario({}))
    assert scenario == Scenario()
    assert scenario.fl.rounds == 20


def test_resolved_dump_round_trips(write_scenario, tiny):
    scenario = load_scenario(write_scenario(tiny))
    again = load_scenario(write_scenario(dump_scenario(scenario), "resolved.yaml"))
    assert again == scenario


@pytest.mark.parametrize("name", sorted(builtin_scenarios()))
def test_every_builtin_scenario_round_trips(write_scenario, name):
    """scenario.resolved.yaml of each shipped scenario loads back to the same scenario,
    and dumps to the same text (so its digest, which checkpoints keep, is stable)."""
    scenario = load_scenario(name)
    text = dump_scenario(scenario)
    again = load_scenario(write_scenario(text, "resolved.yaml"))
    assert again == scenario
    assert dump_scenario(again) == text


def test_malformed_yaml_reports_line_and_column(write_scenario):
    error = _error(write_scenario, "fl:\n  rounds: 3\n  clients_per_round: [1, 2\n")
    assert "malformed YAML" in str(error)
    # The flow list opened on line 3 is still open at the end of the stream, which is
    # line 4, column 1 (after the last newline).
    assert (error.problems[0].line, error.problems[0].column) == (4, 1)
    assert "scenario.yaml:" in str(error)


def test_unknown_key_suggests_the_nearest(write_scenario, tiny):
    tiny["fl"]["rouns"] = 5
    error = _error(write_scenario, tiny)
    assert error.problems[0].key == "fl.rouns"
    assert "did you mean 'rounds'?" in str(error)
    # The line of the typo in the file is reported.
    text = (write_scenario(tiny)).read_text().splitlines()
    assert "rouns" in text[error.problems[0].line - 1]


def test_unknown_section(write_scenario, tiny):
    tiny["learnin"] = {}
    error = _error(write_scenario, tiny)
    assert "unknown key 'learnin'; did you mean 'learning'?" in str(error)


def test_unknown_key_inside_a_distribution(write_scenario, tiny):
    tiny["devices"]["groups"][0]["compute_sps"] = {"dist": "uniform", "low": 1, "hgh": 3}
    error = _error(write_scenario, tiny)
    assert error.problems[0].key == "devices.groups.0.compute_sps.hgh"
    assert "did you mean 'high'?" in str(error)


@pytest.mark.parametrize(
    ("section", "key", "value", "expected"),
    [
        ("fl", "rounds", 0, "greater than 0"),
        ("fl", "rounds", "ten", "valid integer"),
        ("fl", "deadline_s", -5, "greater than 0"),
        ("fl", "deadline_s", 0, "greater than 0"),
        ("fl", "model_size_bits", 0, "greater than 0"),
        ("fl", "request_fraction", 1.5, "less than or equal to 1"),
        ("cell", "radius_m", -1, "greater than 0"),
        ("learning", "batch_size", 0, "greater than 0"),
        ("learning", "lr", -0.1, "greater than 0"),
    ],
)
def test_bad_values_name_the_key(write_scenario, tiny, section, key, value, expected):
    tiny.setdefault(section, {})[key] = value
    error = _error(write_scenario, tiny)
    assert error.problems[0].key == f"{section}.{key}"
    assert expected in str(error)
    assert str(error).startswith(str(write_scenario(tiny)))


def test_clients_per_round_larger_than_population(write_scenario, tiny):
    tiny["fl"]["clients_per_round"] = 7
    error = _error(write_scenario, tiny)
    assert error.problems[0].key == "fl.clients_per_round"
    assert "more than the population (6 devices)" in str(error)


def test_missing_file():
    with pytest.raises(ScenarioError) as info:
        load_scenario("does/not/exist.yaml")
    assert "does/not/exist.yaml" in str(info.value)
    assert "no such file" in str(info.value)


def test_units_are_converted(write_scenario, tiny):
    tiny["fl"]["deadline_s"] = "500 ms"
    tiny["fl"]["model_size_bits"] = "18.3 MB"
    tiny["cell"] = {"radius_m": "2 km"}
    scenario = load_scenario(write_scenario(tiny))
    assert scenario.fl.deadline_s == pytest.approx(0.5)
    assert scenario.fl.model_size_bits == pytest.approx(18.3e6 * 8)
    assert scenario.cell.radius_m == pytest.approx(2000.0)


def test_wrong_unit_dimension_is_refused(write_scenario, tiny):
    tiny["fl"]["deadline_s"] = "5 MHz"
    error = _error(write_scenario, tiny)
    assert error.problems[0].key == "fl.deadline_s"
    assert "wrong unit" in str(error)
    # The value is quoted once, in the message (not a literal template, nor repeated).
    assert error.problems[0].message == (
        "wrong unit: '5 MHz' is a frequency, this key takes a time (in s)"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("5 parsecs", "unknown unit 'parsecs' in '5 parsecs'"),
        ("five", "expected a number in s or a string such as '2.5 s', got 'five'"),
    ],
)
def test_unreadable_quantities_quote_the_value(write_scenario, tiny, value, message):
    tiny["fl"]["deadline_s"] = value
    assert _error(write_scenario, tiny).problems[0].message == message


@pytest.mark.parametrize(
    ("key", "value", "hint"),
    [
        ("model_size_bits", "18 Mb", "write 'MB' for bytes or 'Mbit' for bits"),
        ("model_size_bits", "500 kb", "write 'kB' for bytes or 'kbit' for bits"),
        ("request_response_bits", "8 b", "write 'B' for bytes or 'bit' for bits"),
    ],
)
def test_bit_or_byte_ambiguity_is_refused(write_scenario, tiny, key, value, hint):
    """Networking writes b for bit and B for byte; the unit table is case-insensitive, so
    without this check "18 Mb" would silently be read as 18 megabytes (8x too large)."""
    tiny["fl"][key] = value
    error = _error(write_scenario, tiny)
    assert error.problems[0].key == f"fl.{key}"
    assert hint in str(error)


def test_bytes_per_second_are_refused(write_scenario, tiny):
    tiny["cell"] = {"backhaul": {"edge_cloud_capacity_bps": "10 MBps"}}
    error = _error(write_scenario, tiny)
    assert error.problems[0].key == "cell.backhaul.edge_cloud_capacity_bps"
    assert "write bits per second ('Mbit/s')" in str(error)


def test_unambiguous_bit_and_byte_units(write_scenario, tiny):
    tiny["fl"]["model_size_bits"] = "18 Mbit"
    tiny["fl"]["request_response_bits"] = "2 kB"
    tiny["cell"] = {"backhaul": {"edge_cloud_capacity_bps": "10 Mbps"}}
    scenario = load_scenario(write_scenario(tiny))
    assert scenario.fl.model_size_bits == 18e6
    assert scenario.fl.request_response_bits == 2 * 8e3  # a byte is 8 bits
    assert scenario.cell.backhaul.edge_cloud_capacity_bps == 10e6


def test_yaml_11_exponent_without_dot_is_a_number(write_scenario, tiny):
    text = (
        "radio:\n  model: fixed\n  rate_ul_bps: 2e6\n  rate_dl_bps: 1e7\n"
        "devices:\n  groups:\n    - {count: 4, n_samples: 50}\n"
        "fl: {rounds: 1, clients_per_round: 2}\n"
    )
    scenario = load_scenario(write_scenario(text))
    assert scenario.radio.rate_ul_bps.expected() == 2e6


def test_override_sets_nested_keys(write_scenario, tiny):
    scenario = load_scenario(write_scenario(tiny), ["fl.rounds=7", "devices.groups.0.count=9"])
    assert scenario.fl.rounds == 7
    assert scenario.devices.n_clients == 9


def test_override_learning_none(write_scenario, tiny):
    scenario = load_scenario(write_scenario(tiny), ["learning=none", "fl.model_size_bits=1e6"])
    assert scenario.learning is None


def test_learning_none_needs_model_size(write_scenario, tiny):
    error = _error(write_scenario, tiny, ["learning=none"])
    assert error.problems[0].key == "fl.model_size_bits"


def test_learning_none_needs_data_sizes(write_scenario, tiny):
    del tiny["devices"]["groups"][0]["n_samples"]
    tiny["learning"] = "none"
    tiny["fl"]["model_size_bits"] = 1e6
    error = _error(write_scenario, tiny)
    assert error.problems[0].key == "devices.groups.0.n_samples"


def test_bad_override_names_the_override(write_scenario, tiny):
    error = _error(write_scenario, tiny, ["fl.rounds=0"])
    assert error.source == "--set fl.rounds=0"
    assert "fl.rounds" in str(error)
    error = _error(write_scenario, tiny, ["fl.roundz=3"])
    assert "did you mean 'rounds'?" in str(error)


def test_malformed_override():
    with pytest.raises(ScenarioError, match="KEY=VALUE") as info:
        scenario_from_data({}, overrides=["fl.rounds"])
    assert info.value.source == "--set fl.rounds"


def test_override_with_bad_yaml_is_one_line():
    with pytest.raises(ScenarioError) as info:
        scenario_from_data({}, overrides=["fl.rounds=[1"])
    assert str(info.value) == (
        "--set fl.rounds=[1: fl.rounds: value is not valid YAML:"
        " expected ',' or ']', but got '<stream end>'"
    )


@pytest.mark.parametrize("text", ["off", "false", "none", "'off'", "null"])
def test_learning_off_in_any_yaml_spelling(text):
    """YAML 1.1 reads an unquoted `off` as False, which meant 'not a section'."""
    overrides = [f"learning={text}", "fl.model_size_bits=1e6", "devices.groups=[{n_samples: 50}]"]
    assert scenario_from_data({}, overrides=overrides).learning is None


def test_unknown_strategy_lists_registered(write_scenario, tiny):
    tiny["selection"] = {"name": "randm"}
    error = _error(write_scenario, tiny)
    assert error.problems[0].key == "selection.name"
    assert "did you mean 'random'?" in str(error)


def test_strategy_params_checked_against_signature(write_scenario, tiny):
    tiny["selection"] = {"name": "random", "params": {"weighted": "yes please"}}
    error = _error(write_scenario, tiny)
    assert error.problems[0].key == "selection.params.weighted"
    tiny["selection"] = {"name": "random", "params": {"alpha": 3}}
    error = _error(write_scenario, tiny)
    assert "not a parameter of this strategy; it takes: weighted" in str(error)
    # Issue 18: "did you mean" for parameter names, letter case included.
    tiny["selection"] = {"name": "rbcs_f", "params": {"v": 10}}
    error = _error(write_scenario, tiny)
    assert "did you mean 'V'?" in str(error)
    tiny["selection"] = {"name": "gpfl", "params": {"momentun": 0.2}}
    assert "did you mean 'momentum'?" in str(_error(write_scenario, tiny))


def test_unknown_dataset(write_scenario, tiny):
    tiny["learning"]["dataset"] = "digitz"
    error = _error(write_scenario, tiny)
    assert error.problems[0].key == "learning.dataset"


@pytest.mark.parametrize("key", ["dataset", "model"])
def test_own_dataset_or_model_must_import(write_scenario, tiny, key):
    """A ``package.module:name`` that does not import is bad input found at load (exit 2),
    not a run that fails once training starts (exit 1)."""
    tiny["learning"][key] = "no_such_package.loaders:thing"
    error = _error(write_scenario, tiny)
    assert error.problems[0].key == f"learning.{key}"
    assert "cannot import module 'no_such_package.loaders'" in str(error)
    tiny["learning"][key] = "tests.test_config:nothing_here"
    assert "has no attribute 'nothing_here'" in str(_error(write_scenario, tiny))


def test_every_problem_is_listed(write_scenario, tiny):
    tiny["fl"]["rounds"] = 0
    tiny["fl"]["deadline_s"] = -1
    error = _error(write_scenario, tiny)
    assert len(error.problems) == 2
    assert "(and 1 more" in str(error)


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("fl", "model_size_bits", ".inf"),  # the run would stall: no event ever ends
        ("fl", "request_time_s", ".inf"),
        ("fl", "deadline_s", ".nan"),
        ("learning", "lr", ".inf"),
        ("learning", "momentum", ".nan"),
    ],
)
def test_infinite_and_nan_numbers_are_refused(write_scenario, tiny, section, key, value):
    error = _error(write_scenario, tiny, [f"{section}.{key}={value}"])
    assert error.problems[0].key == f"{section}.{key}"
    assert "finite number" in str(error)


def test_infinite_numbers_inside_distributions(write_scenario, tiny):
    group = tiny["devices"]["groups"][0]
    group["compute_sps"] = {"dist": "uniform", "low": 1, "high": float("inf")}
    error = _error(write_scenario, tiny)
    assert error.problems[0].key == "devices.groups.0.compute_sps.high"
    assert "finite number" in str(error)
    # A truncated normal may be truncated on one side only.
    group["compute_sps"] = {"dist": "truncnormal", "mean": 50, "std": 20, "low": 10}
    scenario = load_scenario(write_scenario(tiny), ["devices.groups.0.compute_sps.high=.inf"])
    assert scenario.devices.groups[0].compute_sps.high == float("inf")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([1], "valid number"),  # was a TypeError from the radius derivation (exit 1)
        ({"a": 1}, "valid number"),
        ("5 s", "wrong unit: '5 s' is a time"),
        (-3, "greater than 0"),  # not a radius error about -3 / sqrt(3)
        (True, "got a boolean"),
    ],
)
def test_bad_inter_site_distance_is_reported_under_its_key(write_scenario, tiny, value, message):
    tiny["cell"] = {"inter_site_distance_m": value}
    error = _error(write_scenario, tiny)
    assert [p.key for p in error.problems] == ["cell.inter_site_distance_m"]
    assert message in str(error)


def test_min_distance_must_stay_inside_the_inradius(write_scenario, tiny):
    # inradius of a hexagon = R sqrt(3)/2 = 866.03 m for R = 1000 m
    tiny["cell"] = {"radius_m": 1000, "min_distance_m": 866.0}
    assert load_scenario(write_scenario(tiny)).cell.min_distance_m == 866.0
    tiny["cell"]["min_distance_m"] = 866.1
    assert "inradius (866.025 m)" in str(_error(write_scenario, tiny))


def test_a_key_written_twice_is_refused(write_scenario, tiny):
    """PyYAML keeps the last of two equal keys: the first fl block would be dropped."""
    error = _error(write_scenario, "fl:\n  rounds: 3\nseed: 1\nfl:\n  deadline_s: 5\n")
    assert (error.problems[0].line, error.problems[0].column) == (4, 1)
    assert "key 'fl' is written twice" in str(error)
    # A key merged in with << may still be overridden.
    text = yaml.safe_dump(tiny) + "output:\n  <<: {root: a}\n  root: b\n"
    assert load_scenario(write_scenario(text)).output.root == "b"
