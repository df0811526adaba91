"""Fairness metrics (Jain's index, eq. (3) of 000) and the strategy score log."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netfl.recorder.strategy import SCHEMA, ScoreLog
from netfl.selection.rbcs_f import RBCSF
from netfl.trace.metrics import (
    backlogs,
    cumulative_selection_counts,
    jain_index,
    jain_over_rounds,
    score_matrix,
    selection_counts,
)
from tests.selection_helpers import ctx, feedback, info, ready


def test_jain_known_values():
    assert jain_index([5, 5, 5, 5]) == 1.0
    assert jain_index([0, 0, 7, 0]) == 0.25  # 1/K: one client has everything
    assert jain_index([1, 2, 3]) == pytest.approx(36 / (3 * 14))
    assert jain_index([1, np.nan, 3]) == pytest.approx(16 / (2 * 10))  # NaN left out
    assert np.isnan(jain_index([0, 0]))
    assert np.isnan(jain_index([]))
    with pytest.raises(ValueError, match="non-negative"):
        jain_index([1, -1])


@given(
    st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=50).filter(
        lambda xs: sum(xs) > 1e-3
    ),
    st.floats(1e-3, 1e3),
)
@settings(max_examples=200, deadline=None)
def test_jain_is_between_1_over_k_and_1_and_scale_free(values, scale):
    j = jain_index(values)
    assert 1 / len(values) - 1e-12 <= j <= 1 + 1e-12
    assert jain_index(np.asarray(values) * scale) == pytest.approx(j, rel=1e-9)


def _rounds() -> pd.DataFrame:
    return pd.DataFrame(
        {"round": [0, 1, 2], "selected": [[0, 1], [1, 2], [1]], "completed": [[0], [1, 2], []]}
    )


def test_selection_counts_and_cumulative_jain():
    rounds = _rounds()
    assert selection_counts(rounds["selected"], 4).tolist() == [1, 3, 1, 0]
    assert cumulative_selection_counts(rounds, 4, "completed").tolist() == [
        [1, 0, 0, 0],
        [1, 1, 1, 0],
        [1, 1, 1, 0],
    ]
    jain = jain_over_rounds(rounds, 4)
    assert jain.index.tolist() == [0, 1, 2]
    assert jain.tolist() == pytest.approx(
        [jain_index([1, 1, 0, 0]), jain_index([1, 2, 1, 0]), jain_index([1, 3, 1, 0])]
    )


def test_score_log_records_rbcs_f_backlogs_per_round():
    strategy = ready(RBCSF(beta=0.25, V=1.0), info(4, budget=2, model_size_bits=20e6))
    log = ScoreLog()
    features = {"mu": [1.0] * 4, "bandwidth_hz": [3e6] * 4}
    z = np.zeros(4)
    expected = []
    for r in range(5):
        chosen = strategy.select(ctx(range(4), 2, round_=r, features=features))
        log.record(r, 10.0 * r, strategy.scores())
        expected.append(z.copy())  # the backlogs the selection used
        strategy.observe(feedback(chosen, round_=r, exchange=[3.0] * len(chosen)))
        # eq. (6) of 003: Z_{t+1,n} = [Z_{t,n} + beta - x_{t,n}]^+, beta = 0.25
        z = np.maximum(z + 0.25 - np.isin(range(4), chosen), 0.0)
    table = log.to_arrow()
    assert table.schema == SCHEMA
    frame = table.to_pandas()
    assert np.allclose(backlogs(frame).to_numpy(), expected)
    assert score_matrix(frame, "tau_bar").shape == (5, 4)
    assert frame["t_s"].unique().tolist() == [0.0, 10.0, 20.0, 30.0, 40.0]
    assert len(log) == len(frame) == 5 * 3 * 4


def test_empty_score_log_has_the_schema():
    assert ScoreLog().to_arrow().schema == SCHEMA
