"""Devices in simulated time: per-round resources, availability, cold start and compute jobs.

A device processes training samples at its capability for the round,

    capacity_t = compute_sps x fluctuation_t x mu_t   (samples/s),

where ``compute_sps`` is its mean capability (drawn once; or epochs x n_samples / tau_b
from RBCS-F's base training time), ``fluctuation_t`` the MAB-CS truncated-normal factor
(Yoshida et al. 2020 eq. (8), off by default) and ``mu_t`` the available CPU ratio
drawn per round (Huang et al. 2021 Sec. 6.1: U[0.5, 2]). A local update of E epochs
over D samples is a job of E D / capacity_t seconds of full-speed work (Yoshida et al. 2020 eq.
(10)),
served together with the device's background jobs (:mod:`netfl.fl.background`), after a
cold start tau_s when the device was not selected in the previous round (Huang et al. 2021 eq.
(14)).
All of a device's phases in a round (cold start, compute, and the upload on a group link)
are multiplied by one noise factor 1 + U(-a, a), so that with a = 1 the exchange time is
c^T theta + eps with eps ~ U(-c^T theta, c^T theta), as in Huang et al. 2021 Sec. 6.1.

The RBCS-F context feature ``mu`` reported in the resource request is mu_t / (1 + N_t): the
share of the CPU a new job gets under processor sharing with the N_t background jobs
present when the round starts.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import simpy

from netfl.config.devices import DeviceGroup, DevicesConfig
from netfl.config.dist import Choice, Constant, TruncNormal, Uniform
from netfl.features import Feature
from netfl.fl.availability import AlwaysOn, AvailabilityModel, build_availability
from netfl.fl.background import (
    BackgroundQueue,
    second_moment,
    stationary_jobs,
)
from netfl.fl.population import Population
from netfl.fluctuation import mab_cs_sigma, sample_mab_cs
from netfl.rng import Streams
from netfl.sampling import equilibrium_work


class JobTiming(NamedTuple):
    """How long a job entering a device now waits and computes (simulated seconds), and
    the share of its work done (1 unless it was stopped early: partial work)."""

    queue_wait_s: float
    compute_s: float
    done_fraction: float = 1.0


def _upper_bound(dist: object) -> float:
    """Supremum of a distribution's support (inf when unbounded)."""
    if isinstance(dist, Constant):
        return dist.value
    if isinstance(dist, Uniform | TruncNormal):
        return dist.high
    if isinstance(dist, Choice):
        return max(dist.values)
    return math.inf


class Devices:
    """The device population during a run (see the module docstring).

    Parameters
    ----------
    env
        The simulation environment (its clock is the devices' clock).
    config
        The scenario's ``devices`` section.
    population
        Static per-device draws.
    n_samples
        Training samples per device (from the learner).
    update_samples
        Samples one local update processes per device (epochs x n_samples, or local steps
        x batch size: the learner's ``update_samples``).
    streams
        The run's random streams; the devices use ``devices.*`` ones.
    """

    def __init__(
        self,
        env: simpy.Environment,
        config: DevicesConfig,
        population: Population,
        n_samples: np.ndarray,
        update_samples: np.ndarray,
        streams: Streams,
    ) -> None:
        self.env = env
        self.groups: list[DeviceGroup] = list(config.groups)
        self.slices = population.group_slices()
        self.group_index = population.group_index
        self.n_samples = np.asarray(n_samples, dtype=np.int64)
        self.update_samples = np.asarray(update_samples, dtype=float)
        self.cold_start_s = population.cold_start_s
        base = population.base_train_time_s
        self.compute_sps = np.where(
            np.isnan(base), population.compute_sps, self.update_samples / base
        )
        self.rng = {
            name: streams.get(f"devices.{name}")
            for name in ("fluctuation", "cpu", "noise", "background", "availability")
        }
        self.availability: list[AvailabilityModel] = [
            build_availability(
                g.availability,
                f"devices.groups.{i}.availability",
                s.start,
                g.count,
                self.rng["availability"],
            )
            for i, (g, s) in enumerate(zip(self.groups, self.slices, strict=True))
        ]
        #: Some group has background jobs (else no device ever queues).
        self._background = any(g.background is not None for g in self.groups)
        #: Every device always available: nobody ever leaves (no availability draws).
        self.always_available = all(isinstance(m, AlwaysOn) for m in self.availability)
        n = len(self.n_samples)
        self.capacity_sps = self.compute_sps.copy()
        self.cpu_ratio = np.ones(n)
        # Whether a group's capability is drawn at the next round: after the first, only
        # where it varies (a group without fluctuation and with a constant CPU ratio draws
        # nothing, so it is set once, not once a round over all its devices).
        self._draw_capacity = [True] * len(self.groups)
        self.time_factor = np.ones(n)
        self.n_background = np.zeros(n, dtype=np.int64)
        self.queues: dict[int, BackgroundQueue] = {}
        self.round = -1
        self.round_start_s = 0.0
        self.selected_round = np.full(n, -2, dtype=np.int64)
        self.warm = np.zeros(n, dtype=bool)  # selected in the previous round
        self.job_round = np.full(n, -2, dtype=np.int64)

    @property
    def n_clients(self) -> int:
        return len(self.n_samples)

    # -- per round ------------------------------------------------------------------------

    def start_round(self, round: int) -> None:
        """Draw the round's capability, CPU ratio, noise, background state, availability.

        Every device gets its draws, selected or not, so a device's resources in a round do
        not depend on the strategy (common random numbers across compared runs).
        """
        self.round, self.round_start_s = round, self.env.now
        self.warm = self.selected_round == round - 1
        self.queues.clear()
        for i, (g, s) in enumerate(zip(self.groups, self.slices, strict=True)):
            if self._draw_capacity[i]:
                mean = self.compute_sps[s]
                fluct = g.compute_fluctuation_eta
                sps = mean if fluct is None else sample_mab_cs(mean, fluct, self.rng["fluctuation"])
                self.cpu_ratio[s] = g.available_cpu_ratio.sample(self.rng["cpu"], g.count)
                self.capacity_sps[s] = sps * self.cpu_ratio[s]
                self._draw_capacity[i] = fluct is not None or not isinstance(
                    g.available_cpu_ratio, Constant
                )
            a = g.exchange_noise
            if a > 0:
                self.time_factor[s] = 1 + self.rng["noise"].uniform(-a, a, g.count)
            if g.background is not None:
                rho = g.background.utilization
                self.n_background[s] = stationary_jobs(rho, self.rng["background"], g.count)
        for model in self.availability:
            model.start_round()

    def note_selected(self, round: int, clients: np.ndarray | list[int]) -> None:
        """Record the round's selection (the next round's cold-start indicator)."""
        if isinstance(clients, list) and len(clients) <= 16:  # the asynchronous servers' one
            for client in clients:
                self.selected_round[client] = round
            return
        self.selected_round[np.asarray(clients, dtype=np.int64)] = round

    def features(self, clients: np.ndarray) -> dict[str, np.ndarray]:
        """Context reported in the resource request: ``mu`` and ``cold_start`` (0/1)."""
        clients = np.asarray(clients, dtype=np.int64)
        mu = self.cpu_ratio[clients] / (1 + self.n_background[clients])
        return {Feature.MU: mu, Feature.COLD_START: (~self.warm[clients]).astype(float)}

    # -- availability ---------------------------------------------------------------------

    def _by_group(self, clients: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        clients = np.asarray(clients, dtype=np.int64)
        out = []
        for i, s in enumerate(self.slices):
            mask = (clients >= s.start) & (clients < s.stop)
            if np.any(mask):
                out.append((i, mask, clients[mask] - s.start))
        return out

    def available(self, clients: np.ndarray) -> np.ndarray:
        """Which of ``clients`` are available now."""
        result = np.zeros(len(clients), dtype=bool)
        for i, mask, local in self._by_group(clients):
            result[mask] = self.availability[i].available(local, self.env.now)
        return result

    def leaves_at(self, clients: np.ndarray) -> np.ndarray:
        """For available ``clients``: when each next becomes unavailable (inf: not known)."""
        result = np.full(len(clients), math.inf)
        for i, mask, local in self._by_group(clients):
            result[mask] = self.availability[i].leaves_at(local, self.env.now)
        return result

    def leave_time_s(self, client: int) -> float:
        """When ``client`` becomes unavailable: now if it is not available, inf if never."""
        if self.always_available:
            return math.inf
        clients = np.array([client], dtype=np.int64)
        if not self.available(clients)[0]:
            return float(self.env.now)
        return float(self.leaves_at(clients)[0])

    # -- jobs -----------------------------------------------------------------------------

    def cold_start(self, client: int) -> float:
        """Data-preparation time before the device's first job of the round (0 if warm)."""
        warm = self.warm[client] or self.job_round[client] == self.round
        self.job_round[client] = self.round
        return 0.0 if warm else self.cold_start_s.item(client) * self.time_factor.item(client)

    def run_job(self, client: int, work_samples: float) -> JobTiming:
        """A job of ``work_samples`` training samples entering the device now."""
        # Python floats (.item): the same IEEE operations as on numpy's scalars, cheaper.
        work_s = work_samples / self.capacity_sps.item(client) * self.time_factor.item(client)
        queue = self._queue(client) if self._background else None
        if queue is None:
            return JobTiming(0.0, work_s)
        start, end = queue.serve(self.env.now, work_s)
        return JobTiming(start - self.env.now, end - start)

    def run_job_until(self, client: int, work_samples: float, until_s: float) -> JobTiming:
        """:meth:`run_job`, stopped at ``until_s`` if not done by then (partial work):
        the device computes, behind and beside its background jobs, until it is done or
        ``until_s``; ``done_fraction`` is the share of the work done by then."""
        now = self.env.now
        work_s = float(work_samples / self.capacity_sps[client] * self.time_factor[client])
        queue = self._queue(client)
        if queue is None:
            if now + work_s <= until_s:
                return JobTiming(0.0, work_s)
            spent = max(until_s - now, 0.0)
            return JobTiming(0.0, spent, spent / work_s)
        start, end, done = queue.serve_until(now, work_s, until_s)
        return JobTiming(start - now, end - start, 1.0 if done >= work_s else done / work_s)

    def work_samples(self, client: int, epochs: float | None) -> float:
        """Samples of ``epochs`` passes over the local data (None: one local update)."""
        if epochs is None:
            return float(self.update_samples[client])
        return float(epochs * self.n_samples[client])

    def _queue(self, client: int) -> BackgroundQueue | None:
        group = self.groups[int(self.group_index[client])]
        if group.background is None:
            return None
        if client not in self.queues:
            rng = self.rng["background"]
            n = int(self.n_background[client])
            residual = equilibrium_work(group.background.job_work_s, rng, n).tolist()
            self.queues[client] = BackgroundQueue(
                group.background, residual, self.round_start_s, rng
            )
        return self.queues[client]

    # -- bounds ---------------------------------------------------------------------------

    def fastest_update_s(self) -> np.ndarray:
        """A lower bound on each device's local-update time (for the deadline warning)."""
        bound = np.zeros(self.n_clients)
        for g, s in zip(self.groups, self.slices, strict=True):
            mean = self.compute_sps[s]
            fastest = mean.copy()
            if g.compute_fluctuation_eta is not None:
                fastest = mean + mab_cs_sigma(mean, g.compute_fluctuation_eta)
            fastest = fastest * _upper_bound(g.available_cpu_ratio)
            bound[s] = self.update_samples[s] * (1 - g.exchange_noise) / fastest
        return bound

    def expected_update_s(self, clients: np.ndarray) -> np.ndarray:
        """Expected time from receiving the model to the update being ready, this round.

        Cold start if due, plus the work at the mean capability times this round's CPU
        ratio, slowed by the background load on average: x / (1 - rho) under processor
        sharing, x + lambda E[S^2] / (2 (1 - rho)) under FIFO. Noise and fluctuation
        average out (their mean factor is 1). This is the oracle's c^T theta* (Huang et al. 2021
        eq. (14)).
        """
        clients = np.asarray(clients, dtype=np.int64)
        work = self.update_samples[clients] / (self.compute_sps[clients] * self.cpu_ratio[clients])
        cold = np.where(self.warm[clients], 0.0, self.cold_start_s[clients])
        for i, g in enumerate(self.groups):
            load = g.background
            mine = self.group_index[clients] == i
            if load is None or not np.any(mine):
                continue
            rho = load.utilization
            if load.discipline == "ps":
                work[mine] = work[mine] / (1 - rho)
            else:
                wait = load.arrival_rate_hz * second_moment(load.job_work_s) / (2 * (1 - rho))
                work[mine] = work[mine] + wait
        return cold + work
