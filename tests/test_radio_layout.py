"""The multi-cell layout from a scenario: cell.sites / sectors / wrap_around / indoor_fraction /
antenna_* keys, their errors, and the sites and sectors in the network topology."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from channel_models import itu_m2135
from channel_models.antenna import OmniAntenna, SectorAntenna
from netfl.errors import ScenarioError
from netfl.map.layout import antenna_from_config, layout_from_config
from netfl.radio.calibration import PRESETS, cell_config, preset_dict
from netfl.radio.propagation import Environment, drop_heights, link_gains
from netfl.radio.topology import CENTRE_SITE, backhaul_path, build_topology
from netfl.scenario import scenario_from_data


def _scenario(**cell: Any) -> Any:
    data: dict[str, Any] = {
        "cell": {"inter_site_distance_m": 200.0, **cell},
        "radio": {"model": "lte", "channel_model": "tr38901_umi", "carrier_frequency_hz": 3.5e9},
        "devices": {"groups": [{"count": 10, "n_samples": 50}]},
        "fl": {"rounds": 2, "clients_per_round": 2, "model_size_bits": 1e6},
        "learning": None,
    }
    return scenario_from_data(data)


@pytest.mark.parametrize(
    ("cell", "key", "message"),
    [
        ({"sectors": 2}, "cell.sectors", "sectors must be 1 (omni) or 3, not 2"),
        ({"sites": 5}, "cell.sites", "sites must be 1, 7 or 19, not 5"),
        ({"sites": 7, "wrap_around": True}, "cell.wrap_around", "needs sites: 19, not 7"),
        ({"sites": 1, "wrap_around": True}, "cell.wrap_around", "needs sites: 19, not 1"),
        ({"indoor_fraction": 1.5}, "cell.indoor_fraction", "less than or equal to 1"),
        ({"indoor_fraction": -0.1}, "cell.indoor_fraction", "greater than or equal to 0"),
        ({"sectors": 1, "antenna_elements": 10}, "cell.antenna_elements", "needs sectors: 3"),
        (
            {"sectors": 3, "antenna_electrical_downtilt_deg": 12},
            "cell.antenna_electrical_downtilt_deg",
            "needs antenna_elements above 1",
        ),
        (
            {"sectors": 1, "antenna_mechanical_downtilt_deg": 6},
            "cell.antenna_mechanical_downtilt_deg",
            "sectors",
        ),
        ({"device_sites": "middle"}, "cell.device_sites", "'all' or 'centre'"),
        ({"o2i_high_loss_fraction": 2}, "cell.o2i_high_loss_fraction", "less than or equal"),
        ({"interfering_rings": 1}, "cell", "cell.sites: 7 or 19"),
    ],
)
def test_bad_layout_input_is_refused_in_one_line_naming_the_key(cell, key, message):
    with pytest.raises(ScenarioError) as info:
        _scenario(**cell)
    assert [p.key for p in info.value.problems] == [key]
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_the_default_is_the_tr36873_umi_calibration_layout():
    """No cell keys: 19 sites x 3 sectors with wrap-around, ISD 200 m, 80% indoor with the
    TR 36.873 O2I loss, one element per sector, the devices in the centre site: the
    configuration of PRESETS["tr36873_umi"] (TR 36.873 Table 8.2-1)."""
    from netfl.config.cell import CellConfig
    from netfl.config.radio import LteRadioConfig

    cell, preset = CellConfig(), PRESETS["tr36873_umi"]
    assert (cell.sites, cell.sectors, cell.wrap_around) == (19, 3, True)
    assert cell.inter_site_distance_m is None
    layout = layout_from_config(cell)
    assert layout.inter_site_distance_m == pytest.approx(preset.inter_site_distance_m)
    assert cell.indoor_fraction == preset.indoor_fraction and cell.o2i_model == "tr36873"
    assert antenna_from_config(cell, 0.0) == preset.antenna
    assert (cell.min_distance_m, cell.bs_height_m) == (preset.min_distance_m, preset.bs_height_m)
    assert cell.device_sites == "centre"
    radio = LteRadioConfig()
    assert radio.channel_model == "tr36873_umi"
    assert radio.carrier_frequency_hz == preset.frequency_hz
    assert (radio.downlink.tx_power_dbm, radio.downlink.noise_figure_db) == (
        preset.tx_power_dbm,
        preset.noise_figure_db,
    )
    assert radio.downlink.bandwidth_hz == preset.bandwidth_hz


def test_one_site_is_an_omni_cell_without_wrap_around():
    cell = _scenario(sites=1, sectors=1).cell
    assert cell.wrap_around is False
    layout = layout_from_config(cell)
    assert layout.n_cells == 1
    assert layout.inter_site_distance_m == pytest.approx(200.0)
    assert antenna_from_config(cell, 3.0) == OmniAntenna(3.0)


def test_a_19_site_3_sector_layout_from_the_keys():
    cell = _scenario(
        sites=19,
        sectors=3,
        wrap_around=True,
        indoor_fraction=0.8,
        antenna_elements=10,
        antenna_electrical_downtilt_deg=12,
    ).cell
    layout = layout_from_config(cell)
    assert (layout.n_sites, layout.n_cells, layout.wrap_around) == (19, 57, True)
    assert antenna_from_config(cell, 0.0) == SectorAntenna(10, 12.0, 0.0)


def test_topology_holds_every_site_and_sector():
    cell = _scenario(sites=19, sectors=3, wrap_around=True).cell
    layout = layout_from_config(cell)
    graph = build_topology(cell.radius_m, cell.backhaul.model_dump(), layout)
    sites = {n: d for n, d in graph.nodes(data=True) if d["kind"] == "cell" and "site" in d}
    sectors = {n: d for n, d in graph.nodes(data=True) if d["kind"] == "sector"}
    assert len(sites) == 19 and len(sectors) == 57
    assert sorted(d["cell"] for d in sectors.values()) == list(range(57))
    for node, data in sites.items():
        # The site node sits where the layout puts that site.
        np.testing.assert_allclose(
            (data["x_m"], data["y_m"]), layout.site_xy_m[data["site"]], atol=1e-9
        )
        assert sorted(graph.neighbors(node), key=str)
        assert graph.edges[node, "edge"]["kind"] == "backhaul"
    for node, data in sectors.items():
        site_node = next(n for n in graph.neighbors(node))
        assert graph.nodes[site_node]["site"] == data["site"]
        assert data["boresight_deg"] == layout.cell_boresight_deg[data["cell"]]
    # The centre site's backhaul path: BS -> edge -> cloud.
    assert [graph.edges[e]["kind"] for e in backhaul_path(graph, "cloud")] == [
        "backhaul",
        "backhaul",
    ]
    assert graph.nodes[CENTRE_SITE]["site"] == 0


def test_the_single_cell_is_a_layout_of_one_site_and_sector():
    cell = _scenario(sites=1, sectors=1).cell
    graph = build_topology(cell.radius_m, cell.backhaul.model_dump(), layout_from_config(cell))
    kinds = [d["kind"] for _, d in graph.nodes(data=True)]
    assert kinds.count("cell") == 1 and kinds.count("sector") == 1


def test_link_gains_take_any_registered_path_loss_model():
    """An ITU-R M.2135 model (scalar device height) works for outdoor devices; devices on
    floors need a TR 38.901 model and are refused with the reason."""
    cell = _scenario(sites=7, sectors=3).cell
    layout = layout_from_config(cell)
    rng = np.random.default_rng(4)
    xy = layout.drop_uniform(200, 10.0, rng)
    env = Environment(itu_m2135.UMI, 2.5e9, 10.0, antenna_from_config(cell, 0.0))
    gains = link_gains(layout, xy, drop_heights(200, 0.0, rng), env, rng, rng, rng)
    assert gains.coupling_gain_db.shape == (200, 21)
    # Serving link: coupling loss = M.2135 path loss - antenna gain + shadowing, and that
    # shadowing has M.2135's sigma (3 dB LOS, 4 dB NLOS; association biases it low).
    device = np.arange(200)
    serving = gains.serving_cell
    site = layout.cell_site[serving]
    d2d, los = gains.distance_2d_m, gains.los
    pathloss = itu_m2135.UMI.pathloss_db(d2d, 2.5e9, 10.0, 1.5, los=los)
    np.testing.assert_allclose(gains.pathloss_db, pathloss)
    offsets = layout.site_offsets_m(xy)[device, site]
    d3d = np.hypot(d2d, 10.0 - 1.5)
    zenith = 180.0 - np.degrees(np.arccos((10.0 - 1.5) / d3d))
    azimuth = np.degrees(np.arctan2(offsets[:, 1], offsets[:, 0]))
    gain = SectorAntenna().gain_dbi(zenith, azimuth - layout.cell_boresight_deg[serving])
    shadowing = gains.coupling_loss_db - pathloss + gain
    np.testing.assert_allclose(gains.shadowing_db, shadowing, atol=1e-9)
    sigma = np.where(los, 3.0, 4.0)
    assert np.all(np.abs(shadowing) < 5 * sigma)
    assert 0.5 < np.std(shadowing / sigma) < 1.2
    with pytest.raises(ValueError, match="takes one device height"):
        link_gains(layout, xy, drop_heights(200, 0.8, rng), env, rng, rng, rng)


def test_every_calibration_preset_is_a_valid_cell_section():
    """The presets' layout and antenna go through the scenario keys, so a scenario with the
    preset's cell keys has exactly the calibrated layout and antenna."""
    for preset in PRESETS.values():
        cell = cell_config(preset)
        assert antenna_from_config(cell, 0.0) == preset.antenna
        layout = layout_from_config(cell)
        assert (layout.n_sites, layout.sectors, layout.wrap_around) == (19, 3, True)
        assert layout.inter_site_distance_m == pytest.approx(preset.inter_site_distance_m)
        assert preset_dict(preset)["cell"]["indoor_fraction"] == 0.8


def test_wrap_around_images_are_the_nearest_and_a_guess_changes_no_bit():
    """Layout.site_images: each offset is the shortest of the 7 images' (brute force), and
    an earlier image as guess (devices that moved a little, or a wrong guess) gives the same
    offsets bit for bit."""
    from netfl.map.layout import _WRAP_AXIAL, hex_layout

    layout = hex_layout(19, 3, 200.0, wrap_around=True)
    rng = np.random.default_rng(7)
    xy = rng.uniform(-600.0, 600.0, (3000, 2))
    offsets, image = layout.site_images(xy)
    isd = layout.inter_site_distance_m
    shifts = np.array([(isd * (q + r / 2), isd * r * 3**0.5 / 2) for q, r in _WRAP_AXIAL])
    plain = xy[:, None, :] - layout.site_xy_m[None, :, :]
    brute = np.hypot(*(plain[:, :, None, :] - shifts).transpose(3, 0, 1, 2)).min(axis=2)
    np.testing.assert_allclose(np.hypot(offsets[..., 0], offsets[..., 1]), brute, rtol=1e-12)
    assert (image > 0).any() and (image == 0).any()
    moved = xy + rng.normal(0.0, 2.0, xy.shape)
    for guess in (image, rng.integers(0, 7, image.shape).astype(np.int8)):
        with_guess = layout.site_images(moved, guess)
        without = layout.site_images(moved)
        assert np.array_equal(with_guess[0].view(np.int64), without[0].view(np.int64))
        assert np.array_equal(with_guess[1], without[1])
