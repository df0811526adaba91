"""Ranking and sampling helpers of the bandit strategies."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from netfl.selection.ranking import draw_by_size, top_k

scores_st = st.lists(
    st.one_of(
        st.floats(-1e6, 1e6, allow_nan=False),
        st.sampled_from([np.nan, np.inf, -np.inf, 0.0, 1.0]),
    ),
    max_size=30,
)


def _rank_value(x: float) -> float:
    return -np.inf if np.isnan(x) else x


@given(scores_st, st.integers(0, 40), st.integers(0, 2**32 - 1))
def test_top_k_takes_the_k_largest_nan_last(scores, k, seed):
    picked = top_k(np.array(scores, dtype=float), k, np.random.default_rng(seed))
    assert len(picked) == min(k, len(scores)) == len(set(picked.tolist()))
    chosen = [scores[i] for i in picked]
    left = [scores[i] for i in range(len(scores)) if i not in set(picked.tolist())]
    if chosen and left:
        worst_chosen = min(chosen, key=_rank_value)
        best_left = max(left, key=_rank_value)
        assert _rank_value(worst_chosen) >= _rank_value(best_left)
        # A NaN is chosen only when every left-over score is NaN too.
        assert not np.isnan(worst_chosen) or all(np.isnan(x) for x in left)
    assert [_rank_value(x) for x in chosen] == sorted(map(_rank_value, chosen), reverse=True)


def test_top_k_breaks_ties_uniformly():
    rng = np.random.default_rng(0)
    counts = np.zeros(4)
    for _ in range(4000):
        counts[top_k(np.array([1.0, 5.0, 5.0, 5.0]), 1, rng)] += 1
    assert counts[0] == 0
    assert np.allclose(counts[1:] / 4000, 1 / 3, atol=0.03)


@given(
    st.lists(st.integers(0, 100), min_size=1, max_size=20),
    st.integers(0, 25),
    st.integers(0, 2**32 - 1),
)
def test_draw_by_size_returns_distinct_candidates(sizes, size, seed):
    candidates = np.arange(100, 100 + len(sizes))
    drawn = draw_by_size(candidates, np.array(sizes), size, np.random.default_rng(seed))
    assert len(drawn) == min(size, len(sizes)) == len(set(drawn.tolist()))
    assert set(drawn.tolist()) <= set(candidates.tolist())
    positive = candidates[np.array(sizes) > 0]
    if len(positive) >= len(drawn):  # zero-size clients only fill what the others cannot
        assert set(drawn.tolist()) <= set(positive.tolist())
