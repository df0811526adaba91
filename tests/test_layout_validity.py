"""A layout whose distances leave the path-loss model's validity is bad input (issue 27
item 2): exit 2 and one line naming the key, in ``validate`` and ``simulate``, before
anything is built or written (it was "the run failed: OutOfValidityError", exit 1)."""

from __future__ import annotations

import math

import pytest

from netfl.cli import main
from netfl.config.cell import CellConfig
from netfl.radio.checks import layout_distance_range_m


@pytest.mark.parametrize("isd", ["1e12", "20 km"])
@pytest.mark.parametrize("command", ["validate", "simulate"])
def test_a_layout_beyond_validity_is_refused_naming_the_key(isd, command, tmp_path, capsys):
    """scenarios/multicell.yaml (TR 38.901 UMi, valid to 5 km) spread to an ISD of 20 km:
    devices are up to sqrt(19/3) x 20 km = 50 km from a site's nearest image."""
    out = ["--out", str(tmp_path / "run")] if command == "simulate" else []
    code = main([command, "multicell", "--set", f"cell.inter_site_distance_m={isd}", *out])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert "cell.inter_site_distance_m: devices up to" in err
    assert "tr38901_umi's validity (5000 m)" in err
    assert not (tmp_path / "run").exists()


def test_the_farthest_distance_is_the_wrap_around_lattices_covering_radius():
    """With wrap-around a device sees the nearest of a site's images, a hexagonal lattice
    of spacing sqrt(19) ISD: the farthest point is its covering radius, sqrt(19/3) ISD."""
    cell = CellConfig(inter_site_distance_m=20_000, sites=19, sectors=3, wrap_around=True)
    assert layout_distance_range_m(cell)[1] == pytest.approx(math.sqrt(19 / 3) * 20_000)
