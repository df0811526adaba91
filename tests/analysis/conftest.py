"""Small runs shared by the analysis tests (built once per session, seconds in all)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from netfl.scenario import scenario_from_data
from netfl.simulation import simulate
from netfl.sweep import load_sweep, run_sweep
from tests.conftest import TINY

#: Timing only (no model): the shared tiny scenario with 8 devices and a deadline that cuts
#: the slowest uploads.
TIMING: dict[str, Any] = copy.deepcopy(TINY)
TIMING["name"] = "timing"
TIMING["seed"] = 1
TIMING["devices"]["groups"][0]["count"] = 8
TIMING["fl"] = {"rounds": 6, "clients_per_round": 3, "model_size_bits": 1.0e6, "deadline_s": 2.5}
TIMING["learning"] = "none"

#: Real training on digits, small enough for about a second per run.
LEARNING: dict[str, Any] = {
    **TIMING,
    "name": "digits",
    "fl": {"rounds": 4, "clients_per_round": 3},
    "learning": {
        "dataset": "digits",
        "model": "digits_mlp",
        "local_epochs": 1,
        "lr": 0.1,
        "target_accuracy": 0.3,
        "device": "cpu",
    },
}


def write_sweep(folder: Path, base: dict[str, Any], body: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "base.yaml").write_text(yaml.safe_dump(base, sort_keys=False))
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump({"base": "base.yaml", **body}, sort_keys=False))
    return path


STRATEGY_GRID = {"grid": {"selection.params": [{}, {"weighted": True}]}, "seeds": [1, 2]}


@pytest.fixture(scope="session")
def timing_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A timing-only sweep: random vs weighted random x seeds 1, 2 (4 runs)."""
    folder = tmp_path_factory.mktemp("timing")
    sweep = load_sweep(write_sweep(folder, TIMING, STRATEGY_GRID))
    return run_sweep(sweep, folder / "out", progress="quiet").sweep_dir


@pytest.fixture(scope="session")
def digits_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same grid with real training (for accuracy curves and comparisons)."""
    folder = tmp_path_factory.mktemp("digits")
    sweep = load_sweep(write_sweep(folder, LEARNING, STRATEGY_GRID))
    return run_sweep(sweep, folder / "out", progress="quiet").sweep_dir


@pytest.fixture(scope="session")
def digits_run(digits_sweep: Path) -> Path:
    return next(p for p in sorted((digits_sweep / "runs").iterdir()) if p.name.startswith("s1-"))


@pytest.fixture(scope="session")
def timing_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("single") / "run"
    return simulate(scenario_from_data(TIMING), out).run_dir
