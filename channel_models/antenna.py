"""Base-station antenna gains of the 3GPP system-level models, vectorised over numpy arrays.

The element pattern is TR 38.901 Table 7.3-1 (identical to TR 36.873 Table 7.1-1), with
angles in degrees in the antenna's own frame (zenith ``theta`` from 0 (up) to 180, 90 the
horizon; azimuth ``phi`` from -180 to 180, 0 the boresight):

- vertical cut ``A_V(theta) = -min(12 ((theta - 90) / 65)^2, SLA_V)``, SLA_V = 30 dB;
- horizontal cut ``A_H(phi) = -min(12 (phi / 65)^2, A_max)``, A_max = 30 dB;
- element ``A(theta, phi) = -min(-(A_V + A_H), A_max)`` plus the maximum directional gain
  G_E,max = 8 dBi.

A column of K vertically stacked elements with electrical downtilt (TR 36.873 Sec. 7.1.1,
the "K = M = 10" configuration of the TR 36.873 phase-1 and TR 38.901 Sec. 7.8.1
calibrations) multiplies the element's power pattern by the array factor
``|sum_k w_k exp(j 2 pi (k-1) d_V cos(theta) / lambda)|^2`` with weights
``w_k = exp(-j 2 pi (k-1) d_V cos(theta_etilt) / lambda) / sqrt(K)``, where theta_etilt is
the electrical tilt as a zenith angle (90 + downtilt below the horizon, e.g. 102 degrees)
and d_V the element spacing (0.5 lambda): 10 log10 K = 10 dB more gain in the tilt direction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ELEMENT_MAX_GAIN_DBI = 8.0
BEAMWIDTH_DEG = 65.0
SIDE_LOBE_LIMIT_DB = 30.0  # SLA_V
FRONT_TO_BACK_DB = 30.0  # A_max


def element_gain_dbi(zenith_deg: np.ndarray, azimuth_deg: np.ndarray) -> np.ndarray:
    """The 3GPP sector element's gain in dBi (TR 38.901 Table 7.3-1)."""
    theta = np.asarray(zenith_deg, dtype=float)
    phi = _wrapped_deg(np.asarray(azimuth_deg, dtype=float)) - 180.0
    vertical = -np.minimum(12.0 * ((theta - 90.0) / BEAMWIDTH_DEG) ** 2, SIDE_LOBE_LIMIT_DB)
    horizontal = -np.minimum(12.0 * (phi / BEAMWIDTH_DEG) ** 2, FRONT_TO_BACK_DB)
    return ELEMENT_MAX_GAIN_DBI - np.minimum(-(vertical + horizontal), FRONT_TO_BACK_DB)


def _wrapped_deg(azimuth_deg: np.ndarray) -> np.ndarray:
    """``(azimuth + 180) % 360``, bit for bit, without the float remainder where it can.

    For ``v = azimuth + 180`` in [-360, 360) the remainder is ``v`` or ``v + 360`` exactly as
    numpy's ``%`` rounds it (fmod is exact there and adds 360 to a negative result), at a
    tenth of its cost: the relative azimuths of a sectorised site (arctan2 minus a boresight
    of 30, 150 or 270 degrees) always lie there."""
    v = azimuth_deg + 180.0
    if v.size and v.min() >= -360.0 and v.max() < 360.0:
        return np.where(v < 0.0, v + 360.0, v)
    return v % 360.0


def array_factor_db(
    zenith_deg: np.ndarray, elements: int, tilt_zenith_deg: float, spacing_wavelengths: float
) -> np.ndarray:
    """Power gain in dB of ``elements`` vertically stacked elements steered to
    ``tilt_zenith_deg`` (TR 36.873 Sec. 7.1.1); 0 dB for a single element.

    With psi = 2 pi d_V (cos theta - cos theta_etilt) / lambda, the sum of K unit phasors
    has |sum_k exp(j k psi)|^2 = sin^2(K psi / 2) / sin^2(psi / 2) (K^2 where psi is a
    multiple of 2 pi), so the gain is that over K, in closed form."""
    theta = np.radians(np.asarray(zenith_deg, dtype=float))
    if elements == 1:
        return np.zeros_like(theta)
    psi = 2.0 * np.pi * spacing_wavelengths * (np.cos(theta) - np.cos(np.radians(tilt_zenith_deg)))
    half = np.sin(psi / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        power = np.sin(elements * psi / 2.0) ** 2 / half**2
    power = np.where(np.abs(half) < 1e-9, float(elements**2), power) / elements
    return 10.0 * np.log10(np.maximum(power, 1e-30))


@dataclass(frozen=True)
class SectorAntenna:
    """A 3GPP sector antenna: the element pattern, or a tilted vertical column of them.

    ``mechanical_tilt_deg`` tilts the whole antenna below the horizon (the element pattern
    then peaks at zenith 90 + tilt); ``electrical_tilt_deg`` steers the column's beam (only
    with ``elements`` > 1).
    """

    elements: int = 1
    electrical_tilt_deg: float = 0.0
    mechanical_tilt_deg: float = 0.0
    spacing_wavelengths: float = 0.5

    def gain_dbi(self, zenith_deg: np.ndarray, azimuth_deg: np.ndarray) -> np.ndarray:
        """Gain towards each (zenith, azimuth relative to the boresight), in dBi."""
        theta = np.asarray(zenith_deg, dtype=float) - self.mechanical_tilt_deg
        gain = element_gain_dbi(theta, azimuth_deg)
        if self.elements > 1:
            gain = gain + array_factor_db(
                theta, self.elements, 90.0 + self.electrical_tilt_deg, self.spacing_wavelengths
            )
        return gain


@dataclass(frozen=True)
class OmniAntenna:
    """An isotropic antenna with a fixed gain (0 dBi by default)."""

    gain_dbi_value: float = 0.0

    def gain_dbi(self, zenith_deg: np.ndarray, azimuth_deg: np.ndarray) -> np.ndarray:
        return np.full(
            np.broadcast(np.asarray(zenith_deg), np.asarray(azimuth_deg)).shape, self.gain_dbi_value
        )
