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

from dataclasses import dataclass

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


@dataclass(frozen=True)
class Links:
    """Some (device, site) links of a ``(devices, sites)`` array, in row-major order: their
    flat indices and their devices (flat indexing costs a quarter of a 2D index here)."""

    flat: np.ndarray
    device: np.ndarray
    sites: int

    @classmethod
    def of(cls, mask: np.ndarray) -> Links:
        """The links where a boolean ``(devices, sites)`` mask is set."""
        flat = np.flatnonzero(mask)
        return cls(flat, flat // mask.shape[1], mask.shape[1])

    @property
    def site(self) -> np.ndarray:
        return self.flat - self.device * self.sites

    def __len__(self) -> int:
        return len(self.flat)

    def subset(self, where: np.ndarray | slice) -> Links:
        return Links(self.flat[where], self.device[where], self.sites)


class _PathProcess:
    """Standard Gaussian AR(1) processes along each device's path, one per (device, column):
    z <- rho z + sqrt(1 - rho^2) N(0, 1), rho = exp(-dd / d_cor).

    Each device has an odometer (the distance it has moved, :meth:`move`), and each process
    remembers the odometer reading at which it last moved; it moves only when asked
    (:meth:`advance_rows` for whole rows, :meth:`advance_links` for given links), by all
    the distance since then. The AR(1) is Markov, so a process sampled rarely keeps exactly
    the correlation exp(-distance / d_cor) between the values it takes: a link nobody
    looks at costs nothing until someone does (the radio update re-evaluates a moving
    device's measured cells often and the others at each cell search, docs/mobility.md).

    With ``min_step_m`` > 0 a process moves only once its device has gone that far since
    it last moved (the correlation per distance is kept; the value lags by at most that
    distance): a pedestrian at 1.4 m/s with 0.1 s updates and ``min_step_m = 1`` draws
    once in 7 updates. ``dtype`` is the values' (float32 for moving devices: the values
    differ from float64's by about 1e-7 of sigma); the odometers stay float64.
    """

    def __init__(
        self,
        z: np.ndarray,
        d_cor_m: float | np.ndarray,
        rng: np.random.Generator,
        min_step_m: float,
        dtype: type = np.float64,
    ) -> None:
        self.z: np.ndarray = np.array(z, dtype=dtype)
        self.d_cor_m = np.broadcast_to(np.asarray(d_cor_m, dtype=float), z.shape).copy()
        if np.any(self.d_cor_m <= 0):
            raise ValueError("d_cor_m must be positive")
        self.rng, self.dtype = rng, dtype
        self.min_step_m = float(min_step_m)
        self.odometer_m = np.zeros(z.shape[0])
        self.at_m = np.zeros(z.shape)  # each process's odometer reading when it last moved

    def move(self, devices: np.ndarray | slice, moved_m: np.ndarray) -> None:
        """The ``devices`` moved ``moved_m`` further (m, >= 0; inf: far away, so their
        next values are drawn afresh). Nothing is drawn."""
        moved = np.asarray(moved_m, dtype=float)
        if moved.size and not moved.min() >= 0:  # NaN too
            raise ValueError("moved_m must be >= 0 (inf draws afresh)")
        if moved.size and moved.max() == np.inf:
            far = np.isinf(moved)
            rows = np.arange(len(self.odometer_m))[devices][far]
            self.at_m[rows] = -np.inf
            moved = np.where(far, 0.0, moved)
        self.odometer_m[devices] += moved

    def advance(self, moved_m: np.ndarray) -> None:
        """Move every device by ``moved_m`` and every process with it."""
        self.move(slice(None), moved_m)
        self._rows(slice(None))

    def advance_rows(self, devices: np.ndarray, moved_m: np.ndarray | None = None) -> None:
        """Move the ``devices`` (ascending rows) by ``moved_m`` (None: not again) and every
        process of theirs to where they are; the other devices stay as they were."""
        if moved_m is not None:
            self.move(devices, moved_m)
        every = len(devices) == len(self.odometer_m)  # the usual case: no fancy indexing
        self._rows(slice(None) if every else devices)

    def advance_links(self, links: Links) -> None:
        """Move the processes of the ``links`` to where their devices are."""
        flat, z, at = links.flat, self.z.reshape(-1), self.at_m.reshape(-1)
        odometer = self.odometer_m[links.device]
        pending = odometer - at[flat]
        rho = self._rho(pending, self.d_cor_m.reshape(-1)[flat])
        innovation = self.rng.standard_normal(len(flat), dtype=self.dtype)
        z[flat] = rho * z[flat] + np.sqrt(1.0 - rho * rho) * innovation
        at[flat] = self._reached(pending, odometer, at[flat]) if self.min_step_m else odometer

    def _rows(self, rows: np.ndarray | slice) -> None:
        odometer = self.odometer_m[rows, None]
        pending = odometer - self.at_m[rows]
        rho = self._rho(pending, self.d_cor_m[rows])
        innovation = self.rng.standard_normal(rho.shape, dtype=self.dtype)
        self.z[rows] = rho * self.z[rows] + np.sqrt(1.0 - rho * rho) * innovation
        self.at_m[rows] = self._reached(pending, odometer, self.at_m[rows])

    def _rho(self, pending_m: np.ndarray, d_cor_m: np.ndarray) -> np.ndarray:
        """exp(-pending / d_cor) (0 after an infinite move); 1, the value held exactly,
        where the process has not gone ``min_step_m`` yet."""
        rho = np.exp(-(pending_m / d_cor_m).astype(self.dtype))
        if self.min_step_m > 0:
            rho[pending_m < self.min_step_m] = 1.0
        return rho

    def _reached(
        self, pending_m: np.ndarray, odometer_m: np.ndarray, at_m: np.ndarray
    ) -> np.ndarray:
        """The odometer readings the processes are at now (held ones stay where they were)."""
        if self.min_step_m > 0:
            return np.where(pending_m < self.min_step_m, at_m, odometer_m)
        return np.broadcast_to(odometer_m, pending_m.shape)


class CorrelatedShadowing:
    """Shadow fading of every (device, site) link, correlated along each trajectory and
    between the sites a device sees.

        S_ij = sigma_ij (sqrt(r) C_i,k + sqrt(1 - r) E_ij),    k the LOS state of link ij,

    with one path process E_ij per link and one C_i,k per device and LOS state, shared by
    the device's links in that state; ``r = site_correlation``. Two links of a device in
    the same state are correlated r (TR 36.814 Table A.2.1.1-2: 0.5 between sites; the
    sectors of a site share its link: 1), and every part has the decorrelation distance of
    its state, so along a path each link keeps exp(-d / d_cor) exactly. A link whose state
    changes takes the new state's common part and a fresh E_ij: nothing carries over
    across states (TR 38.901 Sec. 7.6.3.4). With r = 0 there is no common part (and no
    draw for it): the sites are independent.

    Parameters
    ----------
    sigma_db
        ``(devices, sites)`` standard deviation of each link's shadowing, dB.
    d_cor_m
        Decorrelation distance of each link, m: a scalar or an array broadcasting to
        ``sigma_db``.
    rng
        The shadowing stream (the initial parts when not given, and every innovation).
    initial_db
        The shadowing at t = 0 (the drop's); None draws it from ``rng``.
    min_step_m
        Move a device's shadowing only once it has gone this far (0: whenever asked; see
        :class:`_PathProcess`).
    site_correlation, los, common_z, common_d_cor_m
        r; each link's LOS state ``(devices, sites)`` (which common part it takes); the
        common parts at t = 0 ``(devices, 2)`` [LOS, NLOS] (None: drawn after the links');
        their decorrelation distances (default ``d_cor_m``'s first column).
    dtype
        Of the values (float32 for moving devices).

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
        *,
        site_correlation: float = 0.0,
        los: np.ndarray | None = None,
        common_z: np.ndarray | None = None,
        common_d_cor_m: np.ndarray | None = None,
        dtype: type = np.float64,
    ) -> None:
        self.sigma_db = np.array(sigma_db, dtype=float)
        n = self.sigma_db.shape[0]
        self._a, self._b = np.sqrt(site_correlation), np.sqrt(1.0 - site_correlation)
        self.state = np.ones(self.sigma_db.shape, dtype=np.intp)  # 0: LOS, 1: NLOS
        if los is not None:
            self.state = np.where(np.asarray(los, dtype=bool), 0, 1)
        site = rng.standard_normal(self.sigma_db.shape) if initial_db is None else None
        self._common: _PathProcess | None = None
        if site_correlation > 0:
            if common_z is None:
                common_z = rng.standard_normal((n, 2))
            d_common = common_d_cor_m
            if d_common is None:
                d_common = np.broadcast_to(np.asarray(d_cor_m, dtype=float), self.sigma_db.shape)
                d_common = np.repeat(d_common[:, :1], 2, axis=1)
            self._common = _PathProcess(np.asarray(common_z), d_common, rng, min_step_m, dtype)
        if site is None:
            assert initial_db is not None
            initial = np.asarray(initial_db, dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                site = np.where(self.sigma_db > 0, initial / self.sigma_db, 0.0)
            if self._common is not None and self._b > 0:
                common = np.take_along_axis(self._common.z, self.state, axis=1)
                site = (site - self._a * common) / self._b
        self._site = _PathProcess(site, d_cor_m, rng, min_step_m, dtype)

    @property
    def d_cor_m(self) -> np.ndarray:
        return self._site.d_cor_m

    @property
    def shadowing_db(self) -> np.ndarray:
        """Current shadowing of every link, dB ``(devices, sites)``."""
        return self.sigma_db * self._standard(slice(None))

    def _standard(self, rows: np.ndarray | slice, site: np.ndarray | None = None) -> np.ndarray:
        """The standardised shadowing of the links ``[rows, site]`` (every site of the
        ``rows`` when ``site`` is None)."""
        z = self._site.z[rows] if site is None else self._site.z[rows, site]
        if self._common is None:
            return z
        c = self._common.z
        if site is None:
            common = np.take_along_axis(c[rows], self.state[rows], axis=1)
        else:
            common = c[rows, self.state[rows, site]]
        return self._a * common + self._b * z

    def _standard_links(self, links: Links) -> np.ndarray:
        z = self._site.z.reshape(-1)[links.flat]
        if self._common is None:
            return z
        common = self._common.z.reshape(-1)[2 * links.device + self.state.reshape(-1)[links.flat]]
        return self._a * common + self._b * z

    def move(self, devices: np.ndarray | slice, moved_m: np.ndarray) -> None:
        """The ``devices`` moved ``moved_m`` further (:meth:`_PathProcess.move`)."""
        self._site.move(devices, moved_m)
        if self._common is not None:
            self._common.move(devices, moved_m)

    def advance(self, moved_m: np.ndarray) -> np.ndarray:
        """Move each device by ``moved_m`` (m, ``(devices,)``; inf: a new independent draw)
        and return the shadowing of every link, dB."""
        self._site.advance(moved_m)
        if self._common is not None:
            self._common.advance(moved_m)
        return self.shadowing_db

    def advance_rows(self, devices: np.ndarray, moved_m: np.ndarray | None = None) -> np.ndarray:
        """Move only the ``devices`` (ascending rows, :meth:`_PathProcess.advance_rows`) and
        return their shadowing, dB ``(len(devices), sites)``."""
        self._site.advance_rows(devices, moved_m)
        if self._common is not None:
            self._common.advance_rows(devices, moved_m)
        return self.sigma_db[devices] * self._standard(devices)

    def advance_links(self, links: Links) -> np.ndarray:
        """Move the ``links`` to where their devices are and return their shadowing, dB."""
        self._site.advance_links(links)
        if self._common is not None:
            device = links.device
            first = np.ones(len(device), dtype=bool)
            first[1:] = device[1:] != device[:-1]
            self._common.advance_rows(device[first])
        return self.sigma_db.reshape(-1)[links.flat] * self._standard_links(links)

    def redraw(self, links: np.ndarray, sigma_db: np.ndarray, d_cor_m: np.ndarray) -> None:
        """Draw the shadowing of the ``links`` (a boolean ``(devices, sites)`` mask) afresh
        with new sigma and d_cor (their LOS or O2I state changed)."""
        mask = np.asarray(links, dtype=bool)
        self.redraw_links(Links.of(mask), np.asarray(sigma_db)[mask], np.asarray(d_cor_m)[mask])

    def redraw_links(
        self,
        links: Links,
        sigma_db: np.ndarray,
        d_cor_m: np.ndarray,
        los: np.ndarray | None = None,
    ) -> None:
        """:meth:`redraw` of the ``links`` with their new sigma, d_cor and LOS state."""
        flat, site = links.flat, self._site
        self.sigma_db.reshape(-1)[flat] = sigma_db
        site.d_cor_m.reshape(-1)[flat] = d_cor_m
        if los is not None:
            self.state.reshape(-1)[flat] = np.where(los, 0, 1)
        site.z.reshape(-1)[flat] = site.rng.standard_normal(len(flat))
        site.at_m.reshape(-1)[flat] = site.odometer_m[links.device]


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
    min_step_m, dtype
        As for :class:`CorrelatedShadowing`.
    """

    def __init__(
        self,
        uniform: np.ndarray,
        d_cor_m: float | np.ndarray,
        rng: np.random.Generator,
        min_step_m: float = 0.0,
        dtype: type = np.float64,
    ) -> None:
        # scipy.special only here, where mobility moves LOS states: a run or `netfl
        # validate` without it does not pay for its import
        from scipy.special import ndtr, ndtri

        self._ndtr = ndtr
        self._u = np.clip(np.asarray(uniform, dtype=float), 1e-300, 1 - 1e-16)
        self._path = _PathProcess(ndtri(self._u), d_cor_m, rng, min_step_m, dtype)

    @property
    def uniform(self) -> np.ndarray:
        """The current spatially consistent uniform U = Phi(G) of each link."""
        return self._u

    def move(self, devices: np.ndarray | slice, moved_m: np.ndarray) -> None:
        """The ``devices`` moved ``moved_m`` further (:meth:`_PathProcess.move`)."""
        self._path.move(devices, moved_m)

    def advance(self, moved_m: np.ndarray, p_los: np.ndarray) -> np.ndarray:
        """Move each device by ``moved_m`` and return the LOS state of every link for the
        LOS probabilities ``p_los`` of its new position, ``(devices, sites)`` bool."""
        self._path.advance(moved_m)
        self._u[:] = self._ndtr(self._path.z)
        return self._u < np.asarray(p_los)

    def advance_links(self, links: Links, p_los: np.ndarray) -> np.ndarray:
        """Move the ``links`` and return their LOS states for their LOS probabilities
        ``p_los``."""
        self._path.advance_links(links)
        u = self._ndtr(self._path.z.reshape(-1)[links.flat])
        self._u.reshape(-1)[links.flat] = u
        return u < np.asarray(p_los)
