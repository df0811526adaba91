"""channel_models.tr38901 and channel_models.antenna against values computed by hand.

TR 38.901 V16.1.0 Table 7.4.1-1 (path loss), Table 7.4.2-1 (LOS probability), Tables
7.4.3-1/-2 (O2I); TR 36.873 Table 7.2-1; the element pattern of TR 38.901 Table 7.3-1.
The arithmetic is in the comments (log10 values to 6 digits).
"""

from __future__ import annotations

import numpy as np
import pytest

from channel_models import tr38901
from channel_models.antenna import SectorAntenna, array_factor_db, element_gain_dbi


def test_umi_street_canyon_nlos_at_3_5_ghz_100_m():
    # hBS 10, hUT 1.5, d2D 100: d3D = sqrt(100^2 + 8.5^2) = 100.3606, log10 = 2.001564;
    # log10(3.5) = 0.544068. NLOS' = 35.3*2.001564 + 22.4 + 21.3*0.544068 = 104.6439;
    # LOS (d2D < d'BP = 4*9*0.5*3.5e9/3e8 = 210 m) = 32.4 + 21*2.001564 + 20*0.544068
    # = 85.3142; NLOS = max(LOS, NLOS') = 104.6439.
    d = np.array([100.0])
    assert tr38901.UMI_NLOS.pathloss_db(d, 3.5e9, 10.0, 1.5)[0] == pytest.approx(104.6439, abs=1e-3)
    assert tr38901.UMI_LOS.pathloss_db(d, 3.5e9, 10.0, 1.5)[0] == pytest.approx(85.3142, abs=1e-3)
    assert tr38901.breakpoint_distance_m(10.0, 1.5, 3.5e9) == pytest.approx(210.0)


def test_umi_street_canyon_los_beyond_the_breakpoint():
    # d2D 500 > 210 m: d3D = 500.0722, log10 = 2.699033; d'BP^2 + 8.5^2 = 44172.25,
    # log10 = 4.645148. PL2 = 32.4 + 40*2.699033 + 20*0.544068 - 9.5*4.645148 = 107.1138.
    value = tr38901.UMI_LOS.pathloss_db(np.array([500.0]), 3.5e9, 10.0, 1.5)[0]
    assert value == pytest.approx(107.1138, abs=1e-3)


def test_uma_nlos_and_los_at_6_ghz_300_m():
    # hBS 25, hUT 1.5, d2D 300: d3D = 300.9190, log10 = 2.478450; 20 log10(6) = 15.563025.
    # NLOS' = 13.54 + 39.08*2.478450 + 15.563025 = 125.9609; d'BP = 4*24*0.5*6e9/3e8 = 960 m,
    # LOS = PL1 = 28 + 22*2.478450 + 15.563025 = 98.0889.
    d = np.array([300.0])
    assert tr38901.UMA_NLOS.pathloss_db(d, 6e9, 25.0, 1.5)[0] == pytest.approx(125.9609, abs=1e-3)
    assert tr38901.UMA_LOS.pathloss_db(d, 6e9, 25.0, 1.5)[0] == pytest.approx(98.0889, abs=1e-3)


def test_nlos_is_never_below_los():
    d = np.geomspace(10, 5000, 200)
    for los, nlos in ((tr38901.UMI_LOS, tr38901.UMI_NLOS), (tr38901.UMA_LOS, tr38901.UMA_NLOS)):
        for fc in (0.7e9, 3.5e9, 28e9):
            assert np.all(nlos.pathloss_db(d, fc, 25.0, 1.5) >= los.pathloss_db(d, fc, 25.0, 1.5))


def test_tr36873_3d_umi_hand_computed():
    # 2 GHz, hBS 10, hUT 7.5 (third floor), d2D 150: d3D = sqrt(150^2 + 2.5^2) = 150.0208,
    # log10 = 2.176151; log10(2) = 0.301030. NLOS' = 36.7*2.176151 + 22.7 + 26*0.301030
    # - 0.3*6 = 79.8648 + 22.7 + 7.8268 - 1.8 = 108.5915;
    # LOS (d'BP = 4*9*6.5*2e9/3e8 = 1560 m) = 22*2.176151 + 28 + 20*0.301030 = 81.8959.
    d = np.array([150.0])
    got = tr38901.UMI_3D.pathloss_db(d, 2e9, 10.0, np.array([7.5]), los=np.array([False]))
    assert got[0] == pytest.approx(108.5915, abs=1e-3)
    got = tr38901.UMI_3D.pathloss_db(d, 2e9, 10.0, np.array([7.5]), los=np.array([True]))
    assert got[0] == pytest.approx(81.8959, abs=1e-3)


def test_los_probability_table_7_4_2_1():
    # UMi, d 50: 18/50 + exp(-50/36) (1 - 18/50) = 0.36 + 0.249352*0.64 = 0.519585.
    assert tr38901.los_probability("umi", np.array([50.0]))[0] == pytest.approx(0.519585, abs=1e-6)
    # UMa, d 100, hUT 1.5: 0.18 + exp(-100/63)*0.82 = 0.18 + 0.204475*0.82 = 0.347670;
    # hUT 18 m: C' = 0.5^1.5 = 0.353553, times 1 + 0.353553*1.25*1*exp(-2/3) = 1.226904.
    assert tr38901.los_probability("uma", np.array([100.0]), 1.5)[0] == pytest.approx(
        0.347670, abs=1e-6
    )
    assert tr38901.los_probability("uma", np.array([100.0]), 18.0)[0] == pytest.approx(
        0.426558, abs=1e-5
    )
    assert tr38901.los_probability("umi", np.array([5.0, 18.0]))[:].tolist() == [1.0, 1.0]


def test_o2i_penetration_loss_table_7_4_3_2():
    # 6 GHz: L_glass = 3.2, L_concrete = 29, L_IRRglass = 24.8.
    # low: 5 - 10 log10(0.3*10^-0.32 + 0.7*10^-2.9) = 5 + 8.4022 = 13.4022;
    # high: 5 - 10 log10(0.7*10^-2.48 + 0.3*10^-2.9) = 5 + 25.6939 = 30.6939.
    assert tr38901.o2i_penetration_loss_db("low", 6e9) == pytest.approx(13.4022, abs=1e-3)
    assert tr38901.o2i_penetration_loss_db("high", 6e9) == pytest.approx(30.6939, abs=1e-3)


def test_validity_problems_name_the_input():
    assert tr38901.UMI.problems(3.5e9, 10.0, 1.5) == {}
    assert set(tr38901.UMI.problems(200e9, 10.0, 1.5)) == {"frequency"}
    assert set(tr38901.UMI_3D.problems(28e9, 10.0, 1.5)) == {"frequency"}
    assert set(tr38901.UMA.problems(3.5e9, 25.0, 24.0)) == {"ue_height"}
    with pytest.raises(ValueError, match="validity"):
        tr38901.UMI.check_distance(np.array([6000.0]), "refuse")


def test_element_pattern_table_7_3_1():
    # Boresight at the horizon: 8 dBi. 65 degrees off in azimuth: 8 - 12 = -4 dBi; behind:
    # min(12 (180/65)^2, 30) = 30 -> -22 dBi; 65 degrees off in both: 8 - min(24, 30) = -16.
    got = element_gain_dbi(np.array([90.0, 90.0, 90.0, 155.0]), np.array([0.0, 65.0, 180.0, 65.0]))
    assert got.tolist() == pytest.approx([8.0, -4.0, -22.0, -16.0])


def test_tilted_column_gains_ten_db_in_the_tilt_direction():
    # 10 elements steered to zenith 102: array factor |sum|^2 / 10 = 10 -> +10 dB there; the
    # element gives 8 - 12 (12/65)^2 = 7.5910 dBi.
    antenna = SectorAntenna(elements=10, electrical_tilt_deg=12.0)
    assert antenna.gain_dbi(np.array([102.0]), np.array([0.0]))[0] == pytest.approx(
        17.5910, abs=1e-3
    )
    assert array_factor_db(np.array([102.0]), 10, 102.0, 0.5)[0] == pytest.approx(10.0)
    theta = np.linspace(60, 170, 500)
    assert theta[np.argmax(antenna.gain_dbi(theta, np.zeros_like(theta)))] == pytest.approx(
        102, abs=0.5
    )
