"""The Resource Request step of a round (Yoshida et al. 2020 Sec. II).

ceil(K C) clients drawn uniformly, fresh each round, are asked; those available answer and
become the round's candidates. An answer costs uplink time and bits where it carries any:
the configured report (``fl.request_response_bits``), plus the client's data context the
first time it answers (NCCB's contexts, computed on the device, when the strategy uses
them). A report still on the air at the round's limit is cut: its client is not a
candidate, and its airtime so far is metered.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from netfl.config.fl import FLConfig
from netfl.fl.exchange import LateTimeout, Parts
from netfl.selection.context import BITS_PER_CONTEXT_VALUE


class ResourceRequest:
    """Asks clients each round and collects the answers (see the module docstring).

    Parameters
    ----------
    parts
        The components the exchanges also use (network, devices, timeline, energy).
    config
        The scenario's ``fl`` section.
    rng
        The ``fl.request`` stream: who is asked.
    contexts
        Each client's data context (one row per client), or None when not used.
    """

    def __init__(
        self,
        parts: Parts,
        config: FLConfig,
        rng: np.random.Generator,
        contexts: np.ndarray | None,
    ) -> None:
        self.parts = parts
        self.config = config
        self.rng = rng
        self.contexts = contexts
        self.n_clients = parts.devices.n_clients
        self.context_sent = np.zeros(self.n_clients, dtype=bool)

    def run(self, r: int, limit: float | None) -> Generator[simpy.Event, Any, np.ndarray]:
        """Ask this round's clients; return those that answered by ``limit``, sorted."""
        env, timeline = self.parts.env, self.parts.timeline
        k = math.ceil(self.n_clients * self.config.request_fraction - 1e-9)
        if k == self.n_clients:  # everyone: the draw's order is sorted away anyway
            asked = np.arange(k)
        else:
            asked = np.sort(self.rng.choice(self.n_clients, size=k, replace=False))
        timeline.record_many(env.now, "request", r, asked)
        if self.config.request_time_s > 0:
            yield env.timeout(self.config.request_time_s)
        here = asked[self.parts.devices.available(asked)]
        covered = getattr(self.parts.network, "covered", None)  # a radio with coverage
        if covered is not None:
            here = here[covered(here)]
        bits = self._response_bits(here)
        if not np.any(bits > 0):
            timeline.record_many(env.now, "response", r, here)
            return here
        answered = yield from self._reports(r, here, bits, limit)
        self.context_sent[answered] = True
        return answered

    def _response_bits(self, clients: np.ndarray) -> np.ndarray:
        """Bits of each client's resource response: the configured report, plus its data
        context the first time it answers (when the strategy uses contexts)."""
        bits = np.full(len(clients), float(self.config.request_response_bits))
        if self.contexts is not None:
            first = ~self.context_sent[clients]
            bits[first] += self.contexts.shape[1] * BITS_PER_CONTEXT_VALUE
        return bits

    def _reports(
        self, r: int, clients: np.ndarray, bits: np.ndarray, limit: float | None
    ) -> Generator[simpy.Event, Any, np.ndarray]:
        """Upload every client's report; the clients whose report arrived by ``limit``."""
        env, network, energy = self.parts.env, self.parts.network, self.parts.energy
        sent_s = env.now
        uploads = {
            int(c): network.upload(env, int(c), float(b))
            for c, b in zip(clients, bits, strict=True)
        }
        everyone = env.all_of(list(uploads.values()))
        yield everyone if limit is None else everyone | LateTimeout(env, max(0.0, limit - env.now))
        answered = []
        for c, proc in uploads.items():
            if proc.is_alive:
                proc.interrupt("deadline")
                energy.transmit(c, env.now - sent_s)  # a report cut short still cost
                continue
            transfer = proc.value
            assert transfer is not None
            energy.transmit(c, transfer.duration_s)
            self.parts.timeline.record(
                transfer.end_s,
                "response",
                r,
                c,
                bits=transfer.bits,
                duration_s=transfer.duration_s,
            )
            answered.append(c)
        return np.asarray(answered, dtype=np.int64)
