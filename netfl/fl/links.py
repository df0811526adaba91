"""Devices whose link is set by their group: fixed SNR, bandwidth allocated per round.

In RBCS-F's numerical setting (Huang et al. 2021 Sec. 4.4.2 and 6.1) each client
uploads over its own allocated bandwidth B_{t,n} at the Shannon rate B_{t,n} eta_n with
eta_n = log(1 + SNR_n), so the upload of a model of M bits takes M / (B_{t,n} eta_n). This
module wraps the scenario's radio network: devices of groups with a ``link`` get such a
dedicated link (no sharing); everyone else goes through the wrapped network unchanged. The
upload time of a linked device is also multiplied by the device's exchange-time noise
factor of the round (:class:`netfl.fl.device.Devices`).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from netfl.config.devices import DevicesConfig, GroupLink
from netfl.errors import ScenarioError
from netfl.features import Feature
from netfl.fl.device import Devices
from netfl.fl.population import Population
from netfl.radio.network import Network, Transfer, send_at_rate


class GroupLinkNetwork:
    """A :class:`~netfl.radio.network.Network` with dedicated links for some groups."""

    def __init__(
        self,
        base: Network,
        config: DevicesConfig,
        population: Population,
        devices: Devices,
        rng: np.random.Generator,
    ) -> None:
        self.base = base
        self.devices = devices  # their per-round exchange-noise factor slows the upload
        self.rng = rng
        n = population.n_clients
        self.linked = np.zeros(n, dtype=bool)
        self.efficiency = np.full(n, np.nan)
        self.bandwidth_hz = np.full(n, np.nan)
        self.fixed_dl_bps = np.full(n, np.nan)
        self.rate_ul_bps = np.array(base.rate_ul_bps, dtype=float)
        self.rate_dl_bps = np.array(base.rate_dl_bps, dtype=float)
        self._groups: list[tuple[int, slice, GroupLink]] = []
        for i, (group, s) in enumerate(zip(config.groups, population.group_slices(), strict=True)):
            if group.link is None:
                continue
            link = group.link
            self._groups.append((i, s, link))
            self.linked[s] = True
            self.efficiency[s] = link.spectral_efficiency
            nominal = link.bandwidth_hz.expected() * link.spectral_efficiency
            self.rate_ul_bps[s] = nominal
            self.rate_dl_bps[s] = nominal
            if link.rate_dl_bps is not None:
                dl = link.rate_dl_bps.sample(rng, group.count)
                if np.any(dl <= 0):
                    raise ScenarioError.single(
                        f"devices.groups.{i}.link.rate_dl_bps", "drew a non-positive rate"
                    )
                self.fixed_dl_bps[s] = dl
                self.rate_dl_bps[s] = dl

    def start_round(self, round: int) -> None:
        self.base.start_round(round)
        for i, s, link in self._groups:
            bandwidth = link.bandwidth_hz.sample(self.rng, s.stop - s.start)
            if np.any(bandwidth <= 0):
                raise ScenarioError.single(
                    f"devices.groups.{i}.link.bandwidth_hz", "drew a non-positive bandwidth"
                )
            self.bandwidth_hz[s] = bandwidth

    def features(self, clients: np.ndarray) -> dict[str, np.ndarray]:
        """The wrapped network's features, with ``bandwidth_hz`` the round's allocated
        bandwidth on group links (devices on the radio model keep the radio model's, or
        NaN where it reports none)."""
        clients = np.asarray(clients, dtype=np.int64)
        features = dict(getattr(self.base, "features", lambda c: {})(clients))
        radio = features.get(Feature.BANDWIDTH_HZ, np.full(len(clients), np.nan))
        features[Feature.BANDWIDTH_HZ] = np.where(
            self.linked[clients], self.bandwidth_hz[clients], radio
        )
        return features

    def round_rate_ul_bps(self, clients: np.ndarray) -> np.ndarray:
        """This round's upload rates: B eta on group links (noise aside), else nominal."""
        clients = np.asarray(clients, dtype=np.int64)
        own = self.bandwidth_hz[clients] * self.efficiency[clients]
        return np.where(self.linked[clients], own, self.rate_ul_bps[clients])

    def round_rate_dl_bps(self, clients: np.ndarray) -> np.ndarray:
        """This round's download rates (see :meth:`round_rate_ul_bps`)."""
        clients = np.asarray(clients, dtype=np.int64)
        return np.where(self.linked[clients], self._link_dl_bps(clients), self.rate_dl_bps[clients])

    def _link_dl_bps(self, clients: np.ndarray | int) -> np.ndarray:
        """Group-link download rates: the fixed one where given, else this round's B eta."""
        fixed = self.fixed_dl_bps[clients]
        return np.where(
            np.isnan(fixed), self.bandwidth_hz[clients] * self.efficiency[clients], fixed
        )

    def _ul_rate(self, client: int) -> float:
        slowdown = float(self.devices.time_factor[client])
        return float(self.bandwidth_hz[client] * self.efficiency[client]) / slowdown

    def _dl_rate(self, client: int) -> float:
        return float(self._link_dl_bps(client))

    def download(self, env: simpy.Environment, client: int, bits: float) -> simpy.Process:
        if not self.linked[client]:
            return self.base.download(env, client, bits)
        return env.process(send_at_rate(env, client, bits, self._dl_rate(client)))

    def upload(self, env: simpy.Environment, client: int, bits: float) -> simpy.Process:
        if not self.linked[client]:
            return self.base.upload(env, client, bits)
        return env.process(send_at_rate(env, client, bits, self._ul_rate(client)))

    def multicast(self, env: simpy.Environment, clients: list[int], bits: float) -> simpy.Process:
        """Everyone receives at the slowest selected client's rate, finishing together."""
        own = [c for c in clients if self.linked[c]]
        others = [c for c in clients if not self.linked[c]]
        if not own:
            return self.base.multicast(env, clients, bits)

        def run() -> Generator[simpy.Event, Any, dict[int, Transfer] | None]:
            start = env.now
            worst = min(self._dl_rate(c) for c in own)
            inner = self.base.multicast(env, others, bits) if others else None
            try:
                yield env.timeout(bits / worst)
                if inner is not None:
                    yield inner
            except simpy.Interrupt:
                if inner is not None and inner.is_alive:
                    inner.interrupt("cancelled")
                return None
            return {c: Transfer(c, bits, start, env.now) for c in clients}

        return env.process(run())
