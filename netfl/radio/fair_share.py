"""Proportional fair RB shares among flows whose rate is not linear in their RBs.

A flow of the uplink holds ``M`` RBs at a fixed power per RB up to its power limit ``M*``
(:mod:`channel_models.power_control`); beyond, its device spreads ``P_CMAX`` over them, so the
SINR per RB is ``g / M`` (``g``: the SINR of the whole power on one RB) and its rate
``r(M) = M rho(g / M)`` grows slower than ``M``. Proportional fairness (Kelly, Maulloo and
Tan 1998) shares the band to maximise ``sum_i log r_i(M_i)`` subject to ``sum_i M_i = N`` and
``M_i <= cap_i``. With ``eps_i(M) = d ln r_i / d ln M``, the rate's elasticity in the RBs,
the optimum has ``eps_i(M_i) / M_i`` equal for every flow below its cap: ``M_i = L eps_i(M_i)``
for one level ``L``.

- A flow below its power limit has ``eps = 1``: ``M_i = min(cap_i, L)``, the equal share of
  the linear case (which is why, without power limits, PF is equal sharing).
- A power-limited flow has ``eps(x) = 1 - x rho'(x) / rho(x)`` at its SINR per RB ``x = g/M``;
  with ``phi(x) = x eps(x)``, increasing, the condition is ``phi(x) = g / L``, so
  ``M_i = g / phi^-1(g / L)``, never below ``M*`` (at ``M*`` its elasticity jumps from 1 to
  ``eps(x_ol)``: it stays at the kink while ``eps(x_ol) L <= M* <= L``).

So PF gives a power-limited flow fewer RBs than an equal share (its last RBs add less rate
than they would to the others) and more SINR per RB. The elasticity is Shannon's,
``rho(x) = log2(1 + x)``: ``eps(x) = 1 - x / ((1 + x) ln(1 + x))``, a smooth stand-in for the
rate mapping's staircase of MCS (whose steps would make the problem non-concave); the rates
themselves then come from the mapping. ``sum_i M_i(L)`` is continuous and non-decreasing in
``L``: a few vectorised evaluations of every flow's share per allocation, O(flows) numpy.
"""

from __future__ import annotations

import numpy as np

#: phi(x) = x eps(x) on a log grid of the SINR per RB (linear, -60 to 60 dB), for its inverse.
_X = np.logspace(-6.0, 6.0, 4801)


def elasticity(x: np.ndarray | float) -> np.ndarray:
    """Shannon rate's elasticity in the RBs at SINR per RB ``x`` (linear) of a device at
    ``P_CMAX``: ``1 - x / ((1 + x) ln(1 + x))`` (``x/2`` for small ``x``, 1 for large).

    >>> round(float(elasticity(1.0)), 4)
    0.2787
    """
    x = np.asarray(x, dtype=float)
    small = x < 1e-4
    safe = np.where(small, 1.0, x)
    exact = 1.0 - safe / ((1.0 + safe) * np.log1p(safe))
    return np.where(small, x / 2.0 - x * x / 3.0, exact)


def _phi(x: np.ndarray) -> np.ndarray:
    return x * elasticity(x)


_LOG_PHI = np.log(_phi(_X))
_LOG_X = np.log(_X)
if not np.all(np.diff(_LOG_PHI) > 0):  # pragma: no cover - a property of the formula
    raise AssertionError("phi(x) = x eps(x) must increase for its inverse")


def _phi_inverse(y: np.ndarray) -> np.ndarray:
    """``x`` with ``phi(x) = y`` (log-log interpolation; clipped to the grid's range)."""
    with np.errstate(divide="ignore"):  # y = 0 (a flow at rate 0): the grid's smallest x
        return np.exp(np.interp(np.log(y), _LOG_PHI, _LOG_X))


def shares_at_level(
    level: np.ndarray | float, caps: np.ndarray, limits: np.ndarray, full_power_sinr: np.ndarray
) -> np.ndarray:
    """Each flow's RBs at the PF level ``L`` (module doc): ``min(cap, L)`` below the power
    limit, ``max(M*, g / phi^-1(g / L))`` (at most the cap) above it. ``level`` may be a
    1-d array of levels: the result then has one column per level."""
    level = np.asarray(level, dtype=float)
    grid = level.ndim == 1
    column = level[None, :] if grid else level
    out = np.minimum(caps[:, None] if grid else caps, column)
    capped = np.isfinite(limits)
    if capped.any():
        lim, g, cap = limits[capped], full_power_sinr[capped], caps[capped]
        if grid:
            lim, g, cap = lim[:, None], g[:, None], cap[:, None]
        beyond = g / _phi_inverse(g / column)
        out[capped] = np.where(lim < column, np.minimum(cap, np.maximum(lim, beyond)), out[capped])
    return out


def _level_at_cap(caps: np.ndarray, limits: np.ndarray, g: np.ndarray) -> float:
    """A level at which every flow holds its cap: the cap below the power limit, else
    ``g / phi(g / cap)`` or the kink's end ``M* / eps(g / M*)``, whichever is later."""
    high = float(caps.max())
    limited = limits < caps
    if limited.any():
        lim, gl, cap = limits[limited], g[limited], caps[limited]
        high = max(
            high, float(np.max(gl / _phi(gl / cap))), float(np.max(lim / elasticity(gl / lim)))
        )
    return high


#: Levels tried per round of the root search (log-spaced between the bracket's ends), and
#: rounds (each narrows the bracket to one of the previous round's intervals).
_GRID, _ROUNDS = 48, 3
_FRACTIONS = np.linspace(0.0, 1.0, _GRID)


def allocate_proportional_fair(
    caps: np.ndarray, n_rb: float, limits: np.ndarray, full_power_sinr: np.ndarray
) -> np.ndarray:
    """RBs per flow maximising ``sum log r_i`` under the caps, the flows' power limits
    ``limits`` (``M*``, inf: none) and their SINR of the whole power on one RB ``g``.

    Every RB is shared out (``sum = min(n_rb, sum caps)``); without power limits (or with
    every limit above the equal share) it is the equal water-filling of the caps. The level
    ``L`` is found on log grids of levels, one numpy evaluation of every flow's share per
    round, then interpolated; the shares of the flows below their caps are scaled to give
    every RB out.

    >>> caps = np.array([50.0, 50.0])
    >>> allocate_proportional_fair(caps, 50.0, np.array([np.inf, 50.0]), np.array([1.0, 1e3]))
    array([25., 25.])
    >>> m = allocate_proportional_fair(caps, 50.0, np.array([np.inf, 5.0]), np.array([1.0, 10.0]))
    >>> [round(float(v), 2) for v in m]  # the power-limited flow takes fewer RBs
    [39.39, 10.61]
    """
    caps = np.asarray(caps, dtype=float)
    g = np.asarray(full_power_sinr, dtype=float)
    # A flow at rate 0 (g = 0) has no elasticity to weigh: it takes the linear case's share.
    limits = np.where(g > 0, np.asarray(limits, dtype=float), np.inf)
    if caps.sum() <= n_rb:
        return caps.copy()
    low = n_rb / len(caps)  # every share is at most L: the sum is at most n_rb
    high = _level_at_cap(caps, limits, g)  # every flow at its cap: the sum is above n_rb
    for _ in range(_ROUNDS):
        levels = low * (high / low) ** _FRACTIONS
        sums = shares_at_level(levels, caps, limits, g).sum(axis=0)
        k = int(np.searchsorted(sums, n_rb))  # sums[k - 1] < n_rb <= sums[k]
        k = min(max(k, 1), _GRID - 1)
        low, high = float(levels[k - 1]), float(levels[k])
        below, above = float(sums[k - 1]), float(sums[k])
    weight = (n_rb - below) / (above - below) if above > below else 1.0
    level = low * (high / low) ** min(max(weight, 0.0), 1.0)
    shares = shares_at_level(level, caps, limits, g)
    free = shares < caps
    if free.any():  # the interpolation's residue, to the flows not at their caps
        shares[free] *= 1.0 + (n_rb - shares.sum()) / shares[free].sum()
    return shares
