"""channel_models: ITU-R M.2135-1 path loss, LOS probability and rate mappings.

Reference values: the IMTAphy test vector (``PathlossTest.cpp``: BS (100, 100, 10) m,
UT (150, 125, 1.5) m, fc 2 GHz) quoted in shared/reference/radio.md, and values computed by
hand from the Table A1-2 formulas (arithmetic in the comments).
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from channel_models import CHANNEL_MODELS
from channel_models.itu_m2135 import (
    UMA,
    UMA_NLOS,
    UMI,
    UMI_LOS,
    UMI_NLOS,
    breakpoint_distance_m,
    los_probability,
)
from channel_models.protocol import OutOfValidityError
from channel_models.rate import CQI_EFFICIENCY_BPS_HZ, LteCqi, Shannon, ShannonWithLoss
from netfl.registry import channel_models

IMTAPHY_D_M = math.hypot(150 - 100, 125 - 100)  # 55.902 m, 2D


def test_imtaphy_vector_umi_nlos_and_los():
    assert pytest.approx(55.902, abs=1e-3) == IMTAPHY_D_M
    nlos = UMI_NLOS.pathloss_db(np.array([IMTAPHY_D_M]), 2e9, 10.0, 1.5)
    los = UMI_LOS.pathloss_db(np.array([IMTAPHY_D_M]), 2e9, 10.0, 1.5)
    assert nlos[0] == pytest.approx(94.6573, abs=1e-3)
    assert los[0] == pytest.approx(72.4640, abs=1e-3)


def test_umi_nlos_hand_computed():
    # 36.7 log10(d) + 22.7 + 26 log10(2.5) with 26 log10(2.5) = 10.3464 and
    # 36.7 log10(2000) = 36.7 * 3.30103 = 121.1478
    d = np.array([10.0, 100.0, 1000.0, 2000.0])
    expected = [36.7 + 22.7 + 10.3464, 73.4 + 33.0464, 110.1 + 33.0464, 121.1478 + 33.0464]
    assert UMI_NLOS.pathloss_db(d, 2.5e9, 11.0, 1.0) == pytest.approx(expected, abs=1e-3)


def test_umi_los_breakpoint_hand_computed():
    # d'_BP = 4 * 9 * 0.5 * 2.5e9 / 3e8 = 150 m
    assert breakpoint_distance_m(10.0, 1.5, 2.5e9) == pytest.approx(150.0)
    near, far = UMI_LOS.pathloss_db(np.array([100.0, 300.0]), 2.5e9, 10.0, 1.5)
    # 22 * 2 + 28 + 20 log10(2.5) = 44 + 28 + 7.9588
    assert near == pytest.approx(79.9588, abs=1e-3)
    # 40 log10(300) + 7.8 - 18 log10(9) - 18 log10(0.5) + 2 log10(2.5)
    # = 99.0849 + 7.8 - 17.1764 + 5.4185 + 0.7959
    assert far == pytest.approx(95.9229, abs=1e-3)


def test_uma_nlos_hand_computed():
    # h_BS 25, h_UT 1.5, W = h = 20 m, fc 2 GHz, d = 1 km (log10(d) - 3 = 0):
    # 161.04 - 7.1 log10 20 + 7.5 log10 20 - (24.37 - 3.7 * 0.8^2) log10 25
    # + 20 log10 2 - (3.2 (log10 17.625)^2 - 4.97)
    # = 161.04 + 0.5204 - 22.002 * 1.39794 + 6.0206 + 0.0009
    # = 161.04 + 0.5204 - 30.7575 + 6.0206 + 0.0009 = 136.8244
    value = UMA_NLOS.pathloss_db(np.array([1000.0]), 2e9, 25.0, 1.5)[0]
    assert value == pytest.approx(136.8244, abs=1e-3)


def test_los_probability_values():
    # d <= 18 m: always LOS; d = 36 m: 0.5 (1 - e^-1) + e^-1 = 0.6839
    assert los_probability(np.array([10.0, 18.0]), 36.0) == pytest.approx([1.0, 1.0])
    assert los_probability(np.array([36.0]), 36.0)[0] == pytest.approx(0.68394, abs=1e-5)
    # UMa at 63 m: 18/63 (1 - e^-1) + e^-1
    expected = 18 / 63 * (1 - math.exp(-1)) + math.exp(-1)
    assert UMA.los_probability(np.array([63.0]))[0] == pytest.approx(expected)
    assert UMI_NLOS.los_probability(np.array([50.0]))[0] == 0.0
    assert UMI_LOS.los_probability(np.array([500.0]))[0] == 1.0


def test_mixed_model_takes_each_links_condition():
    d = np.array([100.0, 100.0])
    both = UMI.pathloss_db(d, 2.5e9, 10.0, 1.5, los=np.array([True, False]))
    assert both[0] == pytest.approx(UMI_LOS.pathloss_db(d[:1], 2.5e9, 10.0, 1.5)[0])
    assert both[1] == pytest.approx(UMI_NLOS.pathloss_db(d[:1], 2.5e9, 10.0, 1.5)[0])
    with pytest.raises(ValueError, match="condition"):
        UMI.pathloss_db(d, 2.5e9, 10.0, 1.5)
    assert UMI.shadowing_sigma_db(np.array([True, False])).tolist() == [3.0, 4.0]
    assert UMA.shadowing_sigma_db(np.array([True, False])).tolist() == [4.0, 6.0]


def test_validity_problems_name_what_is_wrong():
    assert set(UMI_NLOS.problems(1.8e9, 11.0, 1.0)) == {"frequency"}
    assert UMI_NLOS.problems(2.5e9, 11.0, 1.0) == {}  # NLOS ignores the 1 m UE
    los = UMI_LOS.problems(2.5e9, 11.0, 1.0)
    assert set(los) == {"ue_height"} and "h' = h - 1 m" in los["ue_height"]
    assert "ue_height" in UMI.problems(2.5e9, 11.0, 1.0)


def test_distances_outside_validity_are_refused_or_clipped_never_extrapolated():
    d = np.array([5.0, 500.0, 2500.0])
    with pytest.raises(OutOfValidityError, match=r"\[10, 2000\] m"):
        UMI_NLOS.check_distance(d, "refuse")
    assert UMI_NLOS.check_distance(d, "clip").tolist() == [10.0, 500.0, 2000.0]
    assert UMA_NLOS.check_distance(np.array([4000.0]), "refuse").tolist() == [4000.0]


def test_shannon_with_loss_hand_computed():
    mapping = ShannonWithLoss(loss_db=1.6, max_efficiency_bps_hz=4.8)
    # SINR 10 dB: log2(1 + 10^-0.16 * 10) = log2(7.91833) = 2.98522 bit/s/Hz
    assert mapping.rate_bps(np.array([10.0]), 1.8e6)[0] == pytest.approx(1.8e6 * 2.98522, rel=1e-5)
    # High SINR hits the cap: 1.8 MHz * 4.8 = 8.64 Mbit/s (the paper's maximum)
    assert mapping.rate_bps(np.array([1e6]), 1.8e6)[0] == pytest.approx(8.64e6)
    assert Shannon().rate_bps(np.array([1.0]), 1e6)[0] == pytest.approx(1e6)


def test_lte_cqi_mapping():
    mapping = LteCqi(target_ber=5e-5)
    # gap = -ln(2.5e-4) / 1.5 = 5.5294; SINR 20 dB -> log2(1 + 100 / 5.5294) = 4.2544,
    # the highest CQI not above it is 12 (3.9023 bit/s/Hz)
    assert mapping.gap == pytest.approx(5.5294, abs=1e-4)
    assert mapping.cqi(np.array([100.0]))[0] == 12
    assert mapping.rate_bps(np.array([100.0]), 180e3)[0] == pytest.approx(180e3 * 3.9023)
    assert mapping.cqi(np.array([1e-3, 1e9])).tolist() == [0, 15]
    efficiency = mapping.spectral_efficiency(np.logspace(-3, 6, 200))
    assert np.all(np.diff(efficiency) >= 0) and efficiency.max() == CQI_EFFICIENCY_BPS_HZ[-1]


def test_registry_lists_and_loads_every_entry():
    registry = channel_models()
    assert set(registry.entries()) == set(CHANNEL_MODELS)
    for name in CHANNEL_MODELS:
        assert registry.load(name) is not None


def test_channel_models_import_with_numpy_only():
    code = (
        "import sys, channel_models, channel_models.itu_m2135, channel_models.rate,"
        " channel_models.tr38901, channel_models.antenna, channel_models.protocol;"
        "bad = {'simpy', 'torch', 'pydantic', 'netfl', 'scipy'} & set(sys.modules);"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_registered_path_loss_model_passes_the_conformance_check():
    from channel_models.protocol import check_channel_model

    registry = channel_models()
    checked = 0
    for name in CHANNEL_MODELS:
        model = registry.load(name)
        if not hasattr(model, "pathloss_db"):
            continue  # a rate mapping
        frequency = 2.5e9  # inside ITU-R M.2135 (2-6 GHz) and TR 38.901 (0.5-100 GHz)
        assert check_channel_model(model, frequency, 10.0, 1.5) == [], name
        checked += 1
    assert checked == 14  # 6 ITU-R M.2135, 6 TR 38.901, 2 TR 36.873


def test_conformance_check_names_the_broken_rule():
    from channel_models.protocol import check_channel_model

    class Shrinking:
        def problems(self, frequency_hz, bs_height_m, ue_height_m):
            return {}

        def distance_range_m(self):
            return 10.0, 1000.0

        def los_probability(self, distance_m):
            return np.full(np.shape(distance_m), 1.5)

        def shadowing_sigma_db(self, los):
            return np.zeros(np.shape(los))

        def check_distance(self, distance_m, out_of_range):
            return np.asarray(distance_m)  # never refuses

        def pathloss_db(self, distance_m, frequency_hz, bs_height_m, ue_height_m, los=None):
            distance_m[:] = 1.0  # writes to its input, and the loss no longer grows
            return 100.0 - np.log10(np.arange(1, len(distance_m) + 1))

    broken = " | ".join(check_channel_model(Shrinking()))
    assert "los_probability() is not a probability" in broken
    assert "non-decreasing" in broken
    assert "modified its input" in broken
    assert "accepted a distance beyond its range" in broken
    assert check_channel_model(object()) == [
        "it lacks the ChannelModel method(s) problems, distance_range_m, los_probability,"
        " shadowing_sigma_db, check_distance, pathloss_db"
    ]
