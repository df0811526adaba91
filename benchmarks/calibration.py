"""The full 3GPP large-scale calibration and the cost of the propagation matrices.

1. Every preset of ``netfl.radio.calibration.PRESETS`` with ``--ues`` devices (20,000 by
   default) and ``--seeds`` seeds: the measured 5th/50th/95th percentiles of coupling loss
   and geometry against the reference, printed as the markdown table of ``docs/radio.md``
   ("Calibration"), and each preset's figure written to ``docs/figures/calibration_<preset>.png``
   (with ``--figures``).
2. The cost of :func:`netfl.radio.propagation.link_gains` for 1,000 devices on 19 sites x 3
   sectors with wrap-around (the per-drop cost of a multi-cell run): median of ``--repeat``.

Run: ``python -m benchmarks.calibration [--ues 20000] [--seeds 1 2 3] [--figures]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from netfl.map.layout import hex_layout
from netfl.radio.calibration import PERCENTILES, PRESETS, calibrate
from netfl.radio.propagation import Environment, drop_heights, link_gains

FIGURES = Path(__file__).resolve().parent.parent / "docs" / "figures"


def calibration_table(ues: int, seeds: list[int], figures: bool) -> str:
    from netfl.commands.calibrate import _figure

    rows = [
        "| preset | metric | measured 5% / 50% / 95% (dB) | reference 5% / 50% / 95% (dB) |"
        " max. difference (dB) | within targets |",
        "|---|---|---|---|---|---|",
    ]
    for name, preset in PRESETS.items():
        results = [calibrate(preset, ues, seed) for seed in seeds]
        if figures:
            (FIGURES / f"calibration_{name}.png").write_bytes(_figure(results[0]))
        for metric, reference in (
            ("coupling_loss_db", preset.coupling_loss),
            ("geometry_db", preset.geometry),
        ):
            measured = [
                float(np.median([np.percentile(getattr(r, metric), p) for r in results]))
                for p in PERCENTILES
            ]
            ref = [reference.at(p) for p in PERCENTILES]
            diff = [m - r for m, r in zip(measured, ref, strict=True)]
            ok = abs(diff[1]) <= 1.0 and abs(diff[0]) <= 2.0 and abs(diff[2]) <= 2.0
            rows.append(
                f"| `{name}` | {metric} | {' / '.join(f'{m:.1f}' for m in measured)} |"
                f" {' / '.join(f'{r:.1f}' for r in ref)} |"
                f" {max(diff, key=abs):+.2f} | {'yes' if ok else 'NO'} |"
            )
    return "\n".join(rows)


def propagation_cost_ms(devices: int, repeat: int) -> float:
    preset = PRESETS["tr38901_umi"]
    layout = hex_layout(19, 3, preset.inter_site_distance_m, wrap_around=True)
    env = Environment(
        preset.model, preset.frequency_hz, preset.bs_height_m, preset.antenna, "mixed", 0.5
    )
    times = []
    for seed in range(repeat):
        rng = np.random.default_rng(seed)
        start = time.perf_counter()
        xy = layout.drop_uniform(devices, preset.min_distance_m, rng)
        heights = drop_heights(devices, 0.8, rng)
        link_gains(layout, xy, heights, env, rng, rng, rng)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ues", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--figures", action="store_true", help="write docs/figures/*.png")
    args = parser.parse_args()
    print(calibration_table(args.ues, args.seeds, args.figures))
    print()
    for devices in (1_000, 10_000):
        cost = propagation_cost_ms(devices, args.repeat)
        print(f"link_gains, {devices} devices x 57 cells (wrap-around): {cost:.1f} ms (median)")


if __name__ == "__main__":
    main()
