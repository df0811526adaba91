"""A strategy that fails on demand, to test that one failed run does not stop a sweep."""

from __future__ import annotations

from collections.abc import Sequence

from netfl.selection.base import SelectionContext, Strategy


class Exploding(Strategy):
    """Random-free: the first ``budget`` candidates; raises in round 1 if ``explode``."""

    def __init__(self, explode: bool = False) -> None:
        self.explode = explode

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        if self.explode and ctx.round == 1:
            raise RuntimeError("boom in round 1")
        return [int(c) for c in ctx.candidates[: ctx.budget]]
