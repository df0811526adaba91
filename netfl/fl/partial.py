"""Partial work decided by the simulated clock (``fl.partial_work``).

FedProx (Li et al., MLSys 2020, Sec. 3-4) lets a device send a "gamma-inexact" solution:
fewer local steps than asked, instead of being dropped. netfl lets the device model decide
how many. The rule, for a selected client whose update is due by the limit L (the round
deadline, or T_final; under fedasync and fedbuff its own deadline from its download):

1. When its compute starts (after the download, any cold start and any queue wait), the
   client expects its upload to take U: the upload time it measured the last time it
   uploaded (what it reports in the resource request), or the model size over its
   nominal uplink rate this round if it never uploaded.
2. It trains until its local update is done or until L - U (less a nanosecond, so that
   rounding cannot put an upload of exactly U after L), whichever comes first; the
   device computes at its capacity, beside its background jobs, as for a full update.
   At L - U it keeps the whole SGD steps done (the step in progress is abandoned) and
   uploads them at once: a partial update of ``steps_done`` < ``steps_planned`` steps.
   A client that finished no step by then has nothing to send and waits to be cut at L
   (``deadline_miss``).
3. The upload then runs as any upload does. If it is slower than U (the cell is busier,
   a FedCS client waits for its turn) and misses L, the update is lost like any late
   one (``deadline_miss``): the client does not know the future, only what it measured.

The server aggregates the partial updates that arrive like full ones (their steps in
``rounds.parquet``; FedNova normalises by them); the learner trains exactly the first
``steps_done`` steps of each client's plan.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from netfl.fl.device import Devices, JobTiming

#: Relative slack on the work done, so that a step finished at the stop time (up to the
#: floating-point error of work / rate) counts as done.
_SLACK = 1e-9


def stop_time_s(limit_s: float, upload_s: float) -> float:
    """L - U, less a nanosecond (and a trillionth of L): an upload that takes exactly U
    must end at L or before, and (L - U) + U rounds to a hair after L about half the time."""
    return limit_s - upload_s - 1e-9 - 1e-12 * abs(limit_s)


@dataclass(frozen=True)
class PartialWork:
    """The rule above for one run.

    Parameters
    ----------
    planned_steps
        Per client, the local SGD steps of a full local update.
    steps_within
        (client, samples processed) -> whole steps done (the learner's arithmetic).
    expected_upload_s
        client -> the upload time U it expects now.
    on_steps
        Called with (client, steps done) when a client's steps are known (the
        asynchronous learner trains them lazily); None: nobody asks.
    """

    planned_steps: np.ndarray
    steps_within: Callable[[int, float], int]
    expected_upload_s: Callable[[int], float]
    on_steps: Callable[[int, int], None] | None = None

    def run(
        self, devices: Devices, client: int, work_samples: float, limit_s: float | None
    ) -> tuple[JobTiming, int, int]:
        """The client's compute job, stopped at L - U: (timing, steps planned, steps done)."""
        planned = int(self.planned_steps[client])
        stop_s = (
            math.inf if limit_s is None else stop_time_s(limit_s, self.expected_upload_s(client))
        )
        timing = devices.run_job_until(client, work_samples, stop_s)
        done = planned
        if timing.done_fraction < 1.0:
            samples = timing.done_fraction * work_samples * (1 + _SLACK)
            done = min(int(self.steps_within(client, samples)), planned)
        if self.on_steps is not None:
            self.on_steps(client, done)
        return timing, planned, done
