"""Extended FedCS (Yoshida et al. 2020 Sec. IV-C).

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
    """FedCS on moving averages of the observed times (Extended FedCS of Yoshida et al. 2020).

    Every round a client was selected in adds what the server observed of it
    (``RoundFeedback.observed_update_time_s`` / ``observed_upload_time_s``): the measured
    times, or for a client that left before finishing a step the time it was seen to
    spend in it (a lower bound, as the reports FedCS schedules with; ``docs/protocol.md``).
    A client never observed in a step is scheduled with its reported time for it (0 before
    its first participation, Yoshida et al. 2020, Sec. II).

    Parameters
    ----------
    window
        How many of the latest observations to average (5 in Yoshida et al. 2020).
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
        return (
            _window_mean(self._update_s[c], ctx.update_time_s),
            _window_mean(self._upload_s[c], ctx.upload_time_s),
        )

    def observe(self, feedback: RoundFeedback) -> None:
        seen = np.isfinite(feedback.observed_update_time_s)
        clients = feedback.selected[seen]
        slots = self._next[clients] % self.window
        self._update_s[clients, slots] = feedback.observed_update_time_s[seen]
        self._upload_s[clients, slots] = feedback.observed_upload_time_s[seen]
        self._next[clients] += 1


def _window_mean(window: np.ndarray, reported: np.ndarray) -> np.ndarray:
    """Each row's mean over its observations (NaN: none), the reported time where none."""
    counts = np.isfinite(window).sum(axis=1)
    sums = np.where(np.isfinite(window), window, 0.0).sum(axis=1)
    return np.where(counts > 0, sums / np.maximum(counts, 1), reported)
