"""3GPP 3D path-loss models: TR 38.901 UMi-Street Canyon and UMa, and TR 36.873 3D-UMi/3D-UMa.

Every function is vectorised over numpy arrays and uses numpy only. Distances in metres
(``d2d`` horizontal, ``d3d`` with the antenna heights), frequencies in Hz (the formulas take
fc in GHz), heights in metres; device heights may be arrays (devices on floors).

TR 38.901 V16.1.0 (2019-12), Table 7.4.1-1, with d'_BP = 4 h'_BS h'_UT fc / c and effective
heights h' = h - h_E, h_E = 1 m:

- UMi-SC LOS: PL1 = 32.4 + 21 log10(d3D) + 20 log10(fc) for 10 m <= d2D <= d'_BP, then
  PL2 = 32.4 + 40 log10(d3D) + 20 log10(fc) - 9.5 log10(d'_BP^2 + (h_BS - h_UT)^2) up to
  5 km; sigma_SF 4 dB.
- UMi-SC NLOS: max(PL_LOS, 35.3 log10(d3D) + 22.4 + 21.3 log10(fc) - 0.3 (h_UT - 1.5));
  sigma_SF 7.82 dB.
- UMa LOS: PL1 = 28.0 + 22 log10(d3D) + 20 log10(fc), PL2 = 28.0 + 40 log10(d3D)
  + 20 log10(fc) - 9 log10(d'_BP^2 + (h_BS - h_UT)^2); sigma_SF 4 dB.
- UMa NLOS: max(PL_LOS, 13.54 + 39.08 log10(d3D) + 20 log10(fc) - 0.6 (h_UT - 1.5));
  sigma_SF 6 dB.
- LOS probability, Table 7.4.2-1 (d2D-out for indoor devices): UMi 1 for d <= 18 m, else
  18/d + exp(-d/36) (1 - 18/d); UMa the same with 63 m times
  (1 + C'(h_UT) 5/4 (d/100)^3 exp(-d/150)), C' = 0 for h_UT <= 13 m, ((h_UT - 13)/10)^1.5
  up to 23 m.
- O2I building penetration, Table 7.4.3-2: low-loss PL_tw = 5 - 10 log10(0.3 10^(-L_glass/10)
  + 0.7 10^(-L_concrete/10)), high-loss 5 - 10 log10(0.7 10^(-L_IRRglass/10)
  + 0.3 10^(-L_concrete/10)), with Table 7.4.3-1 L_glass = 2 + 0.2 fc,
  L_IRRglass = 23 + 0.3 fc, L_concrete = 5 + 4 fc; PL_in = 0.5 d2D-in; sigma_P 4.4 dB (low),
  6.5 dB (high); d2D-in the minimum of two uniform draws in [0, 25] m (UMa, UMi).

h_E is 1 m here for UMa as well: TR 38.901 draws h_E = 1 m with probability 1/(1 + C(d2D,
h_UT)), which is 1 for every device below 13 m; above it the breakpoint is shorter. The
large-scale calibration is insensitive to this (most links are NLOS or beyond d'_BP).

TR 36.873 V12.7.0 (2017-12), Table 7.2-1, the predecessor used by its phase-1 calibration:

- 3D-UMi LOS: 22.0 log10(d3D) + 28.0 + 20 log10(fc) before d'_BP, then
  40 log10(d3D) + 28.0 + 20 log10(fc) - 9 log10(d'_BP^2 + (h_BS - h_UT)^2); sigma_SF 3 dB.
- 3D-UMi NLOS: max(PL_LOS, 36.7 log10(d3D) + 22.7 + 26 log10(fc) - 0.3 (h_UT - 1.5));
  sigma_SF 4 dB.
- 3D-UMa LOS: as 3D-UMi LOS; sigma_SF 4 dB. 3D-UMa NLOS: max(PL_LOS, 161.04 - 7.1 log10(W)
  + 7.5 log10(h) - (24.37 - 3.7 (h/h_BS)^2) log10(h_BS) + (43.42 - 3.1 log10(h_BS))
  (log10(d3D) - 3) + 20 log10(fc) - (3.2 (log10(17.625))^2 - 4.97) - 0.6 (h_UT - 1.5)),
  W = h = 20 m; sigma_SF 6 dB.
- O2I: PL_tw = 20 dB, PL_in = 0.5 d_in with d_in uniform in [0, 25] m; the shadow fading of
  an indoor device has sigma 7 dB (replacing the outdoor one). LOS probability as above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from channel_models.protocol import OutOfRange, checked_distances

SPEED_OF_LIGHT_M_S = 3.0e8
EFFECTIVE_ENVIRONMENT_HEIGHT_M = 1.0

Release = Literal["tr38901", "tr36873"]
Environment = Literal["umi", "uma"]
Condition = Literal["los", "nlos", "mixed"]

#: Validity of fc (Hz): TR 38.901 Sec. 7.4 covers 0.5-100 GHz, TR 36.873 2-6 GHz.
FREQUENCY_RANGE_HZ: dict[str, tuple[float, float]] = {
    "tr38901": (0.5e9, 100e9),
    "tr36873": (2.0e9, 6.0e9),
}
#: Shadow-fading sigma (dB) for (LOS, NLOS), and O2I sigma where it replaces them.
SHADOWING_SIGMA_DB: dict[tuple[str, str], tuple[float, float]] = {
    ("tr38901", "umi"): (4.0, 7.82),
    ("tr38901", "uma"): (4.0, 6.0),
    ("tr36873", "umi"): (3.0, 4.0),
    ("tr36873", "uma"): (4.0, 6.0),
}
TR36873_O2I_SIGMA_DB = 7.0
TR36873_WALL_LOSS_DB = 20.0
O2I_SIGMA_DB = {"low": 4.4, "high": 6.5}
INDOOR_DISTANCE_MAX_M = 25.0


def _ghz(frequency_hz: float | np.ndarray) -> np.ndarray:
    return np.asarray(frequency_hz, dtype=float) / 1e9


def distance_3d_m(
    d2d_m: np.ndarray, bs_height_m: float | np.ndarray, ue_height_m: float | np.ndarray
) -> np.ndarray:
    return np.hypot(np.asarray(d2d_m, dtype=float), np.asarray(bs_height_m) - ue_height_m)


def breakpoint_distance_m(
    bs_height_m: float | np.ndarray,
    ue_height_m: float | np.ndarray,
    frequency_hz: float,
    effective_height_m: float = EFFECTIVE_ENVIRONMENT_HEIGHT_M,
) -> np.ndarray:
    """``d'_BP = 4 (h_BS - h_E) (h_UT - h_E) fc / c`` (TR 38.901 Table 7.4.1-1, note 1)."""
    h_bs = np.asarray(bs_height_m, dtype=float) - effective_height_m
    h_ut = np.asarray(ue_height_m, dtype=float) - effective_height_m
    return 4.0 * h_bs * h_ut * float(frequency_hz) / SPEED_OF_LIGHT_M_S


def _los(
    release: Release,
    environment: Environment,
    d2d: np.ndarray,
    log_d3d: np.ndarray,
    fc_ghz: np.ndarray,
    h_bs: float | np.ndarray,
    h_ut: np.ndarray,
    d_bp: np.ndarray,
) -> np.ndarray:
    if release == "tr38901" and environment == "umi":
        offset, slope_near, far_term = 32.4, 21.0, 9.5
    elif release == "tr38901":
        offset, slope_near, far_term = 28.0, 22.0, 9.0
    else:  # TR 36.873 3D-UMi and 3D-UMa share the LOS formula
        offset, slope_near, far_term = 28.0, 22.0, 9.0
    fc_term = 20.0 * np.log10(fc_ghz)
    near = offset + slope_near * log_d3d + fc_term
    with np.errstate(divide="ignore", invalid="ignore"):
        far = (
            offset
            + 40.0 * log_d3d
            + fc_term
            - far_term * np.log10(d_bp**2 + (np.asarray(h_bs) - h_ut) ** 2)
        )
    return np.where(d2d <= d_bp, near, far)


def _nlos(
    release: Release,
    environment: Environment,
    log_d3d: np.ndarray,
    fc_ghz: np.ndarray,
    h_bs: float,
    h_ut: np.ndarray,
    street_width_m: float,
    building_height_m: float,
) -> np.ndarray:
    log_f = np.log10(fc_ghz)
    if release == "tr38901" and environment == "umi":
        return 35.3 * log_d3d + 22.4 + 21.3 * log_f - 0.3 * (h_ut - 1.5)
    if release == "tr38901":
        return 13.54 + 39.08 * log_d3d + 20.0 * log_f - 0.6 * (h_ut - 1.5)
    if environment == "umi":
        return 36.7 * log_d3d + 22.7 + 26.0 * log_f - 0.3 * (h_ut - 1.5)
    w, h = street_width_m, building_height_m
    return (
        161.04
        - 7.1 * np.log10(w)
        + 7.5 * np.log10(h)
        - (24.37 - 3.7 * (h / h_bs) ** 2) * np.log10(h_bs)
        + (43.42 - 3.1 * np.log10(h_bs)) * (log_d3d - 3.0)
        + 20.0 * log_f
        - (3.2 * np.log10(17.625) ** 2 - 4.97)
        - 0.6 * (h_ut - 1.5)
    )


def los_probability(
    environment: Environment, d2d_out_m: np.ndarray, ue_height_m: float | np.ndarray = 1.5
) -> np.ndarray:
    """TR 38.901 Table 7.4.2-1 (the same expressions as TR 36.873 Table 7.2-2)."""
    d = np.maximum(np.asarray(d2d_out_m, dtype=float), 1e-9)
    decay = 36.0 if environment == "umi" else 63.0
    p = np.where(d <= 18.0, 1.0, 18.0 / d + np.exp(-d / decay) * (1.0 - 18.0 / d))
    if environment == "uma":
        h = np.asarray(ue_height_m, dtype=float)
        c = np.where(h <= 13.0, 0.0, ((np.clip(h, 13.0, 23.0) - 13.0) / 10.0) ** 1.5)
        p = np.where(d <= 18.0, 1.0, p * (1.0 + c * 1.25 * (d / 100.0) ** 3 * np.exp(-d / 150.0)))
    return np.minimum(p, 1.0)


def o2i_penetration_loss_db(kind: Literal["low", "high"], frequency_hz: float) -> float:
    """TR 38.901 Table 7.4.3-2 wall loss PL_tw (without the indoor and random parts)."""
    fc = float(_ghz(frequency_hz))
    concrete = 5.0 + 4.0 * fc
    if kind == "low":
        glass = 2.0 + 0.2 * fc
        return 5.0 - 10.0 * np.log10(0.3 * 10 ** (-glass / 10) + 0.7 * 10 ** (-concrete / 10))
    irr_glass = 23.0 + 0.3 * fc
    return 5.0 - 10.0 * np.log10(0.7 * 10 ** (-irr_glass / 10) + 0.3 * 10 ** (-concrete / 10))


@dataclass(frozen=True)
class ThreeGppModel:
    """One 3GPP 3D path-loss model (release, environment, condition).

    Satisfies :class:`channel_models.protocol.ChannelModel`: distances are 2D, the 3D
    distance comes from the heights; ``ue_height_m`` may be an array aligned with the
    distances. ``condition="mixed"``: the caller draws each link's LOS state with
    :meth:`los_probability` from its own stream and passes it to :meth:`pathloss_db`.
    """

    release: Release
    environment: Environment
    condition: Condition
    street_width_m: float = 20.0
    building_height_m: float = 20.0

    def distance_range_m(self) -> tuple[float, float]:
        return 10.0, 5000.0

    def shadowing_sigma_db(self, los: np.ndarray) -> np.ndarray:
        sigma_los, sigma_nlos = SHADOWING_SIGMA_DB[(self.release, self.environment)]
        return np.where(np.asarray(los, dtype=bool), sigma_los, sigma_nlos)

    def los_probability(
        self, distance_m: np.ndarray, ue_height_m: float | np.ndarray = 1.5
    ) -> np.ndarray:
        d = np.asarray(distance_m, dtype=float)
        if self.condition == "los":
            return np.ones_like(d)
        if self.condition == "nlos":
            return np.zeros_like(d)
        return los_probability(self.environment, d, ue_height_m)

    def problems(
        self, frequency_hz: float, bs_height_m: float, ue_height_m: float
    ) -> dict[str, str]:
        found: dict[str, str] = {}
        low, high = FREQUENCY_RANGE_HZ[self.release]
        if not low <= frequency_hz <= high:
            found["frequency"] = (
                f"{frequency_hz / 1e9:g} GHz is outside the {self.release} {self.environment}"
                f" model's validity ({low / 1e9:g}-{high / 1e9:g} GHz)"
            )
        if not 1.5 - 1e-9 <= ue_height_m <= 22.5 + 1e-9:
            found["ue_height"] = (
                f"{ue_height_m:g} m is outside the 3GPP models' UE heights (1.5-22.5 m)"
            )
        if bs_height_m <= max(ue_height_m, EFFECTIVE_ENVIRONMENT_HEIGHT_M):
            found["bs_height"] = (
                f"{bs_height_m:g} m must be above the UE ({ue_height_m:g} m) and h_E (1 m)"
            )
        return found

    def check_distance(self, distance_m: np.ndarray, out_of_range: OutOfRange) -> np.ndarray:
        """Return the distances to use: unchanged if valid, clipped, or refused (raises)."""
        return checked_distances(
            distance_m, self.distance_range_m(), out_of_range, f"{self.release} {self.environment}"
        )

    def pathloss_db(
        self,
        distance_m: np.ndarray,
        frequency_hz: float,
        bs_height_m: float,
        ue_height_m: float | np.ndarray,
        los: np.ndarray | None = None,
        d3d_m: np.ndarray | None = None,
    ) -> np.ndarray:
        """Median path loss in dB (no shadowing, no O2I loss). ``los`` required when mixed;
        ``d3d_m``: the 3D distances, when the caller has them (:func:`distance_3d_m`)."""
        d2d = np.asarray(distance_m, dtype=float)
        # Heights per device stay unbroadcast ((devices, 1) against (devices, sites)
        # distances): what depends on them alone is computed once per device.
        h_ut = np.asarray(ue_height_m, dtype=float)
        d3d = distance_3d_m(d2d, bs_height_m, h_ut) if d3d_m is None else d3d_m
        log_d3d = np.log10(d3d)
        fc = _ghz(frequency_hz)
        d_bp = breakpoint_distance_m(bs_height_m, h_ut, frequency_hz)
        los_db = _los(self.release, self.environment, d2d, log_d3d, fc, bs_height_m, h_ut, d_bp)
        if self.condition == "los":
            return los_db
        nlos_db = np.maximum(
            los_db,
            _nlos(
                self.release,
                self.environment,
                log_d3d,
                fc,
                bs_height_m,
                h_ut,
                self.street_width_m,
                self.building_height_m,
            ),
        )
        if self.condition == "nlos":
            return nlos_db
        if los is None:
            raise ValueError("a mixed LOS/NLOS model needs each link's condition (los=)")
        return np.where(np.asarray(los, dtype=bool), los_db, nlos_db)


UMI = ThreeGppModel("tr38901", "umi", "mixed")
UMI_LOS = ThreeGppModel("tr38901", "umi", "los")
UMI_NLOS = ThreeGppModel("tr38901", "umi", "nlos")
UMA = ThreeGppModel("tr38901", "uma", "mixed")
UMA_LOS = ThreeGppModel("tr38901", "uma", "los")
UMA_NLOS = ThreeGppModel("tr38901", "uma", "nlos")
UMI_3D = ThreeGppModel("tr36873", "umi", "mixed")
UMA_3D = ThreeGppModel("tr36873", "uma", "mixed")
