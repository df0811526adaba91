"""Link budget, SINR and rates per RB (netfl.radio.link) against hand and closed forms."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import special

from channel_models.antenna import OmniAntenna
from channel_models.itu_m2135 import UMI, UMI_NLOS
from channel_models.rate import RateMapping, Shannon, ShannonWithLoss
from netfl.map.layout import hex_layout
from netfl.radio.link import (
    Budget,
    diversity_gain,
    fading_average,
    rate_per_rb_bps,
    sinr_db,
)
from netfl.radio.propagation import Environment, drop_heights, link_gains


def test_power_spread_per_rb_equals_the_papers_whole_allocation_budget():
    """20 dBm over 10 RBs with noise per RB = 20 dBm with noise over 1.8 MHz (002 IV-A)."""
    budget = Budget(tx_power_dbm=20.0, tx_power_rbs=10, noise_figure_db=2.7)
    pathloss = UMI_NLOS.pathloss_db(np.array([500.0]), 2.5e9, 11.0, 1.0)
    # 36.7 log10(500) + 22.7 + 26 log10(2.5) = 132.0986 dB
    assert pathloss[0] == pytest.approx(132.0986, abs=1e-3)
    whole_band = 20.0 - pathloss[0] - (-174.0 + 10 * math.log10(1.8e6) + 2.7)
    snr = sinr_db(budget.tx_dbm_per_rb - pathloss, budget.noise_dbm_per_rb, 0.0)
    assert snr[0] == pytest.approx(whole_band)
    assert snr[0] == pytest.approx(-3.3514, abs=1e-3)
    # rate over the 10 RBs = 1.8 MHz * log2(1 + 10^-0.16 * SNR)
    rate = 10 * rate_per_rb_bps(ShannonWithLoss(), snr, "none")[0]
    snr = 10 ** (-3.3514 / 10)
    assert rate == pytest.approx(1.8e6 * math.log2(1 + 10**-0.16 * snr), rel=1e-4)


def test_interference_over_thermal_enters_the_noise():
    base = Budget(23.0, 50, 5.0)
    noisy = Budget(23.0, 50, 5.0, interference_db=4.0)
    assert noisy.noise_dbm_per_rb - base.noise_dbm_per_rb == pytest.approx(4.0)
    assert base.noise_dbm_per_rb == pytest.approx(-174.0 + 10 * math.log10(180e3) + 5.0)
    assert base.tx_dbm_per_rb == pytest.approx(23.0 - 10 * math.log10(50))
    with pytest.raises(ValueError):
        Budget(23.0, 0, 5.0)


def test_sinr_adds_interference_in_linear_power_and_is_the_snr_without_it():
    # S -80 dBm; N -100 dBm; two interferers at -90 dBm: S / (1e-10 + 2e-9) mW
    value = sinr_db(np.array([-80.0]), -100.0, np.array([2e-9]))[0]
    assert value == pytest.approx(-80.0 - 10 * math.log10(1e-10 + 2e-9))
    # Without interference it is exactly S - N (no round trip through linear power).
    snr = np.array([-80.123456789])
    assert sinr_db(snr, -100.0, 0.0)[0] == snr[0] + 100.0


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


def test_one_site_draws_los_and_shadowing_from_their_streams():
    layout = hex_layout(1, 1, math.sqrt(3) * 400.0)
    env = Environment(UMI, 2.5e9, 10.0, OmniAntenna())
    rng = np.random.default_rng(0)
    distance = rng.uniform(20, 300, 40_000)
    xy = np.column_stack([distance, np.zeros_like(distance)])
    heights = drop_heights(len(xy), 0.0, rng)

    def draw(shadowing: bool = True):
        flat = Environment(UMI, 2.5e9, 10.0, OmniAntenna(), shadowing=shadowing)
        return link_gains(layout, xy, heights, flat, *(np.random.default_rng(s) for s in (1, 2, 3)))

    gains = draw()
    assert gains.los.mean() == pytest.approx(UMI.los_probability(distance).mean(), abs=0.01)
    assert gains.shadowing_db[gains.los].std() == pytest.approx(3.0, rel=0.03)
    assert gains.shadowing_db[~gains.los].std() == pytest.approx(4.0, rel=0.03)
    assert np.array_equal(draw().shadowing_db, gains.shadowing_db)
    assert not draw(shadowing=False).shadowing_db.any()
    # The coupling loss of the one omni cell is path loss plus shadowing.
    expected = UMI.pathloss_db(distance, 2.5e9, 10.0, 1.5, los=gains.los) + gains.shadowing_db
    np.testing.assert_allclose(gains.coupling_loss_db, expected)
    assert env.o2i == "low"
