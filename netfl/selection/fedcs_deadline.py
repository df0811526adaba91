"""FedCS with full knowledge and a deadline: the "FedCS(3)" baseline of Huang et al. 2021.

Huang et al. 2021 Sec. 6.1 adapts FedCS to its setting by giving it the contexts and the static
coefficients, i.e. each client's true expected exchange time c^T theta*, and selecting
every client whose expected time is shorter than a preset deadline (3 s in the paper, so
that about m = 8 clients qualify). It reads that oracle time from the context feature
``expected_exchange_time_s`` (see :mod:`netfl.selection.observations`), which the server
reports only in scenarios that allow oracle knowledge.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import numpy as np
from pydantic import Field

from netfl.errors import Problem
from netfl.selection.base import Scores, SelectionContext, Strategy
from netfl.selection.fedcs import deadline_problems
from netfl.selection.observations import EXPECTED_EXCHANGE_TIME_S, require_feature
from netfl.selection.ranking import by_client

if TYPE_CHECKING:
    from netfl.config import Scenario


class FedCSDeadline(Strategy):
    """Select the candidates whose expected exchange time is shorter than the deadline.

    At most ``clients_per_round`` of them, the fastest first (Huang et al. 2021 lets the number
    float;
    set ``fl.clients_per_round`` to the population for that). May select fewer.

    Parameters
    ----------
    deadline_s
        The preset deadline (FedCS(3): 3 s); default ``fl.deadline_s``.
    """

    may_select_fewer = True

    def __init__(self, deadline_s: Annotated[float, Field(gt=0)] | None = None) -> None:
        self.deadline_s = deadline_s
        self._expected: dict[int, float] = {}

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        if len(ctx.candidates) == 0:
            self._expected = {}
            return []
        expected_s = require_feature(ctx, EXPECTED_EXCHANGE_TIME_S, "fedcs_deadline")
        self._expected = by_client(ctx.candidates, expected_s)
        deadline = self.deadline_s if self.deadline_s is not None else ctx.deadline_s
        fits = expected_s < deadline if deadline is not None else np.ones(len(expected_s), bool)
        fastest = np.argsort(expected_s, kind="stable")
        chosen = [int(ctx.candidates[i]) for i in fastest if fits[i]]
        return chosen[: ctx.budget]

    def scores(self) -> Scores:
        """``expected_exchange_time_s`` of the candidates (the oracle values used)."""
        return {"expected_exchange_time_s": self._expected}

    @classmethod
    def scenario_problems(cls, scenario: Scenario) -> list[Problem]:
        problems = super().scenario_problems(scenario)
        return problems + deadline_problems(scenario, "deadline_s", "fedcs_deadline")
