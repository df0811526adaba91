"""Background compute jobs on a device, and how long they delay an FL job.

Each device serves background jobs that arrive as a Poisson process (rate lambda, work S in
seconds of the device's full capability) together with the FL job: an M/G/1 queue with
utilisation rho = lambda E[S] < 1, served either by processor sharing (``ps``: all jobs
present share the CPU equally, so the FL job slows down) or first-come first-served
(``fifo``: the FL job waits for the work ahead of it, then runs at full speed).

A round sees the queue in its stationary state, drawn fresh when the round starts:

- the number of jobs N is geometric, P(N = n) = (1 - rho) rho^n, and their remaining works
  are i.i.d. with the equilibrium density (1 - F(x)) / E[S]. For M/G/1-PS this is the exact
  stationary state (insensitivity); for FIFO only the total remaining work matters to the FL
  job, and the sum of N such residuals has the stationary workload distribution
  (Pollaczek-Khinchine, Benes).
- An equilibrium residual is U x L with U ~ U(0, 1) and L length-biased (density
  x f(x) / E[S]); :func:`netfl.sampling.equilibrium_work` draws L exactly for each job-size
  family.

Consequences checked by the tests: an FL job of work x takes x / (1 - rho) on average under
PS (the M/G/1-PS conditional response time) and x + lambda E[S^2] / (2 (1 - rho)) under FIFO.
The state is not carried from round to round (each round draws it afresh); within a round it
evolves exactly, event by event, only for the devices that compute.
"""

from __future__ import annotations

import math

import numpy as np

from netfl.config.devices import BackgroundLoad
from netfl.config.dist import Choice, Constant, Exponential, LogNormal, Uniform


def stationary_jobs(rho: float, rng: np.random.Generator, size: int) -> np.ndarray:
    """Number of background jobs present at a random time: P(N = n) = (1 - rho) rho^n."""
    if rho <= 0:
        return np.zeros(size, dtype=np.int64)
    # numpy's geometric counts trials to the first success (support 1, 2, ...).
    return rng.geometric(1.0 - rho, size) - 1


def second_moment(work: object) -> float:
    """E[S^2] of a job-size distribution (for the FIFO mean wait, Pollaczek-Khinchine)."""
    if isinstance(work, Constant):
        return work.value**2
    if isinstance(work, Uniform):
        return (work.low**2 + work.low * work.high + work.high**2) / 3
    if isinstance(work, Exponential):
        return 2 * work.mean**2
    if isinstance(work, LogNormal):
        return work.median**2 * math.exp(2 * work.sigma**2)
    if isinstance(work, Choice):
        values = np.asarray(work.values, dtype=float)
        return float(np.dot(work.probabilities(), values**2))
    raise TypeError(f"no second moment for {type(work).__name__}")


#: Remaining work that counts as none: a picosecond. Departures serve the departing job
#: exactly, so progress never depends on this (t + work may round to t late in a run).
_DONE_S = 1e-12


class BackgroundQueue:
    """One device's background jobs, advanced event by event (no SimPy needed).

    Parameters
    ----------
    load
        The group's background load (rate, job sizes, discipline).
    residual_s
        Remaining works of the jobs present at ``now_s`` (FIFO: in service order).
    now_s
        The time the state refers to.
    rng
        The devices' background stream (arrival times and sizes).
    """

    def __init__(
        self,
        load: BackgroundLoad,
        residual_s: list[float],
        now_s: float,
        rng: np.random.Generator,
    ) -> None:
        self.load = load
        self.jobs = list(residual_s)
        self.t_s = now_s
        self.rng = rng
        self.next_arrival_s = now_s + self._interarrival()

    def _interarrival(self) -> float:
        rate = self.load.arrival_rate_hz
        return float(self.rng.exponential(1.0 / rate)) if rate > 0 else math.inf

    def _arrive(self) -> None:
        self.jobs.append(float(self.load.job_work_s.sample(self.rng, 1)[0]))
        self.next_arrival_s += self._interarrival()

    @property
    def n_jobs(self) -> int:
        return len(self.jobs)

    def advance(self, until_s: float) -> None:
        """Serve the background jobs alone until ``until_s``."""
        while self.t_s < until_s:
            self._step(until_s)

    def serve(self, now_s: float, work_s: float) -> tuple[float, float]:
        """Run an FL job of ``work_s`` that enters the device at ``now_s``.

        Returns ``(start_s, end_s)``: when it first gets the CPU (``now_s`` under PS; after
        the work ahead of it under FIFO) and when it completes. The queue's state is left
        at ``end_s`` (including the jobs that arrived meanwhile). A job entering before the
        state's time (after an earlier job of the round was abandoned) starts from that
        state as if it were current.
        """
        start, end, _ = self.serve_until(now_s, work_s, math.inf)
        return start, end

    def serve_until(
        self, now_s: float, work_s: float, until_s: float
    ) -> tuple[float, float, float]:
        """:meth:`serve`, but the FL job leaves at ``until_s`` if it is not done by then
        (partial work): ``(start_s, end_s, work done)``, the queue's state left at
        ``end_s``. A job that never got the CPU ends at ``until_s`` with no work done."""
        self.t_s = min(self.t_s, now_s)
        self.advance(now_s)
        if self.load.discipline == "fifo":
            start = now_s + sum(self.jobs)  # the work ahead of it
            end = start + work_s
            if end > until_s and start >= until_s:  # it leaves before its turn
                self.advance(until_s)
                return until_s, until_s, 0.0
            cut = end > until_s
            end = until_s if cut else end
            self.jobs = []
            while self.next_arrival_s <= end:
                self._arrive()  # queued behind the FL job: untouched until it ends
            self.t_s = end
            return start, end, end - start if cut else work_s
        remaining: float | None = work_s
        while remaining and self.t_s < until_s:
            remaining = self._ps_step(until_s, remaining)
        return now_s, self.t_s, work_s - (remaining or 0.0)

    # -- internals ----------------------------------------------------------------------

    def _step(self, until_s: float) -> None:
        """Advance to the next background event (arrival or departure) or ``until_s``."""
        if self.load.discipline == "ps" or not self.jobs:
            self._ps_step(until_s, None)
            return
        departure = self.t_s + self.jobs[0]
        t = min(departure, self.next_arrival_s, until_s)
        if t >= departure:
            self.jobs.pop(0)  # exactly: no rounding left behind
        else:
            self.jobs[0] -= t - self.t_s
            if self.jobs[0] <= _DONE_S:
                self.jobs.pop(0)
        self.t_s = t
        if t >= self.next_arrival_s:
            self._arrive()

    def _ps_step(self, until_s: float, fl_work_s: float | None) -> float | None:
        """One event of processor sharing, with the FL job if ``fl_work_s`` is given.

        Returns the FL job's remaining work (0.0 when it just finished). At a departure
        the departing job is served exactly its remaining work, so every step makes
        progress even where ``t + work`` rounds to ``t``.
        """
        n = len(self.jobs) + (fl_work_s is not None)
        first = min(min(self.jobs, default=math.inf), math.inf if fl_work_s is None else fl_work_s)
        departure = self.t_s + first * n if n else math.inf
        t = min(departure, self.next_arrival_s, until_s)
        if n:
            served = first if t >= departure else (t - self.t_s) / n
            self.jobs = [w - served for w in self.jobs if w - served > _DONE_S]
            if fl_work_s is not None:
                fl_work_s = fl_work_s - served
                fl_work_s = fl_work_s if fl_work_s > _DONE_S else 0.0
        self.t_s = t
        if t >= self.next_arrival_s and fl_work_s != 0.0:
            self._arrive()
        return fl_work_s
