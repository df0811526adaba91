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


class LinkLost(Exception):
    """A transfer failed with its device's radio link (radio link failure): the transfer
    process fails with it, and whoever waits for the transfer sees it raised."""

    def __init__(self, device: int) -> None:
        super().__init__(f"device {device} lost its radio link")
        self.device = device


@dataclass(frozen=True)
class Handover:
    """Interrupt cause: the device handed over; its transfers resume at ``resume_s``."""

    resume_s: float


@dataclass(frozen=True)
class LinkFailure:
    """Interrupt cause: the device's radio link failed; its transfers are lost."""


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
    """Transfers between the server and the devices.

    ``rate_ul_bps``/``rate_dl_bps`` are each device's nominal link rates (alone on the
    link, unfaded), reported in ``clients.parquet``. ``start_round`` is called by the server
    at the start of every round so that a model can redraw per-round quantities
    (fluctuation) from its own stream.
    """

    rate_ul_bps: np.ndarray
    rate_dl_bps: np.ndarray

    def start_round(self, round: int) -> None:
        """Redraw per-round quantities (no-op for static models)."""
        ...

    def multicast(self, env: simpy.Environment, clients: list[int], bits: float) -> simpy.Process:
        """Send the same ``bits`` to all ``clients`` at once (FedCS distribution).

        The process returns a dict client -> Transfer; every client receives at the rate
        of the worst one, so all finish together.
        """
        ...

    def download(self, env: simpy.Environment, client: int, bits: float) -> simpy.Process:
        """Send ``bits`` from the server to ``client``; the process returns a Transfer.

        Interrupting the process cancels the transfer (it then returns None).
        """
        ...

    def upload(self, env: simpy.Environment, client: int, bits: float) -> simpy.Process:
        """Send ``bits`` from ``client`` to the server; the process returns a Transfer."""
        ...


def send_at_rate(
    env: simpy.Environment, client: int, bits: float, rate_bps: float
) -> Generator[simpy.Event, Any, Transfer | None]:
    """A transfer at a constant rate: the process behind every fixed-rate link."""
    start = env.now
    try:
        yield env.timeout(bits / rate_bps)
    except simpy.Interrupt:
        return None  # cancelled (deadline, drop): nothing to release
    return Transfer(client, bits, start, env.now)


class FixedRateNetwork:
    """Each device has its own constant rates; transfers do not interact."""

    def __init__(self, rate_ul_bps: np.ndarray, rate_dl_bps: np.ndarray) -> None:
        if np.any(rate_ul_bps <= 0) or np.any(rate_dl_bps <= 0):
            raise ValueError("rates must be positive")
        self.rate_ul_bps = np.asarray(rate_ul_bps, dtype=float)
        self.rate_dl_bps = np.asarray(rate_dl_bps, dtype=float)

    def start_round(self, round: int) -> None:
        return None

    def download(self, env: simpy.Environment, client: int, bits: float) -> simpy.Process:
        return env.process(send_at_rate(env, client, bits, float(self.rate_dl_bps[client])))

    def multicast(self, env: simpy.Environment, clients: list[int], bits: float) -> simpy.Process:
        def run() -> Generator[simpy.Event, Any, dict[int, Transfer] | None]:
            if not clients:
                return {}  # as LteNetwork.multicast
            worst = float(np.min(self.rate_dl_bps[clients]))
            sent = yield from send_at_rate(env, -1, bits, worst)
            if sent is None:
                return None  # cancelled
            return {c: Transfer(c, bits, sent.start_s, sent.end_s) for c in clients}

        return env.process(run())

    def upload(self, env: simpy.Environment, client: int, bits: float) -> simpy.Process:
        return env.process(send_at_rate(env, client, bits, float(self.rate_ul_bps[client])))
