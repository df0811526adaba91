"""MAB-CS resource fluctuation (Yoshida et al. 2020 eq. (8))."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from netfl.fluctuation import mab_cs_sigma, sample_mab_cs


def test_no_fluctuation_returns_the_mean():
    mean = np.array([1.4e6, 8.6e6])
    assert np.array_equal(sample_mab_cs(mean, None, np.random.default_rng(0)), mean)


@pytest.mark.parametrize("eta", [1.0, 1.5, 1.99])
def test_draws_follow_the_truncated_normal(eta):
    rng = np.random.default_rng(1)
    mean = np.full(20000, 50.0)
    draws = sample_mab_cs(mean, eta, rng)
    sigma = 50.0 ** (eta / 2)
    assert draws.min() >= 50.0 - sigma and draws.max() <= 50.0 + sigma
    # Moments of N(mu, sigma) truncated to [mu - sigma, mu + sigma].
    ref = stats.truncnorm(-1, 1, loc=50.0, scale=sigma)
    # Four standard errors of the mean; the sample std's relative standard error is about
    # 1/sqrt(2n) = 0.5% (a truncated normal is light-tailed), so 3% is about six of them.
    assert draws.mean() == pytest.approx(ref.mean(), abs=4 * ref.std() / np.sqrt(20000))
    assert draws.std() == pytest.approx(ref.std(), rel=0.03)


def test_sigma_grows_with_eta():
    assert mab_cs_sigma(np.array([100.0]), 1.0)[0] == pytest.approx(10.0)
    assert mab_cs_sigma(np.array([100.0]), 1.5)[0] == pytest.approx(100.0**0.75)


def test_eta_two_is_refused():
    with pytest.raises(ValueError, match="eta < 2"):
        sample_mab_cs(np.array([4.0]), 2.0, np.random.default_rng(0))
