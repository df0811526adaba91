"""docs/extending.md and its example package: installed with pip, each plug-in passes its
conformance check, the example scenario validates and runs end to end, and the page shows
the package's files as they are (issue 25, item 1)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from netfl.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "plugin"
PAGE = ROOT / "docs" / "extending.md"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example package installed with pip into a folder of its own (from a copy, so
    the build leaves nothing in the repository; no network, no build isolation)."""
    work = tmp_path_factory.mktemp("plugin")
    source = shutil.copytree(EXAMPLE, work / "source")
    target = work / "site-packages"
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--no-index",
        "--no-build-isolation",
        "--target",
        str(target),
        str(source),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return target


@pytest.fixture
def on_path(installed: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The installed package importable, and its entry points visible, in this process."""
    monkeypatch.syspath_prepend(str(installed))
    return installed


#: A code block of the page labelled with the file it shows.
BLOCK = re.compile(r"`(examples/plugin/[^`]+)`:\n\n```(\w+)\n(.*?)```\n", re.DOTALL)


def test_the_page_shows_the_package_files_as_they_are():
    """Every code block labelled with a file of examples/plugin is that file, whole
    (``python tests/test_extending.py`` rewrites the blocks from the files)."""
    blocks = BLOCK.findall(PAGE.read_text(encoding="utf-8"))
    shown = {path for path, _, _ in blocks}
    files = {p.relative_to(ROOT).as_posix() for p in EXAMPLE.rglob("*") if p.is_file()}
    files = {f for f in files if not f.endswith("__init__.py") and "__pycache__" not in f}
    assert shown == files
    for path, _, text in blocks:
        assert text == (ROOT / path).read_text(encoding="utf-8"), path


def test_each_plugin_passes_its_conformance_check(on_path, tmp_path):
    from netfl_plugin_example.channel import LOG_DISTANCE
    from netfl_plugin_example.dataset import load_npz, make_bars
    from netfl_plugin_example.model import small_cnn
    from netfl_plugin_example.strategy import Fastest

    from channel_models.protocol import check_channel_model
    from netfl.config.learning import LearningConfig
    from netfl.learning.check import check_dataset, check_model
    from netfl.selection.check import check_strategy

    check_strategy(lambda: Fastest(explore=0.25))
    assert check_channel_model(LOG_DISTANCE, 2.0e9) == []
    make_bars(tmp_path)
    dataset = check_dataset(load_npz, LearningConfig(dataset="npz", data_root=str(tmp_path)), 4)
    assert dataset.input_shape == (1, 8, 8) and dataset.n_classes == 4
    check_model(small_cnn, dataset.input_shape, dataset.n_classes)


def test_the_trimmed_mean_drops_the_extremes_of_each_coordinate(on_path):
    """Yin et al. 2018, Definition 2, by hand: five clients, beta = 0.2 trims one value at
    each end of every coordinate; the data sizes do not weigh."""
    import torch
    from netfl_plugin_example.aggregation import trimmed_mean

    from netfl.learning.aggregation.base import ClientUpdates, validate_params

    stacked = torch.tensor([[1.0, -50.0], [2.0, 0.0], [3.0, 1.0], [4.0, 2.0], [100.0, 3.0]])
    updates = ClientUpdates(
        current={"w": torch.zeros(2)},
        stacked={"w": stacked},
        weights=torch.tensor([1.0, 1.0, 1.0, 1.0, 1000.0]),
    )
    parameters, state = trimmed_mean(updates, {}, beta=0.2)
    assert parameters["w"].tolist() == [3.0, 1.0] and state == {}
    assert trimmed_mean(updates, {}, beta=0.0)[0]["w"].tolist() == pytest.approx([22.0, -8.8])
    with pytest.raises(ValueError, match="beta"):
        validate_params(trimmed_mean, {"beta": 0.5})


def test_the_log_distance_model_is_free_space_at_one_metre():
    """FSPL(1 m, 2 GHz) = 20 log10(4 pi 2e9 / c) = 38.46 dB (Rappaport eq. (4.5)); every
    decade of distance adds 10 n dB."""
    sys.path.insert(0, str(EXAMPLE))
    try:
        from netfl_plugin_example.channel import LogDistance
    finally:
        sys.path.remove(str(EXAMPLE))
    model = LogDistance(exponent=3.5)
    loss = model.pathloss_db([10.0, 100.0], 2.0e9, 10.0, 1.5)
    assert loss[0] == pytest.approx(38.46 + 35.0, abs=0.01)
    assert loss[1] - loss[0] == pytest.approx(35.0)


def test_the_plugins_are_listed_by_their_entry_point_names(on_path, capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name, target in (
        ("fastest", "netfl_plugin_example.strategy:Fastest"),
        ("log_distance", "netfl_plugin_example.channel:LOG_DISTANCE"),
        ("small_cnn", "netfl_plugin_example.model:small_cnn"),
        ("npz", "netfl_plugin_example.dataset:load_npz"),
        ("trimmed_mean", "netfl_plugin_example.aggregation:trimmed_mean"),
    ):
        assert re.search(rf"^  {name}\s+\(plug-in from {target}\)$", out, re.MULTILINE), name


def test_the_example_scenario_validates_and_runs(on_path, tmp_path, capsys):
    """What docs/extending.md tells a new user to run, end to end: a small CNN learns the
    numpy dataset under the plug-in strategy and channel model."""
    from netfl_plugin_example.dataset import make_bars

    make_bars(tmp_path / "bars")
    scenario = str(EXAMPLE / "scenario.yaml")
    data = ["--set", f"learning.data_root={tmp_path / 'bars'}"]
    assert main(["validate", scenario, *data]) == 0
    assert "ok (12 clients, strategy 'fastest')" in capsys.readouterr().out
    out = tmp_path / "run"
    assert main(["simulate", scenario, *data, "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["rounds"] == 8
    assert summary["final_accuracy"] > 0.9  # 4 classes; 1.0 in 8 rounds with seed 1
    resolved = (out / "scenario.resolved.yaml").read_text()
    assert "channel_model: log_distance" in resolved and "model: small_cnn" in resolved
    assert "name: trimmed_mean" in resolved


def _write_module(folder: Path, name: str, text: str) -> None:
    (folder / f"{name}.py").write_text(text)


def test_a_wrong_model_signature_fails_validate_in_one_line(tmp_path, monkeypatch, capsys):
    _write_module(
        tmp_path,
        "mynets",
        "from torch import nn\n\ndef cnn(channels, classes, width):\n    return nn.Linear(1, 1)\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["validate", "quickstart", "--set", "learning.model=mynets:cnn"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(
        "error: --set learning.model=mynets:cnn: learning.model: 'mynets:cnn' must be callable"
        " as build(input_shape, n_classes) -> torch.nn.Module; its signature is"
        " (channels, classes, width)"
    )


def test_simulate_refuses_a_broken_plugin_before_writing_anything(tmp_path, monkeypatch, capsys):
    _write_module(
        tmp_path,
        "widenets",
        "import math\nfrom torch import nn\n\n"
        "def wide(input_shape, n_classes):\n"
        "    return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(input_shape), 3))\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "run"
    args = ["simulate", "quickstart", "--set", "learning.model=widenets:wide", "--out", str(out)]
    assert main([*args, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "learning.model: 'widenets:wide' a batch of 6 gives outputs of shape (6, 3)" in err
    assert not out.exists()


def test_a_sweep_with_a_broken_plugin_stops_before_any_run(tmp_path, monkeypatch, tiny):
    """Checked once per learning section while the sweep is read: the varied model that
    breaks the contract is named with the sweep key that chose it."""
    import yaml

    from netfl.errors import ScenarioError
    from netfl.sweep import load_sweep

    _write_module(
        tmp_path,
        "sweepnets",
        "import math\nfrom torch import nn\n\n"
        "def ok(input_shape, n_classes):\n"
        "    return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(input_shape), n_classes))\n\n"
        "def broken(input_shape):\n    return ok(input_shape, 10)\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(tiny))
    sweep = tmp_path / "sweep.yaml"
    grid = {"learning.model": ["sweepnets:ok", "sweepnets:broken"]}
    sweep.write_text(yaml.safe_dump({"base": "base.yaml", "grid": grid, "seeds": 3}))
    with pytest.raises(ScenarioError) as info:
        load_sweep(sweep)
    message = str(info.value)
    assert message.startswith(f"{sweep}:") and "grid.learning.model" in message
    assert "'sweepnets:broken' must be callable as build(input_shape, n_classes)" in message


def test_a_module_that_is_not_importable_says_how_to_make_it_so(capsys):
    assert main(["validate", "quickstart", "--set", "learning.model=not_installed_pkg:net"]) == 2
    err = capsys.readouterr().err
    assert "install its package" in err and "PYTHONPATH" in err and "docs/extending.md" in err


if __name__ == "__main__":  # rewrite the page's code blocks from the example's files
    PAGE.write_text(
        BLOCK.sub(
            lambda m: f"`{m[1]}`:\n\n```{m[2]}\n{(ROOT / m[1]).read_text(encoding='utf-8')}```\n",
            PAGE.read_text(encoding="utf-8"),
        ),
        encoding="utf-8",
    )
