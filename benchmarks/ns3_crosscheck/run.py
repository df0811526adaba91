"""Produce the committed ns-3 results (needs ``pip install -e ".[ns3]"``; minutes per case).

``python -m benchmarks.ns3_crosscheck.run [--cases ul_1 dl_5 ...] [--modes lena corrected]
[--work DIR]`` runs every single-cell case of :data:`~benchmarks.ns3_crosscheck.cases.CASES`
in ns-3 LENA, one process per case and mode (kept in ``DIR``; an interrupted batch resumes,
``--cases`` reruns those, and the cases not in ``DIR`` keep their committed rows), and
writes ``results/single_cell.csv`` (one row per device, case and mode) and
``results/cases.json`` (the descriptions). ``--mi`` writes
``results/lena_mi_thresholds.csv`` (the SINR at which each MCS reaches a TB error rate of
0.1 under LENA's MI error model, the data the implementation losses of
:mod:`channel_models.lte` are fitted to); ``--multicell`` runs
:mod:`benchmarks.ns3_crosscheck.multicell`. Nothing here runs in CI: the fast test
(``tests/test_ns3_crosscheck.py``) reads the committed files.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.ns3_crosscheck import lena
from benchmarks.ns3_crosscheck.cases import CASES, RESULTS, save_cases

MODES = ("lena", "corrected")


def run_cases(names: list[str] | None, modes: list[str], work: Path) -> None:
    """Run the cases (one process per case and mode) into ``work`` -- a run whose CSV is
    already there for the same description is kept, so an interrupted batch resumes --
    then gather every case of ``cases.json`` found there into ``results/single_cell.csv``."""
    work.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        if names is not None and case.name not in names:
            continue
        spec = work / f"{case.name}.json"
        text = json.dumps(case.to_json())
        fresh = not spec.exists() or spec.read_text() != text
        spec.write_text(text)
        for mode in modes:
            target = work / f"{case.name}_{mode}.csv"
            if target.exists() and not fresh and names is None:
                continue
            print(f"{case.name} {mode} ...", flush=True)
            traces = work / f"{case.name}_{mode}"
            module = "benchmarks.ns3_crosscheck.lena"
            subprocess.run([sys.executable, "-m", module, str(spec), mode, str(traces)], check=True)
            rows = [{**row, "mode": mode} for row in lena.per_device(case, traces)]
            with target.open("w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
    committed: list[dict[str, str]] = []
    if (RESULTS / "single_cell.csv").exists():
        with (RESULTS / "single_cell.csv").open() as f:
            committed = list(csv.DictReader(f))
    rows = []
    for case in CASES:
        for mode in MODES:
            target = work / f"{case.name}_{mode}.csv"
            if target.exists():
                with target.open() as f:
                    rows.extend(csv.DictReader(f))
                continue
            # A case not run here keeps its committed rows (``--cases`` ran others).
            kept = [r for r in committed if r["case"] == case.name and r["mode"] == mode]
            if not kept:
                raise SystemExit(f"{target} missing: run the case first")
            rows.extend(kept)
    RESULTS.mkdir(exist_ok=True)
    fields = list(dict.fromkeys(key for row in rows for key in row))  # columns added later
    with (RESULTS / "single_cell.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows(rows)
    save_cases(CASES, RESULTS / "cases.json")


def mi_thresholds() -> None:
    """SINR (dB) at a TB error rate of 0.1 per MCS, LENA's MI error model, flat SINR."""
    import cppyy
    from ns import ns  # noqa: F401  (loads the LTE module into cppyy)

    from benchmarks.ns3_crosscheck.lena import HERE

    cppyy.cppdef((HERE / "lena_helpers.hpp").read_text())
    rows = []
    for direction in ("downlink", "uplink"):
        for n_rb in (10, 50):
            for mcs in range(29):
                lo, hi = -20.0, 40.0
                for _ in range(40):
                    mid = 0.5 * (lo + hi)
                    tbler = cppyy.gbl.xc.Tbler(mid, n_rb, mcs, direction == "uplink")
                    lo, hi = (mid, hi) if tbler > 0.1 else (lo, mid)
                rows.append(
                    {"direction": direction, "n_rb": n_rb, "mcs": mcs, "sinr_db": round(hi, 3)}
                )
    with (RESULTS / "lena_mi_thresholds.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", default=None)
    parser.add_argument("--modes", nargs="*", default=list(MODES), choices=MODES)
    parser.add_argument("--mi", action="store_true")
    parser.add_argument("--multicell", action="store_true")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ns3_crosscheck")
    args = parser.parse_args()
    if args.mi:
        mi_thresholds()
    elif args.multicell:
        from benchmarks.ns3_crosscheck import multicell

        multicell.main()
    else:
        run_cases(args.cases, args.modes, args.work)


if __name__ == "__main__":
    main()
