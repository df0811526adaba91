"""Shadowing and LOS state that follow each device along its trajectory.

Shadow fading is a spatial field: its autocorrelation at a distance dx is
R(dx) = exp(-|dx| / d_cor) (Gudmundson 1991; the same exponential form in TR 38.901
Sec. 7.4.4 eq. (7.4-5) and Sec. 7.6.3.1). Along a trajectory sampled at the radio updates
a first-order autoregression keeps exactly that correlation between consecutive samples
(:class:`CorrelatedShadowing`, one process per (device, site) link):

    S_k = rho S_(k-1) + sqrt(1 - rho^2) sigma N(0, 1),    rho = exp(-dd_k / d_cor)

with dd_k the distance the device moved since the last update. A device that moves 1 m
keeps almost all of its shadowing (rho = exp(-1/13) = 0.93 in UMi NLOS) instead of drawing
a new one; one that has not moved keeps it exactly. Over several updates the correlation
is exp(-(sum of dd) / d_cor): exact along a straight path, an approximation where the path
turns (the field is sampled along the path, as in TR 38.901 Procedure A). Links to
different sites stay independent, as in the drop (:mod:`netfl.radio.propagation`).

d_cor comes from TR 38.901 Table 7.5-6 Part-1 (horizontal correlation distance of the shadow
fading, :data:`SHADOWING_DECORRELATION_M`): UMi-Street Canyon LOS 10 m, NLOS 13 m, O2I 7 m;
UMa LOS 37 m, NLOS 50 m, O2I 7 m; RMa LOS 37 m, NLOS 120 m.

The LOS state follows the trajectory too (TR 38.901 Sec. 7.6.3.3, spatially consistent
LOS/NLOS state): each link's state is a spatially consistent uniform variable compared with
the LOS probability of its current distance, LOS when U < P_LOS(d2D). The uniform is
U = Phi(G) of a standard Gaussian G with the same AR(1) update along the trajectory and the
LOS-state correlation distance of TR 38.901 Table 7.6.3.1-2 (:data:`LOS_DECORRELATION_M`:
UMi 50 m, UMa 50 m, RMa 60 m, indoor 10 m) (:class:`CorrelatedLosState`). At t = 0 it takes
the drop's uniforms, so the initial states are the drop's; the marginal P(LOS) stays
P_LOS(d2D) at every update (U stays uniform).

When a link's LOS state (or O2I state) changes, TR 38.901 Sec. 7.6.3.4 does not correlate
parameters across states: :meth:`CorrelatedShadowing.redraw` then draws that link's
shadowing afresh with the new state's sigma and d_cor (as ns-3's 3GPP propagation loss
model does).

Pure numpy over (devices, sites) arrays: one update of 1,000 devices x 19 sites costs about
0.1 ms per process (benchmarks/mobility_update.py).
"""

from __future__ import annotations

import numpy as np

#: TR 38.901 Table 7.5-6 Part-1, shadow-fading correlation distance (m) by scenario and state.
SHADOWING_DECORRELATION_M: dict[tuple[str, str], float] = {
    ("umi", "los"): 10.0,
    ("umi", "nlos"): 13.0,
    ("umi", "o2i"): 7.0,
    ("uma", "los"): 37.0,
    ("uma", "nlos"): 50.0,
    ("uma", "o2i"): 7.0,
    ("rma", "los"): 37.0,
    ("rma", "nlos"): 120.0,
}
#: TR 38.901 Table 7.6.3.1-2, correlation distance (m) of the LOS/NLOS state.
LOS_DECORRELATION_M: dict[str, float] = {"rma": 60.0, "umi": 50.0, "uma": 50.0, "indoor": 10.0}


def decorrelation_distance_m(
    environment: str, los: np.ndarray, indoor: np.ndarray | None = None
) -> np.ndarray:
    """d_cor of each link: LOS or NLOS outdoors, O2I for indoor devices.

    ``los`` is ``(devices, sites)``; ``indoor`` ``(devices,)`` (None: all outdoor).

    Examples
    --------
    >>> decorrelation_distance_m("umi", np.array([[True, False]])).tolist()
    [[10.0, 13.0]]
    """
    los = np.asarray(los, dtype=bool)
    d = np.where(
        los,
        SHADOWING_DECORRELATION_M[(environment, "los")],
        SHADOWING_DECORRELATION_M[(environment, "nlos")],
    )
    if indoor is not None and (environment, "o2i") in SHADOWING_DECORRELATION_M:
        d = np.where(
            np.asarray(indoor)[:, None], SHADOWING_DECORRELATION_M[(environment, "o2i")], d
        )
    return d


class _PathProcess:
    """Standard Gaussian AR(1) processes along each device's path, one per (device, site):
    z <- rho z + sqrt(1 - rho^2) N(0, 1), rho = exp(-dd / d_cor).

    With ``min_step_m`` > 0 a device's process moves only once it has gone that far since
    its last move (the distance accumulates, so the correlation between the values it takes
    stays exactly exp(-distance / d_cor)); in between the value is held. That trades a lag
    of at most ``min_step_m`` along the path for fewer draws: a pedestrian at 1.4 m/s with
    0.1 s updates and ``min_step_m = 1`` draws once in 7 updates.
    """

    def __init__(
        self,
        z: np.ndarray,
        d_cor_m: float | np.ndarray,
        rng: np.random.Generator,
        min_step_m: float,
    ) -> None:
        self.z = z
        self.d_cor_m = np.broadcast_to(np.asarray(d_cor_m, dtype=float), z.shape).copy()
        if np.any(self.d_cor_m <= 0):
            raise ValueError("d_cor_m must be positive")
        self.rng = rng
        self.min_step_m = float(min_step_m)
        self.pending_m = np.zeros(z.shape[0])

    def advance(self, moved_m: np.ndarray) -> np.ndarray:
        """Move each device; return the rows (devices) whose values changed."""
        return self.advance_rows(np.arange(len(self.pending_m)), moved_m)

    def advance_rows(self, devices: np.ndarray, moved_m: np.ndarray) -> np.ndarray:
        """Move the ``devices`` (ascending rows) by ``moved_m`` (one each; the others stay
        where they are, exactly as :meth:`advance` with 0 for them would leave them);
        return the rows whose values changed."""
        moved = np.asarray(moved_m, dtype=float)
        if not (moved >= 0).all():  # NaN too
            raise ValueError("moved_m must be >= 0 (inf draws afresh)")
        self.pending_m[devices] += moved
        rows = devices[self.pending_m[devices] >= max(self.min_step_m, 1e-300)]
        if not len(rows):
            return rows
        every = len(rows) == len(self.pending_m)  # the usual case: no fancy indexing
        pick = slice(None) if every else rows
        rho = np.exp(-self.pending_m[pick, None] / self.d_cor_m[pick])
        innovation = self.rng.standard_normal((len(rows), self.z.shape[1]))
        self.z[pick] = rho * self.z[pick] + np.sqrt(1.0 - rho * rho) * innovation
        self.pending_m[pick] = 0.0
        return rows


class CorrelatedShadowing:
    """Shadow fading of every (device, site) link, correlated along each trajectory.

    Parameters
    ----------
    sigma_db
        ``(devices, sites)`` standard deviation of each link's shadowing, dB.
    d_cor_m
        Decorrelation distance, m: a scalar or an array broadcasting to ``sigma_db``.
    rng
        The shadowing stream (the innovations of every update come from it).
    initial_db
        The shadowing at t = 0 (the drop's); None draws it from ``rng``.
    min_step_m
        Move a device's shadowing only once it has gone this far (0: at every update;
        see :class:`_PathProcess`).

    Examples
    --------
    >>> state = CorrelatedShadowing(np.full((2, 3), 4.0), 10.0, np.random.default_rng(0))
    >>> first = state.shadowing_db.copy()
    >>> bool(np.all(state.advance(np.zeros(2)) == first))  # not moved: unchanged
    True
    """

    def __init__(
        self,
        sigma_db: np.ndarray,
        d_cor_m: float | np.ndarray,
        rng: np.random.Generator,
        initial_db: np.ndarray | None = None,
        min_step_m: float = 0.0,
    ) -> None:
        self.sigma_db = np.array(sigma_db, dtype=float)
        if initial_db is None:
            z = rng.standard_normal(self.sigma_db.shape)
        else:
            initial = np.asarray(initial_db, dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                z = np.where(self.sigma_db > 0, initial / self.sigma_db, 0.0)
        self._path = _PathProcess(z, d_cor_m, rng, min_step_m)

    @property
    def d_cor_m(self) -> np.ndarray:
        return self._path.d_cor_m

    @property
    def shadowing_db(self) -> np.ndarray:
        """Current shadowing of every link, dB ``(devices, sites)``."""
        return self.sigma_db * self._path.z

    def advance(self, moved_m: np.ndarray) -> np.ndarray:
        """Move each device by ``moved_m`` (m, ``(devices,)``; inf: a new independent draw)
        and return the shadowing of every link, dB."""
        self._path.advance(moved_m)
        return self.shadowing_db

    def advance_rows(self, devices: np.ndarray, moved_m: np.ndarray) -> np.ndarray:
        """Move only the ``devices`` (ascending rows, :meth:`_PathProcess.advance_rows`) and
        return their shadowing, dB ``(len(devices), sites)``."""
        self._path.advance_rows(devices, moved_m)
        return self.sigma_db[devices] * self._path.z[devices]

    def redraw(self, links: np.ndarray, sigma_db: np.ndarray, d_cor_m: np.ndarray) -> None:
        """Draw the shadowing of the ``links`` (a boolean ``(devices, sites)`` mask) afresh
        with new sigma and d_cor (their LOS or O2I state changed)."""
        links = np.asarray(links, dtype=bool)
        device, site = np.nonzero(links)
        self.redraw_links(device, site, np.asarray(sigma_db)[links], np.asarray(d_cor_m)[links])

    def redraw_links(
        self, device: np.ndarray, site: np.ndarray, sigma_db: np.ndarray, d_cor_m: np.ndarray
    ) -> None:
        """:meth:`redraw` of the links ``(device[i], site[i])``, given in row-major order
        (as ``np.nonzero`` lists them), with their new sigma and d_cor: the same draws."""
        self.sigma_db[device, site] = sigma_db
        self._path.d_cor_m[device, site] = d_cor_m
        self._path.z[device, site] = self._path.rng.standard_normal(len(device))


class CorrelatedLosState:
    """LOS/NLOS state of every (device, site) link, spatially consistent along trajectories.

    Parameters
    ----------
    uniform
        ``(devices, sites)`` uniforms of the drop (its ``los_rng.random(...)``); the state is
        LOS where ``uniform < p_los``.
    d_cor_m
        LOS-state correlation distance, m (:data:`LOS_DECORRELATION_M`).
    rng
        The stream of the innovations.
    min_step_m
        As for :class:`CorrelatedShadowing`.
    """

    def __init__(
        self,
        uniform: np.ndarray,
        d_cor_m: float | np.ndarray,
        rng: np.random.Generator,
        min_step_m: float = 0.0,
    ) -> None:
        # scipy.special only here, where mobility moves LOS states: a run or `netfl
        # validate` without it does not pay for its import
        from scipy.special import ndtr, ndtri

        self._ndtr = ndtr
        self._u = np.clip(np.asarray(uniform, dtype=float), 1e-300, 1 - 1e-16)
        self._path = _PathProcess(ndtri(self._u), d_cor_m, rng, min_step_m)

    @property
    def uniform(self) -> np.ndarray:
        """The current spatially consistent uniform U = Phi(G) of each link."""
        return self._u

    def advance(self, moved_m: np.ndarray, p_los: np.ndarray) -> np.ndarray:
        """Move each device by ``moved_m`` and return the LOS state of every link for the
        LOS probabilities ``p_los`` of its new position, ``(devices, sites)`` bool."""
        rows = self._path.advance(moved_m)
        if len(rows):
            self._u[rows] = self._ndtr(self._path.z[rows])
        return self._u < np.asarray(p_los)

    def advance_rows(
        self, devices: np.ndarray, moved_m: np.ndarray, p_los: np.ndarray
    ) -> np.ndarray:
        """Move only the ``devices`` (ascending rows) and return their LOS states for their
        LOS probabilities ``p_los`` (``(len(devices), sites)``); the others' are unchanged."""
        rows = self._path.advance_rows(devices, moved_m)
        if len(rows):
            self._u[rows] = self._ndtr(self._path.z[rows])
        return self._u[devices] < np.asarray(p_los)
