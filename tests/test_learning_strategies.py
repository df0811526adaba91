"""What every learning-aware strategy shares: conformance with polling, the score log."""

from __future__ import annotations

import math

import pytest

from netfl.registry import strategies
from netfl.selection.base import LEARNING_SIGNALS, POLL_SIGNALS, make_strategy
from netfl.selection.check import check_strategy

LEARNING_AWARE = ["ucb_cs", "pow_d", "rpow_d", "gpfl", "nccb", "k_linucb"]


@pytest.mark.parametrize("name", LEARNING_AWARE)
def test_declarations_and_score_log(name):
    cls = strategies().load(name)
    assert cls.requires and cls.requires <= LEARNING_SIGNALS
    assert cls.poll_signal in POLL_SIGNALS
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
