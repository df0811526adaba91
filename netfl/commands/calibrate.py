"""``netfl calibrate PRESET --out DIR``: the 3GPP large-scale calibration of the radio.

Drops devices in a calibration configuration (:data:`netfl.radio.calibration.PRESETS`),
writes ``DIR/calibration.json`` (measured and reference 5th, 50th and 95th percentiles of
the coupling loss and the geometry, with the reference's source) and
``DIR/calibration.png`` (the measured CDFs over the reference, and the drop coloured by
serving cell). Exit 0 when every percentile is within its target, 1 when one is not.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import Any

from netfl.errors import NetflError

EXIT_OK, EXIT_OFF_TARGET = 0, 1

MIN_UES = 100
"""Fewest devices whose percentiles mean something: at least 5 lie beyond the 5th and
beyond the 95th percentile the calibration compares (1 or 2 devices gave "percentiles"
of one or two values)."""


def _whole_number(text: str, least: int, why: str = "") -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"expected at least {least:,}{why}, got {value:,}")
    return value


def _ues(text: str) -> int:
    return _whole_number(
        text, MIN_UES, " (so that 5 devices lie beyond the 5th and the 95th percentile)"
    )


def _seed(text: str) -> int:
    return _whole_number(text, 0)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cal = sub.add_parser(
        "calibrate",
        help="3GPP large-scale calibration: coupling loss and geometry against the reference",
    )
    cal.add_argument(
        "preset",
        help="tr36873_umi, tr36873_uma, tr38901_umi, tr38901_uma (6 GHz), tr38901_umi_30ghz"
        " or tr38901_uma_30ghz",
    )
    cal.add_argument(
        "--ues", type=_ues, default=10_000, help=f"devices to drop (10000; at least {MIN_UES})"
    )
    cal.add_argument("--seed", type=_seed, default=1, help="random seed, 0 or more (1)")
    cal.add_argument("--out", required=True, help="output folder (refused if not empty)")
    cal.add_argument("--force", action="store_true", help="replace a calibration folder")
    cal.set_defaults(handler=_calibrate)


def _calibrate(args: argparse.Namespace) -> int:
    from netfl.radio.calibration import PRESETS, calibrate, preset_dict
    from netfl.rundir import prepare_output_dir, write_bytes, write_json

    if args.preset not in PRESETS:
        raise NetflError(
            f"calibrate: unknown preset {args.preset!r}; choose one of {', '.join(PRESETS)}"
        )
    _check_memory(PRESETS[args.preset], args.ues)
    out = prepare_output_dir(
        Path(args.out),
        args.force,
        "calibration",
        lambda p: (p / "calibration.json").is_file(),
        "calibration.json",
    )
    preset = PRESETS[args.preset]
    result = calibrate(preset, args.ues, args.seed)
    summary = result.summary()
    summary["seed"] = args.seed
    summary["parameters"] = preset_dict(preset)
    write_json(out / "calibration.json", summary)
    write_bytes(out / "calibration.png", _figure(result))
    _print(summary, out)
    return EXIT_OK if summary["within_targets"] else EXIT_OFF_TARGET


def _check_memory(preset: Any, ues: int) -> None:
    """Refuse a drop the machine cannot hold (it keeps every device's gain to every cell:
    :func:`netfl.resources.layout_bytes_per_device`), before anything is written or
    allocated."""
    from netfl.radio.calibration import cell_config
    from netfl.resources import (
        BASE_BYTES,
        format_bytes,
        layout_bytes_per_device,
        machine_memory,
    )

    needed = BASE_BYTES + ues * layout_bytes_per_device(cell_config(preset), ues)
    physical, _ = machine_memory()
    if needed > physical:
        raise NetflError(
            f"calibrate: --ues {ues:,} needs about {format_bytes(needed)} of memory, more than"
            f" this machine's {format_bytes(physical)}"
        )


def _print(summary: dict[str, Any], out: Path) -> None:
    print(f"{summary['title']}: {summary['devices']} devices")
    for metric, data in summary["metrics"].items():
        cells = []
        for p, row in data["percentiles"].items():
            mark = "ok" if row["within"] else f"off by more than {row['tolerance']:g} dB"
            cells.append(f"{p} {row['measured']:.1f} (ref {row['reference']:.1f}, {mark})")
        print(f"  {metric}: " + "; ".join(cells))
    verdict = "within" if summary["within_targets"] else "NOT within"
    print(f"{verdict} the targets (median 1 dB, 5th/95th 2 dB); wrote {out}/calibration.json, .png")


def _figure(result: Any) -> bytes:
    import numpy as np  # imported here: `netfl --help` parses this module's options
    from matplotlib.figure import Figure

    preset = result.preset
    fig = Figure(figsize=(15, 4.8), layout="constrained")
    axes = fig.subplots(1, 3)
    for ax, values, reference, label in (
        (axes[0], result.coupling_loss_db, preset.coupling_loss, "coupling loss (dB)"),
        (axes[1], result.geometry_db, preset.geometry, "geometry, S/I (dB)"),
    ):
        x = np.sort(values)
        ax.plot(x, np.arange(1, x.size + 1) / x.size * 100, label="netfl")
        ax.plot(reference.values, reference.percentiles, "k--", label="3GPP reference")
        ax.plot([reference.at(p) for p in (5, 50, 95)], (5, 50, 95), "ko", ms=4, label="5/50/95%")
        if values is result.geometry_db:
            y = np.sort(result.geometry_with_noise_db)
            ax.plot(y, np.arange(1, y.size + 1) / y.size * 100, ":", label="netfl, S/(I+N)")
        ax.set_xlabel(label)
        ax.set_ylabel("CDF (%)")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    fig.suptitle(f"netfl calibrate {preset.name}: {preset.title}", fontsize=11)
    fig.supxlabel(
        f"reference: {preset.coupling_loss.source}; {preset.geometry.source}",
        fontsize=6,
    )
    xy = result.device_xy_m
    shown = slice(0, min(len(xy), 4000))
    axes[2].scatter(
        xy[shown, 0], xy[shown, 1], c=result.serving_cell[shown] % 20, cmap="tab20", s=2
    )
    axes[2].set_aspect("equal")
    axes[2].set_title("devices by serving cell (first 4,000)", fontsize=10)
    axes[2].set_xlabel("x (m)")
    axes[2].set_ylabel("y (m)")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()
