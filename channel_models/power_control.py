"""Uplink power control: the PUSCH transmit power of a device for its RB allocation.

numpy only, vectorised, no SimPy. LTE (TS 36.213 Sec. 5.1.1.1) and NR (TS 38.213 Sec.
7.1.1) set a device's PUSCH power in a subframe (slot) from the RBs ``M`` it is granted
there:

``P_PUSCH(M) = min(P_CMAX, P0 + 10 log10(2^mu M) + alpha PL + delta_TF + f)`` dBm

``P0`` the nominal per-RB power (``P0_NOMINAL_PUSCH + P0_UE_PUSCH``), ``alpha`` the
fractional path-loss compensation, ``PL`` the path loss the device estimates (reference
signal power less RSRP: the coupling loss, antenna gains included), ``mu`` the NR numerology
(0 in LTE: a PRB of ``12 x 15 kHz x 2^mu`` gets ``2^mu`` times P0), ``delta_TF`` the MCS
term (0: ``deltaMCS-Enabled`` off, the default) and ``f`` the closed-loop correction, a
constant here (``closed_loop_db``). Below ``P_CMAX`` the power per RB is fixed,
``P_ol = P0 + 10 log10(2^mu) + alpha PL + f``; from the **power limit**
``M* = 10^((P_CMAX - P_ol) / 10)`` RBs on a device spreads ``P_CMAX`` over what it holds, so
its SINR per RB falls by ``10 log10(M / M*)`` as its allocation grows and rises as it
shrinks.

A fluid share below one RB is one RB part of the time (time sharing), never more power on
less than an RB: the power per RB of ``M`` RBs is that of ``max(M, 1)``, so ``M*`` is at
least 1 and the power per RB at most ``P_CMAX``.
"""

from __future__ import annotations

import numpy as np

#: TS 36.331 ``p0-NominalPUSCH`` INTEGER (-126..24) dBm.
LTE_P0_RANGE_DBM = (-126.0, 24.0)
#: TS 38.331 ``p0-NominalWithGrant`` INTEGER (-202..24) dBm (even values).
NR_P0_RANGE_DBM = (-202.0, 24.0)
#: TS 36.331 ``alpha`` ENUMERATED {al0, al04, al05, al06, al07, al08, al09, al1}; TS 38.331
#: ``Alpha`` has the same values.
ALPHAS = (0.0, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
#: The highest P_CMAX a scenario may set, 33 dBm (2 W): above every UE power class of TS
#: 36.101 Table 6.2.2-1 and TS 38.101-1 Table 6.2.1-1 (the highest, class 1, is 31 dBm).
P_CMAX_MAX_DBM = 33.0


def open_loop_dbm(
    pathloss_db: np.ndarray | float,
    p0_dbm: float,
    alpha: float,
    closed_loop_db: float = 0.0,
    numerology: int = 0,
) -> np.ndarray:
    """Power per RB below the power limit, ``P0 + 10 log10(2^mu) + alpha PL + f`` dBm.

    >>> float(open_loop_dbm(110.0, -106.0, 1.0))
    4.0
    >>> round(float(open_loop_dbm(110.0, -80.0, 0.8, numerology=1)), 2)  # NR 30 kHz: 2 x P0
    11.01
    """
    pl = np.asarray(pathloss_db, dtype=float)
    return p0_dbm + 10.0 * np.log10(2.0**numerology) + alpha * pl + closed_loop_db


def power_limit_rbs(p_cmax_dbm: float, open_loop_power_dbm: np.ndarray | float) -> np.ndarray:
    """``M*``: the RBs from which the device is at ``P_CMAX`` (at least 1; inf without a cap).

    >>> float(power_limit_rbs(23.0, 13.0))  # 10 dB of headroom: 10 RBs at P_ol each
    10.0
    >>> float(power_limit_rbs(23.0, 30.0))  # above P_CMAX even on one RB
    1.0
    """
    headroom_db = p_cmax_dbm - np.asarray(open_loop_power_dbm, dtype=float)
    return np.maximum(np.power(10.0, headroom_db / 10.0), 1.0)


def power_drop_db(n_rb: np.ndarray | float, limit_rbs: np.ndarray | float) -> np.ndarray:
    """How far the power per RB of ``n_rb`` RBs sits below the open-loop power,
    ``10 log10(max(1, M / M*))`` dB (0 up to the power limit).

    >>> float(power_drop_db(40.0, 10.0)), float(power_drop_db(5.0, 10.0))
    (6.020599913279624, 0.0)
    """
    ratio = np.asarray(n_rb, dtype=float) / np.asarray(limit_rbs, dtype=float)
    return 10.0 * np.log10(np.maximum(ratio, 1.0))


def pusch_power_dbm(
    n_rb: np.ndarray | float,
    pathloss_db: np.ndarray | float,
    p0_dbm: float,
    alpha: float,
    p_cmax_dbm: float,
    closed_loop_db: float = 0.0,
    numerology: int = 0,
) -> np.ndarray:
    """Total PUSCH power for ``n_rb`` RBs (TS 36.213 Sec. 5.1.1.1 eq. (5.1.1.1-1), TS 38.213
    Sec. 7.1.1), ``min(P_CMAX, P0 + 10 log10(2^mu M) + alpha PL + f)`` dBm.

    >>> float(pusch_power_dbm(10, 110.0, -106.0, 1.0, 23.0))  # 4 + 10 dB
    14.0
    >>> float(pusch_power_dbm(50, 120.0, -106.0, 1.0, 23.0))  # 14 + 17 dB, capped
    23.0
    """
    m = np.maximum(np.asarray(n_rb, dtype=float), 1.0)
    wanted = open_loop_dbm(pathloss_db, p0_dbm, alpha, closed_loop_db, numerology)
    return np.minimum(p_cmax_dbm, wanted + 10.0 * np.log10(m))


def per_rb_power_dbm(
    n_rb: np.ndarray | float,
    pathloss_db: np.ndarray | float,
    p0_dbm: float,
    alpha: float,
    p_cmax_dbm: float,
    closed_loop_db: float = 0.0,
    numerology: int = 0,
) -> np.ndarray:
    """Transmit power on each of ``n_rb`` RBs, ``P_PUSCH(M) / M`` in dBm (``M`` at least 1:
    a fluid share below one RB is one RB part of the time). What load planning calls to
    know a device's SINR per RB for the RBs it would hold.

    >>> float(per_rb_power_dbm(10, 120.0, -106.0, 1.0, 23.0))  # 14 dBm: 24 > 23, capped
    13.0
    >>> float(per_rb_power_dbm(0.5, 110.0, -106.0, 1.0, 23.0))  # below the limit
    4.0
    """
    m = np.maximum(np.asarray(n_rb, dtype=float), 1.0)
    total = pusch_power_dbm(m, pathloss_db, p0_dbm, alpha, p_cmax_dbm, closed_loop_db, numerology)
    return total - 10.0 * np.log10(m)
