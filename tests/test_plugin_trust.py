"""Plug-in trust (issue 16, item 6): ``--no-plugins`` refuses ``package.module:Name``
before importing it; the scenario reference says that naming a plug-in imports code."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

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
