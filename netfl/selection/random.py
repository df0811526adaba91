"""Uniform random selection, the FedAvg baseline (McMahan et al., AISTATS 2017)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from netfl.selection.base import SelectionContext, Strategy
from netfl.selection.ranking import draw_by_size


class RandomSelection(Strategy):
    """Select ``budget`` candidates uniformly without replacement.

    Parameters
    ----------
    weighted
        If true, draw without replacement with probability proportional to the clients'
        data sizes (the p_k-proportional sampling of Cho et al. 2020, pi_rand).
    """

    supports_async = True

    def __init__(self, weighted: bool = False) -> None:
        self.weighted = weighted

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        n = ctx.n_candidates
        k = min(ctx.budget, n)
        if k == 0:
            return []
        if self.weighted:
            chosen = draw_by_size(ctx.candidates, ctx.n_samples, k, self.rng)
        elif k == 1:
            # ``choice(candidates, 1, replace=False)`` is one step of Floyd's algorithm: one
            # bounded integer in [0, n), the very draw ``integers(n)`` makes (same value,
            # same generator state after; tests/test_selection.py checks it), without
            # choice's per-call work (the asynchronous protocols select one at a time).
            # n_candidates and candidate(j): an asynchronous server's context does not
            # gather its thousands of idle candidates for one pick.
            return [ctx.candidate(int(self.rng.integers(n)))]
        else:
            chosen = self.rng.choice(ctx.candidates, size=k, replace=False)
        return [int(c) for c in np.asarray(chosen)]
