"""One validation stage for ``validate`` and ``simulate`` (issue 18, "Validation")."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from netfl.cli import main
from netfl.scenario import load_scenario

DIRICHLET = {
    "devices": {
        "groups": [
            {
                "name": "phones",
                "count": 60,
                "n_samples": {"dist": "uniform", "low": 40, "high": 100},
            }
        ]
    },
    "learning": {"dataset": "digits", "partition": {"kind": "dirichlet", "alpha": 0.5}},
}


def _write(tmp_path: Path, data: dict | str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def test_dirichlet_sample_count_refused_by_validate_as_by_simulate(tmp_path, capsys) -> None:
    path = _write(tmp_path, DIRICHLET)
    assert main(["validate", str(path)]) == 2
    validate_err = capsys.readouterr().err
    assert main(["simulate", str(path), "--quiet", "--out", str(tmp_path / "run")]) == 2
    simulate_err = capsys.readouterr().err
    message = "learning.partition: dirichlet gives disjoint samples, but the devices ask for"
    assert message in validate_err and message in simulate_err
    assert validate_err.split(message)[1] == simulate_err.split(message)[1]
    assert validate_err.startswith(f"error: {path}:") and validate_err.count("\n") == 1


def test_file_dataset_with_missing_data_root_refused_by_validate(tmp_path, capsys) -> None:
    missing = tmp_path / "nowhere"
    args = ["--set", "learning.dataset=cifar10", "--set", f"learning.data_root={missing}"]
    assert main(["validate", "quickstart", *args]) == 2
    err = capsys.readouterr().err
    assert f"learning.data_root: cifar10: {missing} is not a folder" in err
    assert err.count("\n") == 1


def test_every_problem_of_a_file_in_one_pass(tmp_path, capsys) -> None:
    path = _write(
        tmp_path,
        "fl: {rounds: -1}\nselection: {name: fedcss}\nlearning: {dataset: digit}\n",
    )
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {path}:1:6: fl.rounds: Input should be greater than 0 (got -1)",
        f"error: {path}:2:13: selection.name: unknown strategy 'fedcss'; did you mean 'fedcs'?",
        f"error: {path}:3:12: learning.dataset: unknown dataset 'digit'; did you mean 'digits'?",
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0.5 MB", {"dist": "constant", "value": 4e6}),
        (
            {"dist": "uniform", "low": "0.5 MB", "high": "2 MB"},
            {"dist": "uniform", "low": 4e6, "high": 16e6},
        ),
        ({"dist": "choice", "values": ["1 Mbit", 2e6]}, {"dist": "choice", "values": [1e6, 2e6]}),
    ],
)
def test_unit_strings_on_a_distribution_key(value, expected) -> None:
    source = {"kind": "ftp1", "arrival_rate_hz": 0.1, "file_size_bits": value}
    flow = yaml.safe_dump(source, default_flow_style=True).strip()
    scenario = load_scenario("quickstart", [f"traffic.sources=[{flow}]"])
    dumped = scenario.traffic.sources[0].file_size_bits.model_dump()
    assert {k: v for k, v in dumped.items() if k in expected} == expected


def test_wrong_unit_on_a_distribution_key_names_the_key(capsys) -> None:
    source = "{kind: ftp1, arrival_rate_hz: 0.1, file_size_bits: '2 s'}"
    assert main(["validate", "quickstart", "--set", f"traffic.sources=[{source}]"]) == 2
    err = capsys.readouterr().err
    assert "traffic.sources.0: file_size_bits: wrong unit: '2 s' is a time" in err
    assert "valid dictionary" not in err


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "selection=fedcs",
            "selection: expected a section (a mapping of keys), got 'fedcs'; write"
            " `selection: {name: fedcs}` (or --set selection.name=fedcs)",
        ),
        ("fl=3", "fl: expected a section (a mapping of keys), got 3"),
    ],
)
def test_a_value_where_a_section_goes(override, message, capsys) -> None:
    assert main(["validate", "quickstart", "--set", override]) == 2
    err = capsys.readouterr().err
    assert err == f"error: --set {override}: {message}\n"
    assert "instance of" not in err


@pytest.mark.parametrize("spec", ["QuickStart", "quickstrat"])
def test_did_you_mean_for_scenario_names(spec, capsys) -> None:
    assert main(["validate", spec]) == 2
    assert "did you mean 'quickstart'?" in capsys.readouterr().err


def test_did_you_mean_ignores_letter_case(capsys) -> None:
    assert main(["validate", "quickstart", "--set", "selection.name=FedCS"]) == 2
    assert capsys.readouterr().err.endswith("unknown strategy 'FedCS'; did you mean 'fedcs'?\n")


def test_problems_from_the_file_and_from_set_each_name_their_source(tmp_path, capsys) -> None:
    path = _write(tmp_path, "fl: {rounds: -1}\n")
    assert main(["validate", str(path), "--set", "selection.name=fedcss"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {path}:1:6: fl.rounds: Input should be greater than 0 (got -1)",
        "error: --set selection.name=fedcss: selection.name: unknown strategy 'fedcss';"
        " did you mean 'fedcs'?",
    ]


def test_did_you_mean_for_strategy_parameters_ignores_letter_case(capsys) -> None:
    args = ["--set", "selection.name=fedcs", "--set", "selection.params.Deadline_S=3"]
    assert main(["validate", "quickstart", *args]) == 2
    assert "not a parameter of this strategy; did you mean 'deadline_s'?" in (
        capsys.readouterr().err
    )
