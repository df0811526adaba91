"""Link budget, SINR and rates per RB (netfl.radio.link) against hand and closed forms."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import special

from channel_models.itu_m2135 import UMI, UMI_NLOS
from channel_models.rate import RateMapping, Shannon, ShannonWithLoss
from netfl.radio.link import (
    Budget,
    Propagation,
    diversity_gain,
    fading_average,
    rate_per_rb_bps,
    sinr_db,
)


def test_power_spread_per_rb_equals_the_papers_whole_allocation_budget():
    """20 dBm over 10 RBs with noise per RB = 20 dBm with noise over 1.8 MHz (002 IV-A)."""
    budget = Budget(
        tx_power_dbm=20.0, tx_power_rbs=10, tx_gain_dbi=0, rx_gain_dbi=0, noise_figure_db=2.7
    )
    pathloss = UMI_NLOS.pathloss_db(np.array([500.0]), 2.5e9, 11.0, 1.0)
    # 36.7 log10(500) + 22.7 + 26 log10(2.5) = 132.0986 dB
    assert pathloss[0] == pytest.approx(132.0986, abs=1e-3)
    whole_band = 20.0 - pathloss[0] - (-174.0 + 10 * math.log10(1.8e6) + 2.7)
    assert budget.snr_db(pathloss)[0] == pytest.approx(whole_band)
    assert budget.snr_db(pathloss)[0] == pytest.approx(-3.3514, abs=1e-3)
    # rate over the 10 RBs = 1.8 MHz * log2(1 + 10^-0.16 * SNR)
    rate = 10 * rate_per_rb_bps(ShannonWithLoss(), budget.snr_db(pathloss), "none")[0]
    snr = 10 ** (-3.3514 / 10)
    assert rate == pytest.approx(1.8e6 * math.log2(1 + 10**-0.16 * snr), rel=1e-4)


def test_gains_and_interference_over_thermal_enter_the_budget():
    base = Budget(23.0, 50, 0.0, 0.0, 5.0)
    better = Budget(23.0, 50, 3.0, 2.0, 5.0)
    noisy = Budget(23.0, 50, 0.0, 0.0, 5.0, interference_db=4.0)
    loss = np.array([120.0])
    assert better.snr_db(loss)[0] - base.snr_db(loss)[0] == pytest.approx(5.0)
    assert base.snr_db(loss)[0] - noisy.snr_db(loss)[0] == pytest.approx(4.0)
    with pytest.raises(ValueError):
        Budget(23.0, 0, 0.0, 0.0, 5.0)


def test_sinr_adds_interferers_in_linear_power():
    # S -80 dBm; N -100 dBm; two interferers at -90 dBm: S / (1e-10 + 2e-9) mW
    value = sinr_db(np.array([-80.0]), -100.0, np.array([[-90.0, -90.0]]))[0]
    assert value == pytest.approx(-80.0 - 10 * math.log10(1e-10 + 2e-9))
    assert sinr_db(np.array([-80.0]), -100.0, np.zeros((1, 0)))[0] == pytest.approx(20.0)


def test_ergodic_shannon_rate_matches_closed_form():
    """E[log2(1 + s X)], X ~ Exp(1) = e^(1/s) E1(1/s) / ln 2."""
    for snr in (0.1, 1.0, 10.0, 100.0):
        closed = math.exp(1 / snr) * special.exp1(1 / snr) / math.log(2)
        got = fading_average(Shannon(), np.array([snr]))[0] / 180e3
        assert got == pytest.approx(closed, rel=5e-3)


@dataclass(frozen=True)
class Linear(RateMapping):
    """Spectral efficiency = SINR (the low-SNR regime), for closed-form checks."""

    def spectral_efficiency(self, sinr: np.ndarray) -> np.ndarray:
        return np.asarray(sinr, dtype=float)


@pytest.mark.parametrize("m", [1, 2, 5, 10])
def test_max_of_m_rayleigh_fades_has_the_harmonic_mean(m):
    """E[max of m Exp(1)] = H_m: proportional fair's gain in the linear regime."""
    harmonic = sum(1 / k for k in range(1, m + 1))
    got = fading_average(Linear(), np.array([1.0]), competing=m)[0] / 180e3
    assert got == pytest.approx(harmonic, rel=1e-2)
    assert diversity_gain(Linear(), 2.0)(m) == pytest.approx(harmonic, rel=1e-2)


def test_diversity_gain_grows_with_competitors_and_is_capped_by_rho_max():
    gain = diversity_gain(ShannonWithLoss(), 1.0)
    values = [gain(m) for m in (1, 2, 4, 8)]
    assert values[0] == 1.0 and all(b > a for a, b in itertools.pairwise(values))
    # At very high SNR every fade hits ρ_max: nothing left to gain.
    assert diversity_gain(ShannonWithLoss(), 1e7)(8) == pytest.approx(1.0, abs=1e-3)


def test_propagation_draws_los_and_shadowing_from_their_streams():
    prop = Propagation(UMI, 2.5e9, 10.0, 1.5)
    rng = np.random.default_rng(0)
    distance = rng.uniform(20, 300, 40_000)
    x, y = distance, np.zeros_like(distance)
    geo = prop.draw(x, y, np.random.default_rng(1), np.random.default_rng(2))
    assert geo.los.mean() == pytest.approx(UMI.los_probability(distance).mean(), abs=0.01)
    assert geo.shadowing_db[geo.los].std() == pytest.approx(3.0, rel=0.03)
    assert geo.shadowing_db[~geo.los].std() == pytest.approx(4.0, rel=0.03)
    again = prop.draw(x, y, np.random.default_rng(1), np.random.default_rng(2))
    assert np.array_equal(again.shadowing_db, geo.shadowing_db)
    flat = Propagation(UMI, 2.5e9, 10.0, 1.5, shadowing=False)
    assert not flat.draw(
        x, y, np.random.default_rng(1), np.random.default_rng(2)
    ).shadowing_db.any()


def test_interference_from_sites_uses_the_budget_and_median_loss():
    prop = Propagation(UMI_NLOS, 2.5e9, 10.0, 1.5)
    budget = Budget(41.0, 50, 0.0, 0.0, 7.0)
    sites = np.array([[200.0, 0.0]])
    power = prop.interference_dbm(np.array([0.0]), np.array([100.0]), sites, budget)
    d = math.hypot(200.0, 100.0)
    expected = 41.0 - 10 * math.log10(50) - UMI_NLOS.pathloss_db(np.array([d]), 2.5e9, 10, 1.5)[0]
    assert power.shape == (1, 1) and power[0, 0] == pytest.approx(expected)
