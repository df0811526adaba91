"""Per-round resource fluctuation of MAB-CS (Yoshida et al. 2020, eqs. (8)-(11)).

Each round a client's throughput and compute capability are drawn around their means
theta_k from a normal truncated to one standard deviation: mu = theta_k,
sigma^2 = theta_k^eta, a = mu - sigma, b = mu + sigma (eq. (8) with the CDF of eq. (9)).
Larger eta means larger fluctuation; eta < 2 keeps the lower bound positive when
theta > 1 (theta - theta^(eta/2) > 0), which is why throughput is in bit/s and
capability in samples/s.

Both the radio model (throughput) and the device model (compute) use this sampler, each
with its own random stream.
"""

from __future__ import annotations

import numpy as np


def mab_cs_sigma(mean: np.ndarray, eta: float) -> np.ndarray:
    """sigma = sqrt(mean^eta) (eq. (8) setting)."""
    return np.sqrt(np.power(np.asarray(mean, dtype=float), eta))


def sample_mab_cs(mean: np.ndarray, eta: float | None, rng: np.random.Generator) -> np.ndarray:
    """Draw one value per entry of ``mean`` from the MAB-CS truncated normal.

    ``eta=None`` means no fluctuation (returns ``mean``). The truncation [mu - sigma,
    mu + sigma] is symmetric, so the draw's expectation is ``mean``.
    """
    mean = np.asarray(mean, dtype=float)
    if eta is None:
        return mean.copy()
    if np.any(mean <= 0):
        raise ValueError("MAB-CS fluctuation needs positive means")
    sigma = mab_cs_sigma(mean, eta)
    if np.any(mean - sigma <= 0):
        raise ValueError(
            f"eta={eta}: sigma = mean^(eta/2) reaches the mean, so the lower bound"
            " mean - sigma is not positive; use eta < 2 with means above 1 (bit/s, samples/s)"
        )
    # Standardised bounds are always [-1, 1].
    from scipy import stats  # 1 s to import: only when fluctuations are drawn

    z = stats.truncnorm.rvs(-1.0, 1.0, size=mean.shape, random_state=rng)
    return mean + sigma * np.asarray(z, dtype=float)
