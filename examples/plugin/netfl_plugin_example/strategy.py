"""A client-selection strategy: the candidates that reported the shortest round trip."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from netfl.selection.base import SelectionContext, Strategy


class Fastest(Strategy):
    """Select the candidates with the shortest reported update + upload time.

    A candidate never observed reports 0 s and so is tried first; ``explore`` of the
    budget goes to candidates drawn at random instead, so slow clients are not starved.

    Parameters
    ----------
    explore
        Fraction of the budget filled at random, in [0, 1].
    """

    supports_async = True  # its logic needs no whole synchronous rounds

    def __init__(self, explore: float = 0.1) -> None:
        if not 0.0 <= explore <= 1.0:
            raise ValueError(f"explore is a fraction in [0, 1], got {explore}")
        self.explore = explore

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        k = min(ctx.budget, len(ctx.candidates))
        n_random = round(self.explore * k)
        order = np.argsort(ctx.update_time_s + ctx.upload_time_s, kind="stable")
        chosen = [int(c) for c in ctx.candidates[order[: k - n_random]]]
        rest = np.setdiff1d(ctx.candidates, chosen)
        if n_random and len(rest):
            drawn = self.rng.choice(rest, size=min(n_random, len(rest)), replace=False)
            chosen += [int(c) for c in drawn]
        return chosen
