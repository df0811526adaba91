"""FedCS client selection (Nishio & Yonetani, ICC 2019) as restated in Yoshida et al. 2020.

Greedy scheduling by the round-time increment T_inc of eqs. (1)-(2) (Algorithm 1), on the
update and upload times the clients reported in the resource request: their last
observed times, 0 for a client never selected (Yoshida et al. 2020 Sec. II).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Literal

import numpy as np
from pydantic import Field

from netfl.errors import Problem
from netfl.selection.base import Scores, SelectionContext, Strategy
from netfl.selection.ranking import by_client
from netfl.selection.tinc import greedy_schedule

if TYPE_CHECKING:
    from netfl.config import Scenario


class FedCS(Strategy):
    """FedCS: add the client that lengthens the round least, eq. (1), until done.

    Parameters
    ----------
    form
        ``"budget"``: select ``clients_per_round`` clients (Algorithm 1 of Yoshida et al. 2020, the
        form
        MAB-CS compares against). ``"deadline"``: the original FedCS, which keeps adding
        clients while the scheduled update-and-upload still ends by the round deadline
        T_round, so it maximises the number of clients that fit (at most the budget; set
        ``fl.clients_per_round`` to the population for the unbounded original). It may
        select fewer than the budget.
    deadline_s
        T_round for the ``"deadline"`` form; default ``fl.deadline_s``.
    """

    supports_async = True

    def __init__(
        self,
        form: Literal["budget", "deadline"] = "budget",
        deadline_s: Annotated[float, Field(gt=0)] | None = None,
    ) -> None:
        self.form = form
        self.deadline_s = deadline_s
        self.may_select_fewer = form == "deadline"
        self._increments: dict[int, float] = {}

    def estimates(self, ctx: SelectionContext) -> tuple[np.ndarray, np.ndarray]:
        """Per-candidate (t^UD, t^UL) to schedule with; FedCS uses the reported ones."""
        return ctx.update_time_s, ctx.upload_time_s

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        if len(ctx.candidates) == 0:
            self._increments = {}
            return []
        update_s, upload_s = self.estimates(ctx)
        shuffle = self.rng.permutation(len(ctx.candidates))  # random tie-breaking
        deadline = self.deadline_s if self.deadline_s is not None else ctx.deadline_s
        schedule = greedy_schedule(
            np.asarray(update_s, dtype=float)[shuffle],
            np.asarray(upload_s, dtype=float)[shuffle],
            min(ctx.budget, len(ctx.candidates)),
            deadline_s=deadline if self.form == "deadline" else None,
        )
        chosen = ctx.candidates[shuffle][schedule.order]
        self._increments = by_client(chosen, schedule.increments_s)
        return [int(c) for c in chosen]

    def scores(self) -> Scores:
        """``t_inc``: the estimated T_inc of each selected client when it was added."""
        return {"t_inc": self._increments}

    @classmethod
    def scenario_problems(cls, scenario: Scenario) -> list[Problem]:
        problems = super().scenario_problems(scenario)
        params = scenario.selection.params
        if params.get("form") == "deadline":
            problems += deadline_problems(scenario, "form", "the 'deadline' form")
        return problems


def deadline_problems(scenario: Scenario, key: str, what: str) -> list[Problem]:
    """A problem at ``selection.params.<key>`` if neither the params nor fl set a deadline."""
    if scenario.selection.params.get("deadline_s") is None and scenario.fl.deadline_s is None:
        return [
            Problem(
                f"selection.params.{key}",
                f"{what} needs a round deadline: set fl.deadline_s or selection.params.deadline_s",
            )
        ]
    return []
