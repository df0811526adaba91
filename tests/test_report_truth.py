"""Reports and run directories that tell the truth (issue 18; issue 16 item 8.1)."""

from __future__ import annotations

import os
import stat

import pandas as pd

from netfl.cli import main


def test_run_files_respect_the_umask_and_the_report_reads_well(write_scenario, tiny, tmp_path):
    old = os.umask(0o022)
    try:
        out = tmp_path / "run"
        assert main(["simulate", str(write_scenario(tiny)), "--out", str(out), "--quiet"]) == 0
        assert main(["report", str(out)]) == 0
    finally:
        os.umask(old)
    # mkstemp's 0600 used to stick to every file of the run directory.
    for name in ("summary.json", "rounds.parquet", "clients.parquet", "report/summary.csv"):
        mode = stat.S_IMODE((out / name).stat().st_mode)
        assert mode == 0o644, (name, oct(mode))
    # phases.csv: one header line that pandas reads as is.
    header = (out / "report" / "phases.csv").read_text().splitlines()[0]
    assert header.startswith("outcome,clients_count,")
    phases = pd.read_csv(out / "report" / "phases.csv")
    assert "compute_s_mean" in phases.columns
    # The page shows units and readable numbers; summary.csv keeps the full values.
    page = (out / "report" / "report.html").read_text()
    assert "Mbit/s" in page or "kbit/s" in page
    assert "e+06" not in page
    raw = pd.read_csv(out / "report" / "summary.csv").set_index("quantity")["value"]
    assert float(raw["rate_ul_mean_bps"]) > 1e3
    # The RB panel says why it is missing instead of blaming the radio model.
    assert "radio.record_rb_allocations is off" in page
