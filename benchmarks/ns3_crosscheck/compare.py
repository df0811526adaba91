"""netfl against the committed ns-3 LENA results: per-device ratios, the table and the figure.

``python -m benchmarks.ns3_crosscheck.compare [--figure]`` prints the markdown tables of
docs/radio.md ("netfl against ns-3 LENA", and "Uplink power control" for the ``ul_pc_*``
cases) from ``results/`` and netfl's side (:mod:`benchmarks.ns3_crosscheck.netfl_side`),
and with ``--figure`` writes ``docs/figures/ns3_crosscheck.png``. No ns-3 needed.
``tests/test_ns3_crosscheck.py`` asserts the targets on the same numbers.
"""

from __future__ import annotations

import argparse
import csv
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from benchmarks.ns3_crosscheck.cases import RESULTS, Case, load_cases
from benchmarks.ns3_crosscheck.netfl_side import rates_bps

FIGURE = Path(__file__).resolve().parents[2] / "docs" / "figures" / "ns3_crosscheck.png"
#: netfl's previous default (the MAB-CS paper's mapping), for the "before" column.
PAPER_MAPPING = {"kind": "shannon_with_loss", "loss_db": 1.6, "max_spectral_efficiency": 4.8}
#: The per-device targets apply between these SINRs (issue 26).
SINR_RANGE_DB = (0.0, 30.0)


@dataclass
class CaseComparison:
    case: Case
    snr_db: np.ndarray
    ns3_bps: np.ndarray  # LENA with its artefacts removed
    lena_bps: np.ndarray  # LENA as shipped
    netfl_bps: np.ndarray  # netfl's default link abstraction
    paper_bps: np.ndarray  # netfl's previous default
    fixed_bps: np.ndarray | None = None  # power control cases: netfl before issue 33

    @property
    def in_range(self) -> np.ndarray:
        lo, hi = SINR_RANGE_DB
        return (self.snr_db >= lo) & (self.snr_db <= hi)

    @property
    def ratio(self) -> np.ndarray:
        return self.netfl_bps / self.ns3_bps


def ns3_rows() -> list[dict[str, str]]:
    with (RESULTS / "single_cell.csv").open() as f:
        return list(csv.DictReader(f))


def comparisons() -> list[CaseComparison]:
    rows = ns3_rows()
    out = []
    for case in load_cases(RESULTS / "cases.json"):

        def rate(mode: str, name: str = case.name) -> np.ndarray:
            mine = [r for r in rows if r["case"] == name and r["mode"] == mode]
            mine.sort(key=lambda r: int(r["device"]))
            return np.array([float(r["rate_bps"]) for r in mine])

        out.append(
            CaseComparison(
                case,
                np.array(case.snr_db()),
                rate("corrected"),
                rate("lena"),
                rates_bps(case),
                rates_bps(case, PAPER_MAPPING),
                rates_bps(fixed_power(case)) if case.cell.ue_p0_dbm is not None else None,
            )
        )
    return out


def fixed_power(case: Case) -> Case:
    """The case as netfl modelled it before issue 33: P_CMAX over the whole band, the same
    power per RB whatever the allocation."""
    c = case.cell
    per_rb = c.ue_p_cmax_dbm - 10 * np.log10(c.n_rb)
    return replace(case, cell=replace(c, ue_p0_dbm=None, ue_power_rb_dbm=float(per_rb)))


def geometric_mean(x: np.ndarray) -> float:
    return float(np.exp(np.mean(np.log(x))))


def table(items: list[CaseComparison]) -> str:
    lines = [
        "| case | devices | SINR (dB) | ns-3, artefacts removed (Mbit/s) | netfl / ns-3: per"
        " device | geometric mean | before: Shannon with loss / ns-3 | before / LENA as"
        " shipped |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in items:
        if c.fixed_bps is not None:
            continue  # power_control_table
        k = c.in_range
        before = c.paper_bps[k] / c.ns3_bps[k]
        shipped = c.paper_bps[k] / c.lena_bps[k]
        lines.append(
            f"| `{c.case.name}` | {c.case.n_devices} |"
            f" {c.snr_db[k].min():.1f} to {c.snr_db[k].max():.1f} |"
            f" {c.ns3_bps[k].min() / 1e6:.2f} to {c.ns3_bps[k].max() / 1e6:.2f} |"
            f" {c.ratio[k].min():.2f} to {c.ratio[k].max():.2f} |"
            f" {geometric_mean(c.ratio[k]):.3f} |"
            f" {geometric_mean(before):.2f} ({before.min():.2f} to {before.max():.2f}) |"
            f" {geometric_mean(shipped):.2f} ({shipped.min():.2f} to {shipped.max():.2f}) |"
        )
    return "\n".join(lines)


def power_control_table(items: list[CaseComparison]) -> str:
    """The ``ul_pc_*`` cases: each device's SINR on its RBs, netfl against ns-3, and what
    netfl gave before issue 33 (P_CMAX over the band, whatever the allocation)."""
    lines = [
        "| case | devices (RBs each) | SINR on its RBs (dB) | ns-3, artefacts removed (Mbit/s) |"
        " netfl / ns-3: per device | geometric mean | before (fixed power per RB) / ns-3 |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in items:
        if c.fixed_bps is None:
            continue
        k = c.in_range
        before = c.fixed_bps[k] / c.ns3_bps[k]
        lines.append(
            f"| `{c.case.name}` | {c.case.n_devices} ({c.case.rbs_each}) |"
            f" {c.snr_db[k].min():.1f} to {c.snr_db[k].max():.1f} |"
            f" {c.ns3_bps[k].min() / 1e6:.2f} to {c.ns3_bps[k].max() / 1e6:.2f} |"
            f" {c.ratio[k].min():.2f} to {c.ratio[k].max():.2f} |"
            f" {geometric_mean(c.ratio[k]):.3f} |"
            f" {geometric_mean(before):.2f} ({before.min():.2f} to {before.max():.2f}) |"
        )
    return "\n".join(lines)


def figure(items: list[CaseComparison], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
    markers = {1: "o", 5: "s", 20: "^"}
    for ax, direction in zip(axes, ("uplink", "downlink"), strict=True):
        for c in (c for c in items if c.case.direction == direction):
            marker = markers.get(c.case.n_devices, "D")
            label = c.case.name
            ax.scatter(c.snr_db, c.ratio, marker=marker, s=22, label=f"{label}: standard")
            ax.scatter(
                c.snr_db,
                c.paper_bps / c.ns3_bps,
                marker=marker,
                s=14,
                alpha=0.35,
                color="grey",
                label="_nolegend_",
            )
        ax.axhspan(0.8, 1.2, color="green", alpha=0.08)
        ax.axhline(1.0, color="black", lw=0.8)
        ax.axvspan(*SINR_RANGE_DB, color="blue", alpha=0.03)
        ax.set_xlabel("SINR (dB)")
        ax.set_title(direction)
        ax.set_yscale("log")
        ax.legend(fontsize=7, loc="upper right")
    axes[0].set_ylabel("netfl rate / ns-3 LENA rate (per device)")
    fig.suptitle(
        "netfl vs ns-3 LENA (artefacts removed); grey: netfl's previous default", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def multicell_medians() -> dict[str, tuple[float, float]]:
    """Median SINR (dB), ns-3 and netfl, per direction, from the committed multi-cell run."""
    with (RESULTS / "multicell_sinr.csv").open() as f:
        rows = list(csv.DictReader(f))
    out = {}
    for direction in ("uplink", "downlink"):
        mine = [r for r in rows if r["direction"] == direction]
        out[direction] = (
            float(np.median([float(r["sinr_ns3_db"]) for r in mine])),
            float(np.median([float(r["sinr_netfl_db"]) for r in mine])),
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figure", action="store_true")
    args = parser.parse_args()
    items = comparisons()
    print(table(items))
    print()
    print(power_control_table(items))
    if (RESULTS / "multicell_sinr.csv").exists():
        for direction, (ns3, netfl) in multicell_medians().items():
            print(f"multi-cell {direction}: median SINR ns-3 {ns3:.2f} dB, netfl {netfl:.2f} dB")
    if args.figure:
        figure(items, FIGURE)
        print(f"wrote {FIGURE}")


if __name__ == "__main__":
    main()
