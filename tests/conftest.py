"""Shared fixtures: tiny scenarios that run in about a second."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

#: An isolated omni cell of 500 m (the schema's default is the 3GPP 57-cell network): what tests of
#: single-cell behaviour describe, with the seed papers' radio (ITU-R M.2135 UMi NLOS at
#: 2.5 GHz, BS 41 dBm, device noise figure 7 dB).
ISOLATED_CELL: dict[str, Any] = {
    "sites": 1,
    "sectors": 1,
    "indoor_fraction": 0.0,
    "radius_m": 500.0,
}
ISOLATED_RADIO: dict[str, Any] = {
    "model": "lte",
    "channel_model": "umi_nlos",
    "carrier_frequency_hz": 2.5e9,
    "downlink": {"tx_power_dbm": 41.0, "noise_figure_db": 7.0},
    # The seed papers' fixed power per RB: rates linear in the RBs a transfer holds, which
    # the tests of the engine's sharing read off (tests/test_power_control.py has the rest).
    "uplink_power_control": {"mode": "fixed_per_rb"},
}


def isolated(data: dict[str, Any], **radio: Any) -> dict[str, Any]:
    """``data`` on an isolated LTE cell (its own cell keys kept), with ``radio`` keys on top."""
    data["cell"] = {**ISOLATED_CELL, **data.get("cell", {})}
    data["radio"] = {**ISOLATED_RADIO, **radio}
    return data


TINY: dict[str, Any] = {
    "name": "tiny",
    "seed": 3,
    "radio": {
        "model": "fixed",
        "rate_ul_bps": {"dist": "uniform", "low": 1.0e6, "high": 2.0e6},
        "rate_dl_bps": 1.0e7,
    },
    "devices": {
        "groups": [
            {
                "name": "a",
                "count": 6,
                "compute_sps": {"dist": "uniform", "low": 20, "high": 60},
                "n_samples": {"dist": "uniform", "low": 30, "high": 60},
            }
        ]
    },
    "fl": {"rounds": 3, "clients_per_round": 3},
    "learning": {"dataset": "digits", "model": "digits_mlp", "local_epochs": 1},
}


@pytest.fixture
def tiny() -> dict[str, Any]:
    """A fresh copy of the tiny scenario as a mapping (edit freely)."""
    return yaml.safe_load(yaml.safe_dump(TINY))


@pytest.fixture
def write_scenario(tmp_path: Path):
    """Write a mapping (or raw text) to a YAML file and return its path."""

    def write(data: dict[str, Any] | str, name: str = "scenario.yaml") -> Path:
        path = tmp_path / name
        text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
        path.write_text(text)
        return path

    return write
