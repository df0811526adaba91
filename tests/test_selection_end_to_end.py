"""System-aware strategies driven by the simulator's server (timing only)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from netfl.scenario import scenario_from_data
from netfl.selection.oort import Oort
from netfl.simulation import simulate
from netfl.world import build_world


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("fedcs", {}),
        ("fedcs", {"form": "deadline"}),
        ("fedcs_extended", {}),
        ("mab_cs_naive", {"alpha": 10.0}),
        ("mab_cs_elementwise", {"beta": 5.0}),
    ],
)
def test_strategy_runs_in_the_simulator(tiny, tmp_path, name, params):
    tiny["learning"] = "none"
    tiny["fl"].update({"rounds": 6, "model_size_bits": 2e6, "deadline_s": 60.0})
    tiny["selection"] = {"name": name, "params": params}
    result = simulate(scenario_from_data(tiny), tmp_path / "run")
    assert result.summary["status"] == "completed"
    rounds = pd.read_parquet(result.run_dir / "rounds.parquet")
    assert len(rounds) == 6
    assert (rounds["n_selected"] <= 3).all()
    if params.get("form") != "deadline":
        assert (rounds["n_selected"] == 3).all()


def test_oort_learns_from_real_training_losses(tiny):
    tiny["fl"]["rounds"] = 4
    tiny["selection"] = {"name": "oort", "params": {"exploration_factor": 0.5}}
    world = build_world(scenario_from_data(tiny))
    world.env.process(world.server.run())
    world.env.run()
    oort = world.strategy
    assert isinstance(oort, Oort)
    tried = world.server.n_selected > 0
    assert (oort.count == world.server.n_selected).all()
    # Utility = samples x loss (about ln 10 for an untrained 10-class model), not the size.
    ratio = oort.reward[tried] / world.learner.n_samples[tried]
    assert np.all((ratio > 0.5) & (ratio < 5.0))
    assert np.isfinite(oort.duration_s[tried]).all()
