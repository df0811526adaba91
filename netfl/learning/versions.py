"""Global model versions that clients in flight trained from (asynchronous protocols).

Under FedAsync and FedBuff a client trains on the version it downloaded, not on the
current model. :class:`ModelVersions` keeps each version still referenced by a client in
flight or an update not yet applied (so memory is bounded by the concurrency, not by the
rounds), trains lazily and in batches: the first time an update of version v is needed,
every client started on v and not yet trained is trained in one batch, and the results
wait for their arrivals. Training is deterministic per (version, client) (a repeat on the
same version gets its own seed), so when it happens does not change what is learned.
Under partial work a client's step count is known once its device starts computing
(:meth:`ModelVersions.note_steps`); a batch then takes the clients whose counts are known.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from netfl.learning.interface import LocalResult

State = dict[str, torch.Tensor]
#: (state, version, clients, seed keys[, steps]) -> the clients' result, trained from that
#: version (the first ``steps[k]`` local steps of each; without steps: all).
TrainFn = Callable[..., LocalResult]


@dataclass
class _Job:
    version: int
    key: tuple[int, ...]
    steps: int | None = None  # partial work: local steps it will have done


@dataclass
class ModelVersions:
    """Version bookkeeping and lazy batched training for one learner."""

    n_clients: int
    states: dict[int, State] = field(default_factory=dict)
    refs: dict[int, int] = field(default_factory=dict)
    jobs: dict[int, _Job] = field(default_factory=dict)
    trained: dict[int, LocalResult] = field(default_factory=dict)
    last_version: np.ndarray = field(init=False)
    repeats: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.last_version = np.full(self.n_clients, -1, dtype=np.int64)
        self.repeats = np.zeros(self.n_clients, dtype=np.int64)

    def start(self, version: int, client: int, state: State) -> None:
        """``client`` downloaded ``state``, the global model of ``version``."""
        if client in self.jobs:
            raise RuntimeError(f"client {client} is already training")
        if self.last_version[client] == version:
            self.repeats[client] += 1
        else:
            self.last_version[client], self.repeats[client] = version, 0
        repeat = int(self.repeats[client])
        key = (version, client) if repeat == 0 else (version, client, repeat)
        self.jobs[client] = _Job(version, key)
        self.states.setdefault(version, state)
        self.refs[version] = self.refs.get(version, 0) + 1

    def note_steps(self, client: int, steps: int) -> None:
        """Partial work: ``client`` will have done ``steps`` local steps."""
        if client in self.jobs:
            self.jobs[client].steps = int(steps)

    def finish(self, client: int, train: TrainFn) -> tuple[int, LocalResult]:
        """The client's update (one row) and its version; trains its version's batch if
        needed (under partial work, the clients of that version whose steps are known).
        The version stays held until :meth:`release`."""
        if client not in self.trained:
            version = self.jobs[client].version
            partial = self.jobs[client].steps is not None
            batch = sorted(
                c
                for c, job in self.jobs.items()
                if job.version == version
                and c not in self.trained
                and (not partial or job.steps is not None)
            )
            args = (
                self.states[version],
                version,
                np.asarray(batch),
                [self.jobs[c].key for c in batch],
            )
            if partial:
                result = train(*args, np.array([self.jobs[c].steps for c in batch]))
            else:
                result = train(*args)
            for i, c in enumerate(batch):
                self.trained[c] = _row(result, i)
        job = self.jobs.pop(client)
        return job.version, self.trained.pop(client)

    def cancel(self, client: int) -> None:
        """The client left: forget its job and release its version."""
        job = self.jobs.pop(client)
        self.trained.pop(client, None)
        self.release([job.version])

    def base(self, version: int) -> State:
        return self.states[version]

    def release(self, versions: Sequence[int]) -> None:
        for version in versions:
            self.refs[version] -= 1
            if self.refs[version] == 0:
                del self.refs[version], self.states[version]

    def snapshot(self) -> dict[str, Any]:
        """A host copy for a checkpoint."""

        def host(state: State) -> State:
            return {k: v.detach().cpu().clone() for k, v in state.items()}

        return {
            "states": {v: host(s) for v, s in self.states.items()},
            "refs": dict(self.refs),
            "jobs": {c: (j.version, j.key, j.steps) for c, j in self.jobs.items()},
            "trained": {c: _to(r, torch.device("cpu")) for c, r in self.trained.items()},
            "last_version": self.last_version.copy(),
            "repeats": self.repeats.copy(),
        }

    def restore(self, snap: dict[str, Any], device: torch.device) -> None:
        self.states = {
            v: {k: t.to(device) for k, t in s.items()} for v, s in snap["states"].items()
        }
        self.refs = dict(snap["refs"])
        self.jobs = {c: _Job(job[0], tuple(job[1]), *job[2:]) for c, job in snap["jobs"].items()}
        self.trained = {c: _to(r, device) for c, r in snap["trained"].items()}
        self.last_version = snap["last_version"].copy()
        self.repeats = snap["repeats"].copy()


def _row(result: LocalResult, i: int) -> LocalResult:
    """Row ``i`` of a batch result, as a one-client result."""

    def rows(values: np.ndarray | None) -> np.ndarray | None:
        return None if values is None else values[i : i + 1]

    return LocalResult(
        result.clients[i : i + 1],
        {k: v[i : i + 1] for k, v in result.states.items()},
        result.n_samples[i : i + 1],
        result.loss_mean[i : i + 1],
        result.loss_std[i : i + 1],
        rows(result.update_vectors),
        rows(result.update_scale),
        rows(result.steps),
        rows(result.path_norms),
    )


def _to(result: LocalResult, device: torch.device) -> LocalResult:
    states = {k: v.detach().to(device).clone() for k, v in result.states.items()}
    return dataclasses.replace(result, states=states)


def apply_updates(
    current: State,
    results: Sequence[LocalResult],
    bases: Sequence[State],
    coefficients: np.ndarray,
) -> State:
    """w + sum_i c_i (w_i - b_i) for every tensor (float64 sums; integer tensors such as
    batch-norm step counters rounded down, as :func:`netfl.learning.aggregation.fedavg`)."""
    out: State = {}
    for name, tensor in current.items():
        total = tensor.to(torch.float64)
        for result, base, c in zip(results, bases, np.asarray(coefficients).tolist(), strict=True):
            local = result.states[name][0].to(torch.float64)
            total = total + c * (local - base[name].to(torch.float64))
        out[name] = (
            total.to(tensor.dtype) if tensor.is_floating_point() else total.floor().to(tensor.dtype)
        )
    return out
