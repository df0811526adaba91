"""What every learning-aware strategy shares: conformance with polling, the score log."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from netfl.registry import strategies
from netfl.scenario import scenario_from_data
from netfl.selection.base import LEARNING_SIGNALS, POLL_SIGNALS, make_strategy
from netfl.selection.check import check_strategy
from netfl.simulation import simulate

LEARNING_AWARE = ["ucb_cs", "pow_d", "rpow_d", "oort", "gpfl", "nccb", "k_linucb"]


@pytest.mark.parametrize("name", LEARNING_AWARE)
def test_declarations_and_score_log(name):
    cls = strategies().load(name)
    assert cls.requires and cls.requires <= LEARNING_SIGNALS
    assert cls.poll_signal in POLL_SIGNALS | {None}
    assert cls.poll_signal == min(cls.requires & POLL_SIGNALS, default=None)
    built = []
    check_strategy(lambda: built.append(make_strategy(cls, {})) or built[-1], n_clients=30)
    scores = built[-1].scores()
    assert scores, f"{name} logs no scores"
    for score, values in scores.items():
        assert isinstance(score, str)
        for client, value in values.items():
            assert isinstance(client, int) and 0 <= client < 30
            assert not math.isnan(value)


@pytest.mark.parametrize(("name", "polls"), [("pow_d", "poll_loss"), ("gpfl", "update_vector")])
def test_polling_strategies_declare_what_they_poll(name, polls):
    cls = strategies().load(name)
    assert cls.poll_signal == polls
    assert polls in cls.requires


def test_rpow_d_runs_on_real_training_losses(tiny, tmp_path):
    # rpow-d needs only the mean local losses that the server already reports. The
    # tiny scenario has 6 clients and selects 3: d = 2m = 6 covers everyone, so the two
    # first rounds try the never-heard-from clients (stale loss +inf), then the losses
    # decide.
    tiny["fl"]["rounds"] = 4
    tiny["selection"] = {"name": "rpow_d"}
    result = simulate(scenario_from_data(tiny), tmp_path / "run")
    assert result.summary["status"] == "completed"
    rounds = pd.read_parquet(result.run_dir / "rounds.parquet")
    first, second = (set(s.tolist()) for s in rounds["selected"][:2])
    assert len(first) == len(second) == 3 and first | second == set(range(6))
