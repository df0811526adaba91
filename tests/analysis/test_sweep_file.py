"""Sweep files: expansion into runs, and bad input reported like scenario errors."""

from __future__ import annotations

import pytest
import yaml

from netfl.cli import main
from netfl.errors import ScenarioError
from netfl.sweep import load_sweep
from netfl.sweep.spec import key_problem
from tests.analysis.conftest import TIMING, write_sweep


def _sweep(tmp_path, body):
    return write_sweep(tmp_path, TIMING, body)


def _error(tmp_path, body: dict | str) -> str:
    if isinstance(body, str):
        path = tmp_path / "sweep.yaml"
        (tmp_path / "base.yaml").write_text(yaml.safe_dump(TIMING))
        path.write_text(body)
    else:
        path = _sweep(tmp_path, body)
    with pytest.raises(ScenarioError) as info:
        load_sweep(path)
    return str(info.value)


def test_grid_zip_and_seeds_expand_in_order(tmp_path):
    sweep = load_sweep(
        _sweep(
            tmp_path,
            {
                "overrides": {"fl.rounds": 2},
                "grid": {
                    "fl.clients_per_round": [2, 3],
                    "selection.params.weighted": [False, True],
                },
                "zip": {"fl.deadline_s": [None, 3.0], "fl.request_fraction": [1.0, 0.5]},
                "seeds": 2,
            },
        )
    )
    assert sweep.name == "sweep"
    assert len(sweep.runs) == 2 * 2 * 2 * 2
    first, last = sweep.runs[0], sweep.runs[-1]
    assert first.scenario.fl.clients_per_round == 2 and first.scenario.seed == 0
    assert first.scenario.fl.rounds == 2 and first.scenario.fl.deadline_s is None
    assert last.scenario.fl.clients_per_round == 3 and last.scenario.seed == 1
    assert last.scenario.selection.params == {"weighted": True}
    assert (last.scenario.fl.deadline_s, last.scenario.fl.request_fraction) == (3.0, 0.5)
    assert len({r.run_id for r in sweep.runs}) == len(sweep.runs)
    assert "fl.rounds" not in first.label and "seed=0" in first.label


def test_run_ids_are_stable_and_follow_the_scenario(tmp_path):
    body = {"grid": {"fl.clients_per_round": [2, 3]}, "seeds": [5]}
    a = [r.run_id for r in load_sweep(_sweep(tmp_path / "a", body)).runs]
    b = [r.run_id for r in load_sweep(_sweep(tmp_path / "b", body)).runs]
    assert a == b
    body["overrides"] = {"fl.rounds": 3}
    c = [r.run_id for r in load_sweep(_sweep(tmp_path / "c", body)).runs]
    assert not set(a) & set(c)


def test_schema_walk():
    assert key_problem("fl.clients_per_round") is None
    assert key_problem("devices.groups.0.count") is None
    assert key_problem("selection.params.anything") is None  # checked at validation
    assert "did you mean 'clients_per_round'" in key_problem("fl.clients_per_rnd")
    assert "is a list: give an item index" in key_problem("devices.groups.count")


def test_unknown_override_key_names_file_line_and_key(tmp_path):
    text = "base: base.yaml\ngrid:\n  fl.clients_per_rnd: [2, 3]\nseeds: [1]\n"
    message = _error(tmp_path, text)
    assert message.startswith(f"{tmp_path / 'sweep.yaml'}:3:3: grid.fl.clients_per_rnd: ")
    assert "did you mean 'clients_per_round'?" in message


def test_unknown_sweep_key_suggests(tmp_path):
    message = _error(tmp_path, "base: base.yaml\ngrids:\n  fl.rounds: [1]\n")
    assert ":2:1: grids: unknown key 'grids'; did you mean 'grid'?" in message


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"grid": {}}, "grid: empty"),
        ({"grid": {"fl.rounds": []}}, "grid.fl.rounds: empty list"),
        ({"zip": {"fl.rounds": [1, 2], "fl.deadline_s": [1]}}, "zip: zipped lists must have equal"),
        ({"grid": {"seed": [1, 2]}}, "grid.seed: vary the seed with the `seeds:` list"),
        ({"seeds": []}, "seeds: empty"),
        ({"base": "nowhere.yaml"}, "base: no such file, and no built-in scenario"),
        ({"grid": {"fl.rounds": 3}}, "grid.fl.rounds: Input should be a valid list"),
    ],
)
def test_bad_sweeps(tmp_path, body, expected):
    assert expected in _error(tmp_path, body)


def test_a_value_the_scenario_refuses_is_blamed_on_the_sweep_key(tmp_path):
    message = _error(tmp_path, {"grid": {"fl.clients_per_round": [3, 50]}})
    assert "grid.fl.clients_per_round: the run with fl.clients_per_round=50:" in message
    assert "more than the population (8 devices)" in message
    message = _error(tmp_path, {"grid": {"selection": [{"name": "random", "params": {"x": 1}}]}})
    assert "grid.selection: the run with selection=" in message


def test_cli_bad_sweep_is_one_line_exit_2(tmp_path, capsys):
    path = _sweep(tmp_path, {"grid": {"fl.roundz": [1]}})
    assert main(["sweep", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "grid.fl.roundz: no key 'roundz' in fl; did you mean 'rounds'?" in err


def test_example_sweep_is_valid(capsys):
    sweep = load_sweep("examples/quickstart_strategies.yaml")
    assert sweep.name == "quickstart-strategies"
    assert len(sweep.runs) == 4 * 6  # random, FedCS, MAB-CS, RBCS-F x 6 seeds
    assert {r.scenario.name for r in sweep.runs} == {"quickstart"}
    assert main(["sweep", "examples/quickstart_strategies.yaml", "--dry-run"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 24
