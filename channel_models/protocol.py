"""What a path-loss model must offer, and a conformance check for plug-in authors.

A ``radio.channel_model`` is any object with the methods of :class:`ChannelModel`: the
registered ones (``channel_models.CHANNEL_MODELS``) and a plug-in named
``package.module:attribute``. Distances are 2D base-station-to-device distances in metres,
frequencies in Hz, heights in metres; every method is vectorised over numpy arrays.

Writing one: copy :class:`channel_models.tr38901.ThreeGppModel` or
:class:`channel_models.itu_m2135.M2135Model`, then run :func:`check_channel_model` on it
(``tests/test_channel_models.py`` runs it over every registered model).
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

import numpy as np

OutOfRange = Literal["refuse", "clip"]


class OutOfValidityError(ValueError):
    """An input lies outside a model's range of validity (and clipping was not asked for)."""


def checked_distances(
    distance_m: np.ndarray, valid_m: tuple[float, float], out_of_range: OutOfRange, model: str
) -> np.ndarray:
    """``ChannelModel.check_distance`` for models valid on one interval of distances: the
    distances unchanged if valid, clipped to it, or refused naming ``model``."""
    d = np.asarray(distance_m, dtype=float)
    low, high = valid_m
    outside = (d < low - 1e-9) | (d > high + 1e-9)
    if not np.any(outside):
        return d
    if out_of_range == "clip":
        return np.clip(d, low, high)
    bad = d[outside]
    raise OutOfValidityError(
        f"{bad.size} distance(s) outside the {model} model's validity [{low:g}, {high:g}] m"
        f" (e.g. {bad[0]:.1f} m)"
    )


@runtime_checkable
class ChannelModel(Protocol):
    """A path-loss model: median loss, LOS probability, shadowing and validity."""

    def problems(
        self, frequency_hz: float, bs_height_m: float, ue_height_m: float
    ) -> dict[str, str]:
        """Inputs outside validity: ``{"frequency"|"bs_height"|"ue_height": message}``."""
        ...

    def distance_range_m(self) -> tuple[float, float]:
        """The 2D distances (m) the model is valid for."""
        ...

    def los_probability(self, distance_m: np.ndarray) -> np.ndarray:
        """Probability in [0, 1] that each link is LOS."""
        ...

    def shadowing_sigma_db(self, los: np.ndarray) -> np.ndarray:
        """Log-normal shadow-fading standard deviation (dB) of each link."""
        ...

    def check_distance(self, distance_m: np.ndarray, out_of_range: OutOfRange) -> np.ndarray:
        """The distances to use: unchanged if valid, clipped, or refused (raise ValueError)."""
        ...

    def pathloss_db(
        self,
        distance_m: np.ndarray,
        frequency_hz: float,
        bs_height_m: float,
        ue_height_m: float,
        los: np.ndarray | None = None,
    ) -> np.ndarray:
        """Median path loss (dB) of each link; ``los`` gives each link's condition."""
        ...


def check_channel_model(
    model: object, frequency_hz: float = 3.5e9, bs_height_m: float = 10.0, ue_height_m: float = 1.5
) -> list[str]:
    """The rules ``model`` breaks (empty if none), each as one sentence.

    Rules: it has every method of :class:`ChannelModel`; at a valid frequency and heights it
    reports no problem; over its distance range the path loss is finite, of the input's
    shape, positive, and does not decrease with distance for a fixed condition; LOS
    probabilities lie in [0, 1]; shadowing sigmas are finite and non-negative;
    ``check_distance`` refuses a distance outside the range with a ``ValueError`` and clips
    it on request; the inputs are not modified.
    """
    if not isinstance(model, ChannelModel):
        missing = [
            name
            for name in (
                "problems",
                "distance_range_m",
                "los_probability",
                "shadowing_sigma_db",
                "check_distance",
                "pathloss_db",
            )
            if not callable(getattr(model, name, None))
        ]
        return [f"it lacks the ChannelModel method(s) {', '.join(missing)}"]
    broken: list[str] = []
    found = model.problems(frequency_hz, bs_height_m, ue_height_m)
    if found:
        broken.append(
            f"problems() refuses a valid setting ({frequency_hz / 1e9:g} GHz,"
            f" {bs_height_m:g} m BS, {ue_height_m:g} m UE): {found}"
        )
        return broken
    low, high = model.distance_range_m()
    if not 0 <= low < high:
        return [f"distance_range_m() = ({low}, {high}) is not an interval of distances"]
    distance = np.geomspace(low, min(high, 2000.0), 50)
    before = distance.copy()
    p_los = np.asarray(model.los_probability(distance))
    if p_los.shape != distance.shape or np.any((p_los < 0) | (p_los > 1)):
        broken.append("los_probability() is not a probability per distance")
    for los_value in (True, False):
        los = np.full(distance.shape, los_value)
        loss = np.asarray(
            model.pathloss_db(distance, frequency_hz, bs_height_m, ue_height_m, los=los)
        )
        condition = "LOS" if los_value else "NLOS"
        if loss.shape != distance.shape or not np.all(np.isfinite(loss)):
            broken.append(f"pathloss_db() is not finite and of the input's shape ({condition})")
        elif np.any(loss <= 0) or np.any(np.diff(loss) < -1e-9):
            broken.append(f"pathloss_db() is not positive and non-decreasing ({condition})")
        sigma = np.asarray(model.shadowing_sigma_db(los))
        if sigma.shape != distance.shape or np.any(~np.isfinite(sigma) | (sigma < 0)):
            broken.append(
                f"shadowing_sigma_db() is not a non-negative sigma per link ({condition})"
            )
    if not np.array_equal(distance, before):
        broken.append("a method modified its input array")
    outside = np.array([high * 2.0 + 1.0])
    try:
        model.check_distance(outside, "refuse")
        broken.append("check_distance() accepted a distance beyond its range")
    except ValueError:
        pass
    clipped = np.asarray(model.check_distance(outside, "clip"))
    if not np.all(clipped <= high + 1e-9):
        broken.append("check_distance(..., 'clip') did not clip to the range")
    return broken
