"""The isolated cell the radio and scheduler benchmarks were first measured on.

The schema's default is the calibrated 57-cell network (docs/radio.md); benchmarks whose
figures are about the scheduler, the protocol or one cell's traffic keep the seed
scenarios' isolated omni cell (ITU-R M.2135 UMi NLOS at 2.5 GHz, BS 41 dBm, device noise
figure 7 dB), written out here once.
"""

from __future__ import annotations

from typing import Any

ISOLATED_CELL: dict[str, Any] = {"sites": 1, "sectors": 1, "indoor_fraction": 0.0}
ISOLATED_RADIO: dict[str, Any] = {
    "model": "lte",
    "channel_model": "umi_nlos",
    "carrier_frequency_hz": 2.5e9,
    "downlink": {"tx_power_dbm": 41.0, "noise_figure_db": 7.0},
    # The mapping these benchmarks were measured with (the default before issue 26):
    # under lte_tbs a few devices at the cell edge have no coverage and the build refuses.
    "rate_mapping": {"kind": "shannon_with_loss", "loss_db": 1.6, "max_spectral_efficiency": 4.8},
}
