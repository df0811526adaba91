"""Plug-in trust (issue 16, item 6): ``--no-plugins`` refuses ``package.module:Name``
before importing it; the scenario reference says that naming a plug-in imports code."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from netfl.cli import main
from netfl.registry import strategies
from netfl.registry_entry import load_target, no_plugins, plugins_allowed

ROOT = Path(__file__).resolve().parents[1]

PLUGIN = """
from pathlib import Path
Path({marker!r}).write_text("imported")
from netfl.selection.random import RandomSelection as Mine
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """A module on sys.path that leaves a marker file when it is imported."""
    name = f"netfl_test_plugin_{tmp_path.name.replace('-', '_')}"
    marker = tmp_path / "imported.txt"
    (tmp_path / f"{name}.py").write_text(PLUGIN.format(marker=str(marker)))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name, marker
    sys.modules.pop(name, None)


def test_plugin_is_imported_by_default(plugin, capsys) -> None:
    name, marker = plugin
    assert main(["validate", "quickstart", "--set", f"selection.name={name}:Mine"]) == 0
    assert marker.exists()


@pytest.mark.parametrize("command", ["validate", "simulate"])
def test_no_plugins_refuses_before_importing(plugin, capsys, command, tmp_path) -> None:
    name, marker = plugin
    args = [command, "quickstart", "--no-plugins", "--set", f"selection.name={name}:Mine"]
    if command == "simulate":
        args += ["--out", str(tmp_path / "run"), "--quiet"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"selection.name: '{name}:Mine' names a plug-in" in err
    assert "--no-plugins allows only the registered strategy names" in err
    assert not marker.exists() and name not in sys.modules
    assert not (tmp_path / "run").exists()


def test_os_system_refused_without_import(monkeypatch, capsys) -> None:
    imported: list[str] = []

    def load(target: str) -> object:
        imported.append(target)
        return load_target(target)

    monkeypatch.setattr("netfl.registry.load_target", load)
    code = main(["validate", "quickstart", "--no-plugins", "--set", "selection.name=os:system"])
    assert code == 2
    assert "'os:system' names a plug-in" in capsys.readouterr().err
    assert imported and "os:system" not in imported  # registered ones still load
    assert plugins_allowed()  # switched back on after the command


def test_registered_names_and_entry_points_under_no_plugins() -> None:
    with no_plugins():
        assert "random" in strategies()
        assert "x.y:Z" not in strategies()
    assert "x.y:Z" in strategies()


def test_scenario_reference_documents_the_trust_boundary() -> None:
    text = (ROOT / "docs" / "scenario.md").read_text()
    assert "**Plug-ins run code.**" in text and "`--no-plugins`" in text


def test_sweep_no_plugins_refuses_before_importing(plugin, tmp_path, capsys) -> None:
    name, marker = plugin
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        f"name: s\nbase: {ROOT / 'scenarios' / 'quickstart.yaml'}\n"
        f"grid:\n  selection:\n    - {{name: random}}\n    - {{name: '{name}:Mine'}}\n"
    )
    assert main(["sweep", str(sweep), "--dry-run", "--no-plugins"]) == 2
    assert "--no-plugins allows only the registered strategy names" in capsys.readouterr().err
    assert not marker.exists()
    assert main(["sweep", str(sweep), "--dry-run"]) == 0
    assert marker.exists()


# -- a plug-in that raises or exits is bad input naming its key (issue 34, part 3) --------

FAILING = """
import sys
from netfl.learning.models import digits_mlp
from netfl.learning.datasets import load_digits
from netfl.selection.random import RandomSelection

def exits_model(input_shape, n_classes):
    sys.exit(0)

def exits_dataset(config, rng, n_clients):
    raise SystemExit(3)

def raising_model(input_shape, n_classes):
    raise KeyError("no such layer")

class RaisesInRound1(RandomSelection):
    def select(self, ctx):
        if ctx.round == 1:
            raise ZeroDivisionError("oops")
        return super().select(ctx)

class ExitsInRound1(RandomSelection):
    def select(self, ctx):
        if ctx.round == 1:
            sys.exit(0)
        return super().select(ctx)

def one_argument(updates):
    return updates.current, {}

def wrong_shape(updates, state):
    return {k: v[:1] for k, v in updates.current.items()}, state

def raising_rule(updates, state):
    raise ValueError("cannot aggregate")

def no_state(updates, state):
    return dict(updates.current), None
"""


@pytest.fixture
def failing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module of plug-ins that fail (its name), and two broken modules beside it."""
    name = f"netfl_failing_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(FAILING)
    (tmp_path / f"{name}_syntax.py").write_text("def build(:\n")
    (tmp_path / f"{name}_raises.py").write_text("raise RuntimeError('boom at import')\n")
    (tmp_path / f"{name}_exits.py").write_text("import sys\nsys.exit(0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for suffix in ("", "_syntax", "_raises", "_exits"):
        sys.modules.pop(name + suffix, None)


def _tiny(tmp_path: Path, **sets: str) -> list[str]:
    from tests.conftest import TINY

    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY))
    return [str(path), *(a for k, v in sets.items() for a in ("--set", f"{k}={v}"))]


@pytest.mark.parametrize(
    ("key", "target", "says"),
    [
        ("learning.model", "{m}:exits_model", "the plug-in '{m}:exits_model' called sys.exit(0)"),
        ("learning.dataset", "{m}:exits_dataset", "called sys.exit(3)"),
        ("learning.model", "{m}:raising_model", "raised KeyError: 'no such layer'"),
        ("learning.model", "{m}_syntax:build", "raised SyntaxError: invalid syntax"),
        ("learning.model", "{m}_raises:build", "raised RuntimeError: boom at import"),
        ("learning.model", "{m}_exits:build", "importing module '{m}_exits' called sys.exit(0)"),
        ("fl.aggregation.name", "{m}:one_argument", "must be callable as rule(updates, state"),
        ("fl.aggregation.name", "{m}:wrong_shape", "returned parameters of shape (1,)"),
        ("fl.aggregation.name", "{m}:raising_rule", "raised ValueError: cannot aggregate"),
        ("fl.aggregation.name", "{m}:no_state", "returned a NoneType as its state"),
    ],
)
@pytest.mark.parametrize("command", ["validate", "simulate"])
def test_a_failing_plugin_is_bad_input_naming_its_key(
    failing, tmp_path, capsys, command, key, target, says
) -> None:
    target, says = target.format(m=failing), says.format(m=failing)
    out = tmp_path / "run"
    extra = ["--out", str(out), "--quiet"] if command == "simulate" else []
    assert main([command, *_tiny(tmp_path, **{key: target}), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert f"{key}: " in err and says in err
    assert not out.exists()  # refused before the run directory


@pytest.mark.parametrize(
    ("strategy", "says"),
    [
        ("RaisesInRound1", "raised ZeroDivisionError: oops"),
        ("ExitsInRound1", "called sys.exit(0)"),
    ],
)
def test_a_strategy_failing_mid_run_is_bad_input_and_the_run_says_failed(
    failing, tmp_path, capsys, strategy, says
) -> None:
    out = tmp_path / "run"
    args = _tiny(tmp_path, **{"selection.name": f"{failing}:{strategy}"})
    assert main(["simulate", *args, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"selection.name: the plug-in '{failing}:{strategy}' {says}" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["rounds"] == 1
    assert says in summary["error"]


def test_every_registered_aggregation_rule_meets_the_plugin_contract() -> None:
    from netfl.learning.aggregation.base import validate_params
    from netfl.learning.aggregation.check import check_rule
    from netfl.registry import aggregations

    registry = aggregations()
    for name in registry.entries():
        rule = registry.load(name)
        check_rule(rule, validate_params(rule, {}))
