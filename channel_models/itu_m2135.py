"""ITU-R M.2135-1 path-loss models: Urban Micro (UMi) and Urban Macro (UMa), Table A1-2.

Distances are 2D BS-UT distances in metres (the IMTAphy test vector, 55.902 m, is 2D),
frequencies in Hz (the formulas take fc in GHz), heights in metres. Every function is
vectorised over numpy arrays and uses numpy only.

The formulas (Report ITU-R M.2135-1, Table A1-2, as implemented by IMTAphy
``M2135Pathloss.cpp`` and summarised in ``docs/radio.md``):

- UMi LOS: ``22.0 log10(d) + 28.0 + 20 log10(fc)`` for 10 m < d < d'_BP, then
  ``40 log10(d) + 7.8 - 18 log10(h'_BS) - 18 log10(h'_UT) + 2 log10(fc)`` up to 5000 m;
  sigma 3 dB. ``d'_BP = 4 h'_BS h'_UT fc / c`` with effective heights ``h' = h - 1 m``.
- UMi NLOS (hexagonal layout): ``36.7 log10(d) + 22.7 + 26 log10(fc)``, 10 m < d < 2000 m;
  sigma 4 dB; no antenna-height term.
- UMi LOS probability: ``min(18/d, 1) (1 - exp(-d/36)) + exp(-d/36)``.
- UMa LOS: as UMi LOS (same breakpoint formula) up to 5000 m; sigma 4 dB.
- UMa NLOS: ``161.04 - 7.1 log10(W) + 7.5 log10(h) - (24.37 - 3.7 (h/h_BS)^2) log10(h_BS)
  + (43.42 - 3.1 log10(h_BS)) (log10(d) - 3) + 20 log10(fc)
  - (3.2 (log10(11.75 h_UT))^2 - 4.97)``, 10 m < d < 5000 m, street width W and building
  height h default 20 m; sigma 6 dB.
- UMa LOS probability: ``min(18/d, 1) (1 - exp(-d/63)) + exp(-d/63)``.

All models are valid for 2 GHz <= fc <= 6 GHz.

``h'_UT = 0`` (a 1 m UE, as in Yoshida et al. 2020 Sec. IV-A) puts the breakpoint at
0 m and makes the post-breakpoint LOS formula ``log10(0)``: the LOS models refuse it
(:meth:`M2135Model.problems` names the height), the NLOS hexagonal UMi model ignores heights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from channel_models.protocol import OutOfRange, checked_distances

SPEED_OF_LIGHT_M_S = 3.0e8
FREQUENCY_RANGE_HZ = (2.0e9, 6.0e9)

Environment = Literal["umi", "uma"]
Condition = Literal["los", "nlos", "mixed"]


def _ghz(frequency_hz: float | np.ndarray) -> np.ndarray:
    return np.asarray(frequency_hz, dtype=float) / 1e9


def breakpoint_distance_m(
    bs_height_m: float | np.ndarray, ue_height_m: float | np.ndarray, frequency_hz: float
) -> np.ndarray:
    """``d'_BP = 4 h'_BS h'_UT fc / c`` with ``h' = h - 1 m`` (Table A1-2, note 1)."""
    h_bs = np.asarray(bs_height_m, dtype=float) - 1.0
    h_ut = np.asarray(ue_height_m, dtype=float) - 1.0
    return 4.0 * h_bs * h_ut * float(frequency_hz) / SPEED_OF_LIGHT_M_S


def los_pathloss_db(
    distance_m: np.ndarray, frequency_hz: float, bs_height_m: float, ue_height_m: float
) -> np.ndarray:
    """UMi/UMa LOS path loss with the breakpoint (Table A1-2; both use the same formula)."""
    d = np.asarray(distance_m, dtype=float)
    fc = _ghz(frequency_hz)
    d_bp = breakpoint_distance_m(bs_height_m, ue_height_m, frequency_hz)
    near = 22.0 * np.log10(d) + 28.0 + 20.0 * np.log10(fc)
    with np.errstate(divide="ignore"):
        far = (
            40.0 * np.log10(d)
            + 7.8
            - 18.0 * np.log10(bs_height_m - 1.0)
            - 18.0 * np.log10(ue_height_m - 1.0)
            + 2.0 * np.log10(fc)
        )
    return np.where(d < d_bp, near, far)


def umi_nlos_pathloss_db(distance_m: np.ndarray, frequency_hz: float) -> np.ndarray:
    """UMi NLOS, hexagonal layout: ``36.7 log10(d) + 22.7 + 26 log10(fc)`` (Table A1-2)."""
    d = np.asarray(distance_m, dtype=float)
    return 36.7 * np.log10(d) + 22.7 + 26.0 * np.log10(_ghz(frequency_hz))


def uma_nlos_pathloss_db(
    distance_m: np.ndarray,
    frequency_hz: float,
    bs_height_m: float,
    ue_height_m: float,
    street_width_m: float = 20.0,
    building_height_m: float = 20.0,
) -> np.ndarray:
    """UMa NLOS (Table A1-2), with street width W and average building height h."""
    d = np.asarray(distance_m, dtype=float)
    w, h, h_bs, h_ut = street_width_m, building_height_m, bs_height_m, ue_height_m
    return (
        161.04
        - 7.1 * np.log10(w)
        + 7.5 * np.log10(h)
        - (24.37 - 3.7 * (h / h_bs) ** 2) * np.log10(h_bs)
        + (43.42 - 3.1 * np.log10(h_bs)) * (np.log10(d) - 3.0)
        + 20.0 * np.log10(_ghz(frequency_hz))
        - (3.2 * np.log10(11.75 * h_ut) ** 2 - 4.97)
    )


def los_probability(distance_m: np.ndarray, decay_m: float) -> np.ndarray:
    """``min(18/d, 1) (1 - exp(-d/decay)) + exp(-d/decay)``; decay 36 m (UMi), 63 m (UMa)."""
    d = np.asarray(distance_m, dtype=float)
    tail = np.exp(-d / decay_m)
    return np.minimum(18.0 / d, 1.0) * (1.0 - tail) + tail


@dataclass(frozen=True)
class M2135Model:
    """One M.2135-1 environment in one propagation condition.

    ``condition="mixed"``: each link is LOS with :meth:`los_probability`; the caller draws
    the condition (from its own random stream) and passes it to :meth:`pathloss_db`.
    """

    environment: Environment
    condition: Condition
    street_width_m: float = 20.0
    building_height_m: float = 20.0

    @property
    def los_decay_m(self) -> float:
        return 36.0 if self.environment == "umi" else 63.0

    @property
    def nlos_max_distance_m(self) -> float:
        return 2000.0 if self.environment == "umi" else 5000.0

    def distance_range_m(self) -> tuple[float, float]:
        """Range of validity of the 2D distance for every condition this model may use."""
        if self.condition == "los":
            return 10.0, 5000.0
        return 10.0, self.nlos_max_distance_m

    def shadowing_sigma_db(self, los: np.ndarray) -> np.ndarray:
        """Log-normal shadow-fading standard deviation per link (Table A1-2)."""
        sigma_los, sigma_nlos = (3.0, 4.0) if self.environment == "umi" else (4.0, 6.0)
        return np.where(np.asarray(los, dtype=bool), sigma_los, sigma_nlos)

    def los_probability(self, distance_m: np.ndarray) -> np.ndarray:
        """Probability that each link is LOS (0 or 1 for a fixed condition)."""
        d = np.asarray(distance_m, dtype=float)
        if self.condition == "los":
            return np.ones_like(d)
        if self.condition == "nlos":
            return np.zeros_like(d)
        return los_probability(d, self.los_decay_m)

    def problems(
        self, frequency_hz: float, bs_height_m: float, ue_height_m: float
    ) -> dict[str, str]:
        """Inputs outside validity that clipping cannot fix: ``{"frequency"|"ue_height"|...:
        message}`` (empty when valid). Distances are checked by :meth:`check_distance`."""
        found: dict[str, str] = {}
        low, high = FREQUENCY_RANGE_HZ
        if not low <= frequency_hz <= high:
            found["frequency"] = (
                f"{frequency_hz / 1e9:g} GHz is outside ITU-R M.2135-1's validity (2-6 GHz)"
            )
        if self.condition != "nlos" and (bs_height_m <= 1.0 or ue_height_m <= 1.0):
            which = "ue_height" if ue_height_m <= 1.0 else "bs_height"
            height = ue_height_m if which == "ue_height" else bs_height_m
            found[which] = (
                f"{height:g} m gives an effective height h' = h - 1 m <= 0, so the LOS"
                f" breakpoint d'_BP = 4 h'_BS h'_UT fc / c is 0 and the LOS path loss beyond"
                f" it takes log10 of h' (undefined); use a height above 1 m or an NLOS model"
                f" ({self.environment}_nlos)"
            )
        if self.environment == "uma" and self.condition != "los" and ue_height_m <= 0.0:
            found["ue_height"] = "UMa NLOS needs a positive UE height (log10(11.75 h_UT))"
        return found

    def check_distance(self, distance_m: np.ndarray, out_of_range: OutOfRange) -> np.ndarray:
        """Return the distances to use: unchanged if valid, clipped, or refused (raises)."""
        return checked_distances(
            distance_m,
            self.distance_range_m(),
            out_of_range,
            f"{self.environment}_{self.condition}",
        )

    def pathloss_db(
        self,
        distance_m: np.ndarray,
        frequency_hz: float,
        bs_height_m: float,
        ue_height_m: float,
        los: np.ndarray | None = None,
    ) -> np.ndarray:
        """Median path loss in dB (no shadowing). ``los`` is required when mixed."""
        d = np.asarray(distance_m, dtype=float)
        if self.condition == "mixed":
            if los is None:
                raise ValueError("a mixed LOS/NLOS model needs each link's condition (los=)")
            is_los = np.asarray(los, dtype=bool)
        else:
            is_los = np.full(d.shape, self.condition == "los")
        out = np.empty(d.shape)
        if np.any(is_los):
            out[is_los] = los_pathloss_db(d[is_los], frequency_hz, bs_height_m, ue_height_m)
        nlos = ~is_los
        if np.any(nlos):
            if self.environment == "umi":
                out[nlos] = umi_nlos_pathloss_db(d[nlos], frequency_hz)
            else:
                out[nlos] = uma_nlos_pathloss_db(
                    d[nlos],
                    frequency_hz,
                    bs_height_m,
                    ue_height_m,
                    self.street_width_m,
                    self.building_height_m,
                )
        return out


UMI_NLOS = M2135Model("umi", "nlos")
UMI_LOS = M2135Model("umi", "los")
UMI = M2135Model("umi", "mixed")
UMA_NLOS = M2135Model("uma", "nlos")
UMA_LOS = M2135Model("uma", "los")
UMA = M2135Model("uma", "mixed")
