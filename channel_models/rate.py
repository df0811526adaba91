"""SINR -> rate mappings (numpy only, vectorised).

- :class:`Shannon`: ``R = B log2(1 + SINR)``.
- :class:`ShannonWithLoss`: Shannon capacity with an implementation loss and a cap, as in
  Akdeniz et al. (JSAC 2014) and used by FedCS and MAB-CS (Yoshida et al. 2020
  Sec. IV-A): ``R = B min(log2(1 + 10^(-Δ/10) SINR), ρ_max)``, Δ = 1.6 dB,
  ρ_max = 4.8 bit/s/Hz.
- :class:`LteCqi`: LTE adaptive modulation and coding: the SINR picks the highest CQI of
  3GPP TS 36.213 Table 7.2.3-1 whose efficiency does not exceed the Shannon-gap efficiency
  ``log2(1 + SINR / Γ)``, ``Γ = -ln(5 BER) / 1.5`` (the "PiroEW2010" AMC model of ns-3
  LENA, target BER 5e-5); the rate is B times that CQI's efficiency.

SINRs are linear (not dB); bandwidths in Hz; rates in bit/s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Spectral efficiency (bit/s/Hz) of CQI 0..15, 3GPP TS 36.213 Table 7.2.3-1 (CQI 0 = out
#: of range).
CQI_EFFICIENCY_BPS_HZ = np.array(
    [
        0.0,
        0.1523,
        0.2344,
        0.3770,
        0.6016,
        0.8770,
        1.1758,
        1.4766,
        1.9141,
        2.4063,
        2.7305,
        3.3223,
        3.9023,
        4.5234,
        5.1152,
        5.5547,
    ]
)


def db_to_linear(value_db: np.ndarray | float) -> np.ndarray:
    return np.power(10.0, np.asarray(value_db, dtype=float) / 10.0)


def linear_to_db(value: np.ndarray | float) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return 10.0 * np.log10(np.asarray(value, dtype=float))


class RateMapping:
    """Base: ``rate_bps = bandwidth_hz * spectral_efficiency(sinr)``."""

    def spectral_efficiency(self, sinr: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def rate_bps(self, sinr: np.ndarray, bandwidth_hz: float | np.ndarray) -> np.ndarray:
        return np.asarray(bandwidth_hz, dtype=float) * self.spectral_efficiency(sinr)


@dataclass(frozen=True)
class Shannon(RateMapping):
    """Shannon capacity ``log2(1 + SINR)`` bit/s/Hz (no cap)."""

    def spectral_efficiency(self, sinr: np.ndarray) -> np.ndarray:
        return np.log2(1.0 + np.asarray(sinr, dtype=float))


@dataclass(frozen=True)
class ShannonWithLoss(RateMapping):
    """``min(log2(1 + 10^(-Δ/10) SINR), ρ_max)`` (Akdeniz et al. 2014)."""

    loss_db: float = 1.6
    max_efficiency_bps_hz: float = 4.8

    def __post_init__(self) -> None:
        if self.loss_db < 0:
            raise ValueError(f"loss_db must be >= 0, got {self.loss_db}")
        if not self.max_efficiency_bps_hz > 0:
            raise ValueError(
                f"max_efficiency_bps_hz must be positive, got {self.max_efficiency_bps_hz}"
            )

    def spectral_efficiency(self, sinr: np.ndarray) -> np.ndarray:
        gain = 10.0 ** (-self.loss_db / 10.0)
        return np.minimum(
            np.log2(1.0 + gain * np.asarray(sinr, dtype=float)), self.max_efficiency_bps_hz
        )


@dataclass(frozen=True)
class LteCqi(RateMapping):
    """Highest TS 36.213 CQI whose efficiency fits ``log2(1 + SINR/Γ)``, Γ from the BER."""

    target_ber: float = 5e-5

    def __post_init__(self) -> None:
        if not 0 < self.target_ber < 0.2:
            raise ValueError(f"target_ber must be in (0, 0.2), got {self.target_ber}")

    @property
    def gap(self) -> float:
        """Γ = -ln(5 BER) / 1.5 (linear)."""
        return float(-np.log(5.0 * self.target_ber) / 1.5)

    def cqi(self, sinr: np.ndarray) -> np.ndarray:
        """CQI index 0..15 for each SINR."""
        efficiency = np.log2(1.0 + np.asarray(sinr, dtype=float) / self.gap)
        # Number of table entries (CQI >= 1) whose efficiency fits.
        return np.searchsorted(CQI_EFFICIENCY_BPS_HZ[1:], efficiency, side="right")

    def spectral_efficiency(self, sinr: np.ndarray) -> np.ndarray:
        return CQI_EFFICIENCY_BPS_HZ[self.cqi(sinr)]


SHANNON = Shannon()
SHANNON_WITH_LOSS = ShannonWithLoss()
LTE_CQI = LteCqi()
