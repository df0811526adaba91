"""The network as the FL protocol sees it: transfers that take simulated time.

A network turns "send ``bits`` to/from client ``c``" into a SimPy process whose value is a
:class:`Transfer`. ``FixedRateNetwork`` is the simplest model: each device has constant
uplink and downlink rates and transfers never share capacity.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import simpy


@dataclass(frozen=True)
class Transfer:
    """A completed transfer: when it started and ended (simulated s) and its mean rate."""

    client: int
    bits: float
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def rate_bps(self) -> float:
        return self.bits / self.duration_s if self.duration_s > 0 else float("inf")


class Network(Protocol):
    """Transfers between the server and the devices."""

    rate_ul_bps: np.ndarray
    rate_dl_bps: np.ndarray

    def download(self, env: simpy.Environment, client: int, bits: float) -> simpy.Process:
        """Send ``bits`` from the server to ``client``; the process returns a Transfer.

        Interrupting the process cancels the transfer (it then returns None).
        """
        ...

    def upload(self, env: simpy.Environment, client: int, bits: float) -> simpy.Process:
        """Send ``bits`` from ``client`` to the server; the process returns a Transfer."""
        ...


class FixedRateNetwork:
    """Each device has its own constant rates; transfers do not interact."""

    def __init__(self, rate_ul_bps: np.ndarray, rate_dl_bps: np.ndarray) -> None:
        if np.any(rate_ul_bps <= 0) or np.any(rate_dl_bps <= 0):
            raise ValueError("rates must be positive")
        self.rate_ul_bps = np.asarray(rate_ul_bps, dtype=float)
        self.rate_dl_bps = np.asarray(rate_dl_bps, dtype=float)

    def _send(
        self, env: simpy.Environment, client: int, bits: float, rate_bps: float
    ) -> Generator[simpy.Event, Any, Transfer | None]:
        start = env.now
        try:
            yield env.timeout(bits / rate_bps)
        except simpy.Interrupt:
            return None  # cancelled (deadline, drop): nothing to release
        return Transfer(client, bits, start, env.now)

    def download(self, env: simpy.Environment, client: int, bits: float) -> simpy.Process:
        return env.process(self._send(env, client, bits, float(self.rate_dl_bps[client])))

    def upload(self, env: simpy.Environment, client: int, bits: float) -> simpy.Process:
        return env.process(self._send(env, client, bits, float(self.rate_ul_bps[client])))
