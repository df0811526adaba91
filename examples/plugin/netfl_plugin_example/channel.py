"""A path-loss model: log-distance path loss with log-normal shadowing.

PL(d) = FSPL(1 m, f) + 10 n log10(d / 1 m), with the free-space loss at 1 m
FSPL = 20 log10(4 pi f / c) (Rappaport, *Wireless Communications*, 2nd ed., eqs. (4.5)
and (4.68)); exponent n = 2 in line of sight, ``exponent`` otherwise. Every link is NLOS
(LOS probability 0), so the LOS branch only serves callers that force it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from channel_models.protocol import OutOfRange, checked_distances

SPEED_OF_LIGHT_M_S = 299_792_458.0


@dataclass(frozen=True)
class LogDistance:
    """Log-distance path loss (the methods of ``channel_models.protocol.ChannelModel``)."""

    exponent: float = 3.5
    sigma_db: float = 8.0
    valid_m: tuple[float, float] = (10.0, 5000.0)
    frequency_range_hz: tuple[float, float] = (0.5e9, 100e9)

    def problems(
        self, frequency_hz: float, bs_height_m: float, ue_height_m: float
    ) -> dict[str, str]:
        low, high = self.frequency_range_hz
        if low <= frequency_hz <= high:
            return {}
        band = f"{low / 1e9:g}-{high / 1e9:g} GHz"
        return {"frequency": f"log-distance is set up for {band}, not {frequency_hz / 1e9:g} GHz"}

    def distance_range_m(self) -> tuple[float, float]:
        return self.valid_m

    def los_probability(self, distance_m: np.ndarray) -> np.ndarray:
        return np.zeros(np.shape(distance_m))

    def shadowing_sigma_db(self, los: np.ndarray) -> np.ndarray:
        return np.full(np.shape(los), self.sigma_db)

    def check_distance(self, distance_m: np.ndarray, out_of_range: OutOfRange) -> np.ndarray:
        return checked_distances(distance_m, self.valid_m, out_of_range, "log-distance")

    def pathloss_db(
        self,
        distance_m: np.ndarray,
        frequency_hz: float,
        bs_height_m: float,
        ue_height_m: float,
        los: np.ndarray | None = None,
    ) -> np.ndarray:
        d = np.asarray(distance_m, dtype=float)
        fspl_1m_db = 20.0 * math.log10(4.0 * math.pi * frequency_hz / SPEED_OF_LIGHT_M_S)
        exponent = np.full(d.shape, self.exponent)
        if los is not None:
            exponent = np.where(np.asarray(los, dtype=bool), 2.0, exponent)
        return fspl_1m_db + 10.0 * exponent * np.log10(d)


#: The instance a scenario names (``radio.channel_model: log_distance``).
LOG_DISTANCE = LogDistance()
