"""Energy the devices spend on FL: transmit power x airtime + compute power x busy time.

Only groups with an ``energy`` section are metered; the others report NaN. Work that is
later lost (a dropped client, a missed deadline) still cost its energy and is counted.
"""

from __future__ import annotations

import math

import numpy as np

from netfl.config.devices import DevicesConfig
from netfl.fl.population import Population


class EnergyMeter:
    """Per-client totals and the current round's sums, in joules."""

    def __init__(self, tx_power_w: np.ndarray, compute_power_w: np.ndarray) -> None:
        self.tx_power_w = np.asarray(tx_power_w, dtype=float)
        self.compute_power_w = np.asarray(compute_power_w, dtype=float)
        metered = ~np.isnan(self.tx_power_w)
        self.enabled = bool(np.any(metered))
        self.tx_j = np.where(metered, 0.0, math.nan)
        self.compute_j = self.tx_j.copy()
        self.round_tx_j = 0.0
        self.round_compute_j = 0.0

    @classmethod
    def build(cls, config: DevicesConfig, population: Population) -> EnergyMeter:
        """Powers from each group's ``energy`` section (NaN: not metered)."""
        tx = np.full(population.n_clients, math.nan)
        compute = tx.copy()
        for group, s in zip(config.groups, population.group_slices(), strict=True):
            if group.energy is not None:
                tx[s] = group.energy.tx_power_w
                compute[s] = group.energy.compute_power_w
        return cls(tx, compute)

    @classmethod
    def off(cls, n_clients: int) -> EnergyMeter:
        """A meter that meters nobody."""
        return cls(np.full(n_clients, math.nan), np.full(n_clients, math.nan))

    def start_round(self) -> None:
        self.round_tx_j = 0.0
        self.round_compute_j = 0.0

    def transmit(self, client: int, airtime_s: float) -> None:
        """Account an upload (or any transmission) of ``airtime_s`` seconds."""
        if not self.enabled:  # nobody metered (twice a client update)
            return
        joules = self.tx_power_w[client] * airtime_s
        if not math.isnan(joules):
            self.tx_j[client] += joules
            self.round_tx_j += joules

    def compute(self, client: int, busy_s: float) -> None:
        """Account ``busy_s`` seconds of work on an FL job."""
        if not self.enabled:
            return
        joules = self.compute_power_w[client] * busy_s
        if not math.isnan(joules):
            self.compute_j[client] += joules
            self.round_compute_j += joules

    def round_totals(self) -> tuple[float, float]:
        """(transmit, compute) joules of the current round; NaN when nothing is metered."""
        if not self.enabled:
            return math.nan, math.nan
        return self.round_tx_j, self.round_compute_j
