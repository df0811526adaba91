"""One exchange with a set of clients: model out, a job on each device, an answer back.

The round's main exchange is the Distribution, Update and Upload steps of the FedCS
protocol (Yoshida et al. 2020 Sec. II); a strategy's poll is a smaller one. Every step
is a timeline event. The model reaches the clients by multicast (everyone at the slowest
client's rate), unicast (each at its own rate) or instantly; then each client prepares its
data if it is cold, computes (waiting or slowing down behind background jobs), and uploads:

- **parallel** uploads (FedAvg): each client uploads as soon as its update is ready;
- **sequential** uploads (FedCS scheduled upload): clients upload one after another in the
  selection order, so with T_d the distribution time, client j's upload ends at
  T_d + Theta_j, Theta_j = Theta_{j-1} + t_UL_j + max(0, t_UD_j - Theta_{j-1})
  (Yoshida et al. 2020 eqs. (1)-(2)). A client that leaves passes its turn on at once.

A client leaves an exchange when its device becomes unavailable (``drop``), at the limit
(round deadline or T_final: ``deadline_miss``), or when the server has the ``target``
number of answers it wanted (over-selection: ``cancel``). Its work is then lost. Under
``fl.partial_work`` (:mod:`netfl.fl.partial`, ``Plan.partial``) a client stops computing in
time to upload the steps it has done.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy
from simpy.events import EventPriority

from netfl.fl.device import Devices
from netfl.fl.energy import EnergyMeter
from netfl.fl.partial import PartialWork
from netfl.radio.network import LinkLost, Network, Transfer
from netfl.recorder.timeline import Timeline

#: A transfer as steps of the caller's process: ``(client, bits)`` -> a generator that
#: returns the :class:`Transfer`.
StepsOf = Callable[[int, float], Generator[simpy.Event, Any, Transfer]]

#: Interrupt cause -> (the client's status, the timeline kind that logs its leaving).
LEAVE = {
    "drop": ("dropped", "drop"),
    "radio_link_failure": ("dropped", "radio_link_lost"),
    "limit": ("deadline_miss", "deadline_miss"),
    "enough": ("cancelled", "cancel"),
}


#: After SimPy's NORMAL (1) and URGENT (0) events of the same instant.
LATE = EventPriority(2)


class LateTimeout(simpy.Event):
    """A timeout processed after every other event of the same instant.

    Used for limits, so that an upload ending exactly at the deadline is in time.
    """

    def __init__(self, env: simpy.Environment, delay_s: float) -> None:
        super().__init__(env)
        self._ok = True
        self._value = None
        env.schedule(self, priority=LATE, delay=delay_s)


class LateEvent(simpy.Event):
    """An event that, once :meth:`fire` is called, is processed after every other event
    of that instant (a ``LateTimeout`` of 0 s started on demand; later calls do nothing)."""

    def fire(self) -> None:
        if not self.triggered:
            self._ok, self._value = True, None
            self.env.schedule(self, priority=LATE)


@functools.cache
def _kinds(prefix: str) -> dict[str, str]:
    """An exchange's timeline kinds: ``LOGGED`` with ``prefix`` (``poll_``: a poll's)."""
    return {kind: prefix + kind for kind in LOGGED}


#: A client's steps in an exchange, in order: the timeline kinds that start and end its
#: phases (a poll's carry the prefix ``poll_``).
STEPS = (
    "download_start",
    "download_end",
    "cold_start_start",
    "cold_start_end",
    "compute_start",
    "compute_end",
    "upload_start",
    "upload_end",
)
#: The kinds an exchange logs (:class:`Exchange`): its steps and a client's leaving.
LOGGED = (*STEPS, *(kind for _, kind in LEAVE.values()))


@dataclass
class Outcome:
    """What happened to one client in one exchange (times in simulated seconds)."""

    client: int
    order: int
    status: str = "pending"
    download: Transfer | None = None
    cold_start_s: float = math.nan
    queue_wait_s: float = math.nan
    compute_s: float = math.nan
    ready_s: float = math.nan
    upload_wait_s: float = math.nan
    upload_start_s: float = math.nan
    upload: Transfer | None = None
    left_s: float = math.nan  # when it left the exchange without completing
    steps_planned: int = -1  # local SGD steps asked and done (partial work; -1: not counted)
    steps_done: int = -1

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    def observed_update_s(self, exchange_start_s: float) -> float:
        """The update time, or a lower bound of it for a client that left before its update
        was ready: the time from the end of its download (from the exchange's start if it
        never received the model) until it left. NaN if it was never observed."""
        if not math.isnan(self.ready_s):
            return self.update_time_s
        if math.isnan(self.left_s):
            return math.nan
        since_s = self.download.end_s if self.download is not None else exchange_start_s
        return self.left_s - since_s

    def observed_upload_s(self) -> float:
        """The upload's duration, or for a client that left while uploading the time it
        spent uploading (a lower bound). NaN if it never started its upload."""
        if self.upload is not None:
            return self.upload.duration_s
        if math.isnan(self.upload_start_s) or math.isnan(self.left_s):
            return math.nan
        return self.left_s - self.upload_start_s

    @property
    def update_time_s(self) -> float:
        """From the end of the download to the update being ready."""
        if self.download is None or math.isnan(self.ready_s):
            return math.nan
        return self.ready_s - self.download.end_s


@dataclass
class _Phase:
    """A client's current step, for cancelling it and metering a phase cut short."""

    step: simpy.Process | None = None
    busy: str | None = None  # compute | transmit
    since_s: float = 0.0


@dataclass(frozen=True)
class Plan:
    """What an exchange sends, computes and receives."""

    download_bits: float
    work_epochs: float | None  # passes over the local data; None: one local update
    upload_bits: float
    distribution: str  # multicast | unicast | instant
    sequential: bool
    prefix: str = ""  # timeline kind prefix ("poll_" for polls)
    partial: PartialWork | None = None  # fl.partial_work: stop in time to upload


@dataclass
class Parts:
    """The components an exchange works with."""

    env: simpy.Environment
    network: Network
    devices: Devices
    timeline: Timeline
    energy: EnergyMeter

    def __post_init__(self) -> None:
        #: The network's transfers as steps of the client's own process, where it offers
        #: them (``upload_steps``/``download_steps``: no process and two SimPy events fewer
        #: a transfer); None: a process a transfer.
        self.upload_steps: StepsOf | None = getattr(self.network, "upload_steps", None)
        self.download_steps: StepsOf | None = getattr(self.network, "download_steps", None)


class Exchange:
    """Run one exchange; ``run`` is a generator to ``yield from`` inside a SimPy process."""

    def __init__(
        self, parts: Parts, round: int, clients: list[int], plan: Plan, target: int | None
    ) -> None:
        self.parts = parts
        self.round = round
        self.plan = plan
        self.outcomes = [Outcome(c, j) for j, c in enumerate(clients)]
        self.target = len(clients) if target is None else min(target, len(clients))
        env = parts.env
        # Sequential uploads: turns[j] fires when client j is done, letting j + 1 upload.
        self.turns = [env.event() for _ in clients[1:]] if plan.sequential else []
        self.done: simpy.Event | None = None  # made by run; start_one tells on_done instead
        self.n_finished = 0
        self.n_completed = 0
        # The timeline's record and this plan's kinds (prefixed for polls), bound once:
        # six rows a client update.
        self._record = parts.timeline.record
        self._kinds = _kinds(plan.prefix)
        self.start_s = math.nan
        self.limit_s: float | None = None
        self._multicast: simpy.Process | None = None

    def _log(self, kind: str, client: int, **values: float) -> None:
        self._record(self.parts.env.now, self._kinds[kind], self.round, client, **values)

    # -- the exchange ---------------------------------------------------------------------

    def run(self, limit_s: float | None) -> Generator[simpy.Event, Any, list[Outcome]]:
        """Run until every client is done, ``target`` completed, or ``limit_s`` is reached.

        Clients still working then leave: ``cancel`` once ``target`` updates arrived, else
        ``deadline_miss``.
        """
        env = self.parts.env
        self.start_s, self.limit_s = env.now, limit_s
        if not self.outcomes:
            return self.outcomes
        self.done = env.event()
        clients = [o.client for o in self.outcomes]
        if self.plan.distribution == "multicast":
            self._multicast = self.parts.network.multicast(env, clients, self.plan.download_bits)
        procs = [env.process(self._client(o)) for o in self.outcomes]
        leave = self._leave_times()
        watcher = env.process(self._watch_drops(procs, leave)) if np.isfinite(leave).any() else None
        assert self.done is not None
        waits: list[simpy.Event] = [self.done]
        if limit_s is not None:
            waits.append(LateTimeout(env, max(0.0, limit_s - env.now)))
        yield env.any_of(waits)
        cause = "enough" if self.done.triggered else "limit"
        for proc in procs:
            if proc.is_alive:
                proc.interrupt(cause)
        if watcher is not None and watcher.is_alive:
            watcher.interrupt("done")
        if self._multicast is not None and self._multicast.is_alive:
            self._multicast.interrupt("cancelled")
        yield env.all_of(procs)
        return self.outcomes

    def _leave_times(self) -> np.ndarray:
        """When each client's device becomes unavailable (now if it is not; inf: never)."""
        env, devices = self.parts.env, self.parts.devices
        clients = np.array([o.client for o in self.outcomes], dtype=np.int64)
        leave = np.full(len(clients), float(env.now))
        here = devices.available(clients)
        leave[here] = devices.leaves_at(clients[here])
        return leave

    def start_one(self, limit_s: float | None, on_done: Callable[[Outcome], None]) -> simpy.Process:
        """Start an exchange of one client without a process of its own (the asynchronous
        protocols run thousands): the client's process, interrupted by a timer at its
        device's leaving (``drop``) or at ``limit_s`` (``deadline_miss``, after every other
        event of that instant, as in :meth:`run`); ``on_done(outcome)`` when it is over.
        Interrupt the returned process with ``"enough"`` to cancel the client."""
        env = self.parts.env
        self.start_s, self.limit_s = env.now, limit_s
        (out,) = self.outcomes
        proc = env.process(self._client(out))
        leave_s = self.parts.devices.leave_time_s(out.client)
        timer: simpy.Event | None = None
        if limit_s is not None and limit_s < leave_s:
            timer, cause = LateTimeout(env, max(0.0, limit_s - env.now)), "limit"
        elif math.isfinite(leave_s):
            timer, cause = env.timeout(max(0.0, leave_s - env.now)), "drop"
        if timer is not None:
            timer.callbacks.append(lambda _: proc.interrupt(cause) if proc.is_alive else None)
        proc.callbacks.append(lambda _: on_done(out))
        return proc

    def _watch_drops(
        self, procs: list[simpy.Process], leave: np.ndarray
    ) -> Generator[simpy.Event, Any, None]:
        """Interrupt each client when its device becomes unavailable (at ``leave``)."""
        env = self.parts.env
        try:
            for j in np.argsort(leave, kind="stable"):
                if math.isinf(leave[j]):
                    break
                yield env.timeout(max(0.0, leave[j] - env.now))
                if procs[j].is_alive:
                    procs[j].interrupt("drop")
        except simpy.Interrupt:
            return

    def _finish(self, out: Outcome) -> None:
        self.n_finished += 1
        self.n_completed += out.completed
        if out.order < len(self.turns) and not self.turns[out.order].triggered:
            self.turns[out.order].succeed()
        everyone = self.n_finished == len(self.outcomes)
        done = self.done
        if (
            done is not None
            and (everyone or self.n_completed >= self.target)
            and not done.triggered
        ):
            done.succeed()

    # -- one client -----------------------------------------------------------------------

    def _client(self, out: Outcome) -> Generator[simpy.Event, Any, None]:
        env, c = self.parts.env, out.client
        phase = _Phase()
        try:
            out.download = yield from self._download(out, phase)
            yield from self._compute(out, phase)
            yield from self._upload(out, phase)
            out.status = "completed"
        except (simpy.Interrupt, LinkLost) as stop:
            step = phase.step
            if step is not None and step is not self._multicast and step.is_alive:
                step.interrupt("cancelled")
            self._spend(c, phase, env.now)
            out.left_s = env.now
            cause = "radio_link_failure" if isinstance(stop, LinkLost) else str(stop.cause)
            out.status, kind = LEAVE[cause]
            self._log(kind, c)
        finally:
            self._finish(out)

    def _download(self, out: Outcome, phase: _Phase) -> Generator[simpy.Event, Any, Transfer]:
        env, c, bits = self.parts.env, out.client, self.plan.download_bits
        mode = self.plan.distribution
        kinds, record = self._kinds, self._record
        record(env.now, kinds["download_start"], self.round, c, bits=bits)
        if mode == "instant":
            transfer = Transfer(c, bits, env.now, env.now)
        elif self._multicast is None and self.parts.download_steps is not None:
            transfer = yield from self.parts.download_steps(c, bits)  # no process of its own
        else:
            multicast = self._multicast
            step = multicast if multicast is not None else self.parts.network.download(env, c, bits)
            phase.step = step
            result = yield step
            phase.step = None
            transfer = result[c] if multicast is not None else result
        record(
            env.now,
            kinds["download_end"],
            self.round,
            c,
            bits=bits,
            rate_bps=transfer.rate_bps,
            duration_s=transfer.duration_s,
        )
        return transfer

    def _compute(self, out: Outcome, phase: _Phase) -> Generator[simpy.Event, Any, None]:
        env, devices, c = self.parts.env, self.parts.devices, out.client
        kinds, record = self._kinds, self._record
        out.cold_start_s = devices.cold_start(c)
        if out.cold_start_s > 0:
            record(env.now, kinds["cold_start_start"], self.round, c)
            yield env.timeout(out.cold_start_s)
            record(env.now, kinds["cold_start_end"], self.round, c, duration_s=out.cold_start_s)
        work = devices.work_samples(c, self.plan.work_epochs)
        partial, steps = self.plan.partial, {}
        if partial is None:
            timing = devices.run_job(c, work)
        else:  # fl.partial_work (netfl/fl/partial.py): stop in time to upload
            timing, out.steps_planned, out.steps_done = partial.run(devices, c, work, self.limit_s)
            steps = {"steps_planned": out.steps_planned, "steps_done": out.steps_done}
        out.queue_wait_s = timing.queue_wait_s
        if timing.queue_wait_s > 0:
            yield env.timeout(timing.queue_wait_s)
        record(env.now, kinds["compute_start"], self.round, c)
        phase.busy, phase.since_s = "compute", env.now
        yield env.timeout(timing.compute_s)
        phase.busy = None
        self.parts.energy.compute(c, timing.compute_s)
        out.compute_s = timing.compute_s
        if out.steps_done == 0:  # no step done in time: nothing to upload, cut at the limit
            self._log("compute_end", c, duration_s=timing.compute_s, **steps)
            yield env.event()
        out.ready_s = env.now
        record(env.now, kinds["compute_end"], self.round, c, duration_s=timing.compute_s, **steps)

    def _upload(self, out: Outcome, phase: _Phase) -> Generator[simpy.Event, Any, None]:
        env, c, bits = self.parts.env, out.client, self.plan.upload_bits
        if self.plan.sequential and out.order > 0:
            yield self.turns[out.order - 1]
        out.upload_wait_s = env.now - out.ready_s
        out.upload_start_s = env.now
        kinds, record = self._kinds, self._record
        record(env.now, kinds["upload_start"], self.round, c, bits=bits)
        phase.busy, phase.since_s = "transmit", env.now
        if self.parts.upload_steps is not None:
            transfer = yield from self.parts.upload_steps(c, bits)  # no process of its own
        else:
            step = phase.step = self.parts.network.upload(env, c, bits)
            transfer = yield step
        phase.busy, phase.step = None, None
        assert transfer is not None
        self.parts.energy.transmit(c, transfer.duration_s)
        out.upload = transfer
        record(
            env.now,
            kinds["upload_end"],
            self.round,
            c,
            bits=bits,
            rate_bps=transfer.rate_bps,
            duration_s=transfer.duration_s,
        )

    def _spend(self, client: int, phase: _Phase, now_s: float) -> None:
        """Account the energy of a phase cut short."""
        if phase.busy == "compute":
            self.parts.energy.compute(client, now_s - phase.since_s)
        elif phase.busy == "transmit":
            self.parts.energy.transmit(client, now_s - phase.since_s)
