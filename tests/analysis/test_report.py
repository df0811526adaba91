"""netfl report / netfl compare end to end: files, embedded figures, statistics, warnings."""

from __future__ import annotations

import base64
import re
import shutil

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import netfl
from netfl.cli import main


def test_report_writes_a_self_contained_page(digits_run, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["report", str(digits_run), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out / "report.html")
    page = (out / "report.html").read_text()
    pngs = sorted(out.glob("*.png"))
    assert {"accuracy_vs_time.png", "gantt.png", "selection_heatmap.png"} <= {p.name for p in pngs}
    embedded = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(embedded) == len(pngs)
    assert {base64.b64decode(e) for e in embedded} == {p.read_bytes() for p in pngs}
    assert 'src="http' not in page  # nothing to fetch
    summary = pd.read_csv(out / "summary.csv").set_index("quantity")["value"]
    assert summary["status"] == "completed"
    assert float(summary["final_accuracy"]) == pytest.approx(
        netfl.load_run(digits_run).summary["final_accuracy"], rel=1e-5
    )


def test_report_goes_into_the_run_and_is_never_overwritten_silently(timing_run, tmp_path, capsys):
    run = shutil.copytree(timing_run, tmp_path / "run")
    assert main(["report", str(run)]) == 0
    assert (run / "report" / "report.html").is_file()
    assert main(["report", str(run)]) == 2
    assert "is not empty; choose another --out, or pass --force" in capsys.readouterr().err
    assert main(["report", str(run), "--force"]) == 0
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    assert main(["report", str(run), "--out", str(other), "--force"]) == 2
    assert "not a netfl report directory (no report.html)" in capsys.readouterr().err
    assert (other / "notes.txt").read_text() == "keep me"


def test_report_of_something_else_is_bad_input(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{tmp_path}: not a netfl run directory" in err


def test_compare_groups_seeds_with_t_intervals(digits_sweep, tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["compare", str(digits_sweep), "--out", str(out)]) == 0
    table = pd.read_csv(out / "comparison.csv", index_col=0)
    runs = pd.read_csv(out / "runs.csv")
    assert table["n"].tolist() == [2, 2]
    for label, group in runs.groupby("configuration"):
        x = group["sim_time_s"].to_numpy()
        half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
        assert table.loc[label, "sim_time_s_mean"] == pytest.approx(x.mean())
        assert table.loc[label, "sim_time_s_ci95"] == pytest.approx(half)
        assert table.loc[label, "reached"] == f"{group['time_to_target_s'].notna().sum()}/2"
    paired = pd.read_csv(out / "paired.csv")
    assert paired["common_random_numbers"].all()
    assert (paired["n_pairs"][paired["metric"] == "sim_time_s"] == 2).all()
    page = (out / "report.html").read_text()
    assert "common random numbers" in page
    assert "warning" not in capsys.readouterr().err


def test_compare_warns_about_different_datasets(digits_run, timing_run, tmp_path, capsys):
    code = main(["compare", str(digits_run), str(timing_run), "--out", str(tmp_path / "c")])
    assert code == 0
    err = capsys.readouterr().err
    assert "warning: the runs use different datasets" in err
    assert (
        "warning: the runs use different datasets" in (tmp_path / "c" / "report.html").read_text()
    )


def test_compare_names_a_corrupted_table(timing_run, tmp_path, capsys):
    run = shutil.copytree(timing_run, tmp_path / "run")
    (run / "clients.parquet").write_bytes(b"\x00" * 64)
    assert main(["compare", str(run), "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{run / 'clients.parquet'}: not a readable Parquet file" in err
