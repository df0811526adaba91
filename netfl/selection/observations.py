"""What system-aware strategies read from a round: context feature keys and observed times.

Feature keys of ``SelectionContext.features`` (per-candidate arrays that the server fills
in the resource request, aligned with ``ctx.candidates``):

``mu``
    Available CPU ratio of the client this round (1.0 = one full CPU; may exceed 1), the
    mu_{t,n} of Huang et al. 2021 Sec. 4.4.2.
``bandwidth_hz``
    Bandwidth allocated to the client's upload this round, Hz (B_{t,n} in Huang et al. 2021).
``cold_start``
    1.0 if the client was *not* selected in the previous round (it must load its data
    again), else 0.0: the s_{t,n} of Huang et al. 2021 eq. (14), whose coefficient is the
    cold-start time.
``expected_exchange_time_s``
    Oracle knowledge for scenarios that allow it: the true expected model exchange time
    c^T theta* of the client this round, seconds (Huang et al. 2021 Sec. 6.1, the "FedCS(3)"
    baseline with
    full knowledge). Only the ``fedcs_deadline`` strategy reads it.
"""

from __future__ import annotations

import numpy as np

from netfl.features import Feature
from netfl.selection.base import RoundFeedback, SelectionContext
from netfl.selection.signals import MissingSignalError, feature

#: Raised when a strategy needs a context feature the server does not report.
MissingFeatureError = MissingSignalError

MU = Feature.MU
BANDWIDTH_HZ = Feature.BANDWIDTH_HZ
COLD_START = Feature.COLD_START
EXPECTED_EXCHANGE_TIME_S = Feature.EXPECTED_EXCHANGE_TIME_S


def require_feature(ctx: SelectionContext, key: str, strategy: str) -> np.ndarray:
    """``ctx.features[key]``: one number per candidate, or a clear error naming the key."""
    values = feature(ctx, key, strategy)
    if values.ndim != 1:
        raise MissingSignalError(
            f"context feature '{key}' has shape {values.shape}; expected one value per"
            f" candidate {ctx.candidates.shape}"
        )
    return values


def times_or_round_time(times_s: np.ndarray, feedback: RoundFeedback) -> np.ndarray:
    """Observed per-client times, with unobserved (NaN) entries charged the round time.

    A selected client whose update or upload the server did not see (it missed the
    deadline, dropped out) was still busy when the round closed, so the learning
    strategies charge it ``feedback.round_time_s`` for each unobserved step: a penalty of
    one round, which keeps a client that never reports from looking fast. Without a
    deadline and without dropouts (the setting of Yoshida et al. 2020) every
    selected client reports and this changes nothing.
    """
    times_s = np.asarray(times_s, dtype=float)
    penalty = feedback.round_time_s if np.isfinite(feedback.round_time_s) else np.nan
    return np.where(np.isfinite(times_s), times_s, penalty)
