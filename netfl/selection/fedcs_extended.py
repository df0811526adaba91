"""Extended FedCS (002_27b575cdfe8e08e6.txt Sec. IV-C).

FedCS scheduling (Algorithm 1, T_inc of eq. (1)) on the moving average of each client's
last five observed model update and upload times instead of the last one only.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from netfl.selection.base import PopulationInfo, RoundFeedback, SelectionContext
from netfl.selection.fedcs import FedCS


class FedCSExtended(FedCS):
    """FedCS on moving averages of the observed times (Extended FedCS of 002).

    Only times the server observed enter the average (a client that missed the deadline
    adds nothing, as the reports FedCS schedules with); a client never observed is
    scheduled with its reported times (0 before its first participation, 002 Sec. II).

    Parameters
    ----------
    window
        How many of the latest observations to average (5 in 002).
    form, deadline_s
        As for :class:`~netfl.selection.fedcs.FedCS`.
    """

    def __init__(
        self,
        window: Annotated[int, Field(ge=1)] = 5,
        form: Literal["budget", "deadline"] = "budget",
        deadline_s: Annotated[float, Field(gt=0)] | None = None,
    ) -> None:
        super().__init__(form=form, deadline_s=deadline_s)
        self.window = window

    def setup(self, info: PopulationInfo, rng: np.random.Generator) -> None:
        super().setup(info, rng)
        # Ring buffers of the latest observations, NaN where not yet filled.
        self._update_s = np.full((info.n_clients, self.window), np.nan)
        self._upload_s = np.full((info.n_clients, self.window), np.nan)
        self._next = np.zeros(info.n_clients, dtype=np.int64)

    def estimates(self, ctx: SelectionContext) -> tuple[np.ndarray, np.ndarray]:
        c = ctx.candidates
        seen = np.isfinite(self._update_s[c]).any(axis=1)
        update = ctx.update_time_s.astype(float).copy()
        upload = ctx.upload_time_s.astype(float).copy()
        update[seen] = np.nanmean(self._update_s[c[seen]], axis=1)
        upload[seen] = np.nanmean(self._upload_s[c[seen]], axis=1)
        return update, upload

    def observe(self, feedback: RoundFeedback) -> None:
        both = np.isfinite(feedback.update_time_s) & np.isfinite(feedback.upload_time_s)
        clients = feedback.selected[both]
        slots = self._next[clients] % self.window
        self._update_s[clients, slots] = feedback.update_time_s[both]
        self._upload_s[clients, slots] = feedback.upload_time_s[both]
        self._next[clients] += 1
