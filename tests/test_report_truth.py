"""Reports and run directories that tell the truth (issue 18; issue 16 item 8.1)."""

from __future__ import annotations

import copy
import json
import math
import os
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection

import netfl
from netfl.cli import main
from netfl.config.base import INPUT_PATH
from netfl.map.layout import hex_layout, layout_from_config
from netfl.mobility.area import fold_with_shift
from netfl.scenario import PATH_KEYS, dump_scenario, load_scenario, scenario_from_data
from netfl.simulation import simulate
from netfl.sweep import load_sweep, run_sweep
from netfl.trace import compare, map_plot, metrics, plots, survival
from tests.analysis.conftest import TIMING
from tests.conftest import TINY
from tests.schema_keys import schema_keys


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


# -- issue 34 part 2: figures and tables that tell the truth ---------------------------------


def _fake_run(folder: Path, seed: int, ends_s: list[float], stop_s: float, **scenario) -> Path:
    """A run directory with the tables a figure reads: rounds ending at ``ends_s`` (each
    starting where the last ended), accuracies 0.1, 0.2, ..., and ``sim_time_s``."""
    run = folder / f"run-{seed}-{len(ends_s)}"
    run.mkdir(parents=True)
    data = {"name": "fake", "seed": seed, "fl": {"protocol": "fedavg"}, **scenario}
    (run / "scenario.resolved.yaml").write_text(yaml.safe_dump(data))
    (run / "summary.json").write_text(json.dumps({"status": "completed", "sim_time_s": stop_s}))
    starts = [0.0, *ends_s[:-1]]
    rounds = pd.DataFrame(
        {
            "round": range(len(ends_s)),
            "t_start_s": starts,
            "t_end_s": ends_s,
            "accuracy": [0.1 * (i + 1) for i in range(len(ends_s))],
            "n_completed": 1,
        }
    )
    rounds.to_parquet(run / "rounds.parquet")
    return run


BUDGET_S = 100.0
#: Three seeds that stop at different rounds in a 100 s budget (the last round cut at it).
SEED_ENDS = {1: [90.0, 100.0], 2: [10.0, 20.0, 30.0, 100.0], 3: [10.0, 20.0, 30.0, 40.0, 100.0]}


def test_the_cumulative_time_curve_never_decreases_and_its_band_stays_in_the_budget(tmp_path):
    runs = netfl.load_runs([_fake_run(tmp_path, s, e, BUDGET_S) for s, e in SEED_ENDS.items()])
    # Averaged over the seeds still running, round 2's mean (30 s, seeds 2 and 3) fell below
    # round 1's (70 s, all three), and round 1's 95% band (values 100, 20, 20) reached
    # 70 + 4.30 x 46.2 / sqrt(3) = 185 s in a 100 s budget.
    left = plots.round_times(runs).axes[0]
    curve = [line for line in left.lines if line.get_linestyle() in ("-", ":")]
    x = np.concatenate([line.get_xdata() for line in curve])
    y = np.concatenate([line.get_ydata() for line in curve])
    order = np.argsort(x, kind="stable")
    assert np.all(np.diff(y[order]) >= 0)
    # A stopped seed counts at its stop time: round 2 is (100 + 30 + 30) / 3.
    assert y[order][x[order] == 2][0] == pytest.approx(160 / 3)
    assert y[order][-1] == BUDGET_S
    # Solid while every seed reached the round (rounds 0-1), dotted from round 1 on.
    solid, dotted = curve
    assert solid.get_xdata().tolist() == [0, 1] and dotted.get_linestyle() == ":"
    (band,) = [c for c in left.collections if isinstance(c, PolyCollection)]
    vertices = np.concatenate([path.vertices for path in band.get_paths()])
    assert vertices[:, 1].min() >= 0.0 and vertices[:, 1].max() <= BUDGET_S
    assert "stop time" in left.figure.get_supxlabel()


@given(
    st.lists(
        st.tuples(
            st.lists(st.floats(0.01, 50.0), min_size=1, max_size=8),
            st.floats(0.0, 100.0),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_carried_round_ends_never_decrease_and_stay_within_the_stops(seeds):
    ends = [np.cumsum(steps) for steps, _ in seeds]
    stops = [max(float(e[-1]), extra) for e, (_, extra) in zip(ends, seeds, strict=True)]
    matrix, reached = metrics.carried_round_ends(ends, stops)
    assert np.all(np.diff(matrix, axis=1) >= 0)
    assert np.all(np.diff(matrix.mean(axis=0)) >= -1e-9 * max(stops))
    assert np.all(np.diff(np.median(matrix, axis=0)) >= 0)
    assert matrix.max() <= max(stops)
    assert reached.tolist() == [sum(len(e) > r for e in ends) for r in range(matrix.shape[1])]


def test_staleness_is_not_drawn_for_synchronous_runs_nor_beside_asynchronous_ones(tmp_path):
    sync = [_fake_run(tmp_path / "a", s, [1.0, 2.0], 2.0) for s in (1, 2)]
    fedbuff = {"fl": {"protocol": "fedbuff"}}
    asynchronous = [_fake_run(tmp_path / "b", s, [1.0, 2.0], 2.0, **fedbuff) for s in (1, 2)]
    for run in asynchronous:  # two updates a version, one of them a version stale
        frame = pd.read_parquet(run / "rounds.parquet")
        frame["staleness"] = [[0, 1], [1, 0]]
        frame.to_parquet(run / "rounds.parquet")
    only_sync = plots.staleness_histogram(netfl.load_runs(sync))
    assert not only_sync.axes[0].containers  # no bar: a message
    assert "synchronous" in " ".join(t.get_text() for t in only_sync.axes[0].texts)
    mixed = plots.staleness_histogram(netfl.load_runs([*sync, *asynchronous]))
    (bars,) = mixed.axes[0].containers  # the asynchronous configuration's alone
    assert bars.get_label().startswith("fl.protocol=fedbuff")
    assert [p.get_height() for p in bars.patches] == [0.5, 0.5]
    assert "fl.protocol=fedavg" in mixed.get_supxlabel()


def test_km_median_is_where_the_drawn_curve_meets_one_half():
    # 4 seeds: reached at 100 and 233 s (S = 1/2 from 233 s), at 382 s, one censored at 900 s.
    # statsmodels' strict rule said 382 s; the curve meets 0.5 at 233 s.
    table = pd.DataFrame(
        {
            "configuration": "random",
            "seed": range(4),
            "time_to_target_s": [100.0, 233.0, 382.0, math.nan],
            "sim_time_s": 900.0,
        }
    )
    (curve,) = survival.reach_curves(table)
    assert curve.median_s == 233.0
    assert _crossing(survival.reached_fraction(table)) == [233.0]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 40), st.booleans()),  # (time in 10 s steps, reached)
        min_size=1,
        max_size=9,
    )
)
def test_km_median_equals_the_curves_half_crossing_for_any_runs(runs):
    times = np.array([10.0 * t for t, _ in runs])
    reached = np.array([r for _, r in runs])
    table = pd.DataFrame(
        {
            "configuration": "a",
            "seed": range(len(runs)),
            "time_to_target_s": np.where(reached, times, np.nan),
            "sim_time_s": times,
        }
    )
    (curve,) = survival.reach_curves(table)
    fig = survival.reached_fraction(table)
    step = next((line for line in fig.axes[0].lines if line.get_gid() == "km_curve"), None)
    if step is None:  # nobody reached the target: no curve, no median
        assert not reached.any() and math.isnan(curve.median_s)
        return
    x, y = step.get_data()
    met = x[np.asarray(y) >= 0.5 - 1e-9]
    assert (met[0] if len(met) else math.nan) == pytest.approx(curve.median_s, nan_ok=True)
    marks = _crossing(fig)
    assert marks == ([] if math.isnan(curve.median_s) else [curve.median_s])


def _crossing(fig) -> list[float]:
    return [
        float(line.get_xdata()[0]) for line in fig.axes[0].lines if line.get_gid() == "km_median"
    ]


def test_bands_of_fewer_than_three_seeds_are_not_drawn_and_no_label_is_clipped():
    rows = [("a", s, 100.0 + 10 * s, 900.0) for s in range(2)]
    long = "selection.name=rbcs_f, selection.params.V=10, selection.params.beta=0.1"
    rows += [(long, s, 120.0 + 10 * s, 900.0) for s in range(3)]
    table = pd.DataFrame(rows, columns=["configuration", "seed", "time_to_target_s", "sim_time_s"])
    fig = survival.reached_fraction(table)
    assert sum(isinstance(c, PolyCollection) for c in fig.axes[0].collections) == 1  # b's only
    for metric in compare.METRICS:
        if metric not in table:
            table[metric] = 0.5
    table["time_to_target_s"] = [100.0, 110.0, 120.0, 130.0, 140.0]
    bars = plots.time_to_accuracy_bars(compare.by_configuration(table))
    texts = [t.get_text() for t in bars.axes[0].texts]
    assert texts == ["2/2 reached (no CI)", "3/3 reached"]
    canvas = FigureCanvasAgg(bars)  # lay the figure out: every label must lie inside it
    canvas.draw()
    renderer = canvas.get_renderer()
    ax = bars.axes[0]
    for text in (ax.xaxis.label, bars._supxlabel, ax.title, *ax.texts):
        extent = text.get_window_extent(renderer)
        assert bars.bbox.x0 <= extent.x0 and extent.x1 <= bars.bbox.x1, text.get_text()
        assert bars.bbox.y0 <= extent.y0 and extent.y1 <= bars.bbox.y1, text.get_text()


def test_the_baseline_is_named_by_what_it_leaves_unset(tmp_path):
    plain = _fake_run(tmp_path, 1, [1.0], 1.0, selection={"name": "random"})
    weighted = {"selection": {"name": "random", "params": {"weighted": True}}}
    other = _fake_run(tmp_path, 2, [1.0], 1.0, **weighted)
    labels = netfl.load_runs([plain, other]).configuration().tolist()
    assert labels == ["selection.params.weighted unset", "selection.params.weighted=True"]
    alike = netfl.load_runs(
        [plain, _fake_run(tmp_path, 3, [1.0], 1.0, selection={"name": "random"})]
    )
    assert set(alike.configuration()) == {"fake"}  # the scenario's name


def test_show_renders_markdown_for_the_terminal(capsys):
    assert main(["show", "rbcs_f"]) == 0
    out = capsys.readouterr().out
    assert "||theta*||" in out and "\\|" not in out
    assert "|---|" not in out and "``" not in out and "## " not in out
    assert main(["show", "rbcs_f", "--markdown"]) == 0
    assert "\\|\\|theta*\\|\\|" in capsys.readouterr().out


def test_a_sweep_over_a_scalar_key_groups_by_the_key_it_set(tmp_path):
    base = copy.deepcopy(TIMING)
    sweep = {
        "base": "base.yaml",
        "grid": {"devices.groups.0.compute_sps": [20, 80], "devices.groups.0.availability": [0.5]},
        "seeds": [1],
    }
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    sweep_dir = run_sweep(load_sweep(tmp_path / "sweep.yaml"), tmp_path / "out", progress="quiet")
    runs = netfl.load_runs(sweep_dir.sweep_dir)
    key = "devices.groups.0.compute_sps"
    assert key in runs.varying
    assert f"{key}.value" not in runs.rounds.columns
    last_end = runs.rounds.groupby(key)["t_end_s"].max()
    assert sorted(last_end.index) == [20, 80]
    assert runs.params["devices.groups.0.availability"].tolist() == [0.5, 0.5]


def test_scenario_paths_are_taken_from_the_scenario_folder(tmp_path, monkeypatch, capsys):
    study = tmp_path / "study"
    (study / "traces").mkdir(parents=True)
    trace = "time_s,device,x_m,y_m\n0,0,10,10\n100,0,50,10\n0,1,-20,5\n100,1,-20,60\n"
    (study / "traces" / "cars.csv").write_text(trace)
    data = {
        "name": "paths",
        "cell": {"sites": 1, "sectors": 1, "radius_m": 300, "indoor_fraction": 0},
        "radio": {"model": "lte", "channel_model": "umi_nlos", "carrier_frequency_hz": 2.5e9},
        "devices": {
            "groups": [
                {
                    "name": "cars",
                    "count": 2,
                    "compute_sps": 50,
                    "n_samples": 50,
                    "mobility": {"model": "trajectory", "file": "traces/cars.csv"},
                }
            ]
        },
        "fl": {"rounds": 1, "clients_per_round": 2, "model_size_bits": 1.0e6},
        "learning": "none",
    }
    (study / "scenario.yaml").write_text(yaml.safe_dump(data))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    scenario = load_scenario("../study/scenario.yaml")
    assert scenario.devices.groups[0].mobility.file == str(study / "traces" / "cars.csv")
    assert main(["validate", "../study/scenario.yaml"]) == 0
    # The resolved scenario reads the same file from anywhere.
    text = dump_scenario(scenario)
    (tmp_path / "resolved.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    assert dump_scenario(load_scenario("resolved.yaml")) == text
    # --set: from the working directory, as the shell completes it.
    monkeypatch.chdir(study)
    moved = load_scenario(
        "scenario.yaml", ["devices.groups.0.mobility.file=traces/../traces/cars.csv"]
    )
    assert moved.devices.groups[0].mobility.file == str(study / "traces" / "cars.csv")
    monkeypatch.chdir(elsewhere)
    assert main(["validate", "../study/scenario.yaml", "--set",
                 "devices.groups.0.mobility.file=traces/cars.csv"]) == 2  # fmt: skip
    assert str(elsewhere / "traces" / "cars.csv") in capsys.readouterr().err
    # A built-in scenario has no folder of the user's: the working directory.
    femnist = load_scenario("gpfl_femnist", check_registry=False)
    assert femnist.learning.data_root == str(elsewhere / "data" / "femnist")
    # A sweep's values: from the sweep file's folder.
    sweep = {
        "base": "../study/scenario.yaml",
        "grid": {"devices.groups.0.mobility.file": ["t.csv"]},
    }
    (tmp_path / "sweeps").mkdir()
    (tmp_path / "sweeps" / "s.yaml").write_text(yaml.safe_dump(sweep))
    (tmp_path / "sweeps" / "t.csv").write_text(trace)
    (run,) = load_sweep(tmp_path / "sweeps" / "s.yaml").runs
    assert run.scenario.devices.groups[0].mobility.file == str(tmp_path / "sweeps" / "t.csv")


def test_every_input_path_key_is_resolved():
    """The schema's file and folder keys (INPUT_PATH) are the ones PATH_KEYS resolves."""
    marked = {
        tuple("*" if isinstance(p, int) else p for p in key.path)
        for key in schema_keys()
        if (key.field.json_schema_extra or {}) == INPUT_PATH
    }
    assert marked == set(PATH_KEYS)


@pytest.fixture(scope="module")
def moving_run(tmp_path_factory) -> Path:
    """Six cars on a wrap-around road of the default 57-cell network, positions every 1 s."""
    data = {
        "name": "moving",
        "seed": 2,
        "cell": {"device_sites": "all"},
        "radio": {"model": "lte", "handover": {"time_to_trigger_s": 0.256}},
        "devices": {
            "groups": [
                {
                    "name": "cars",
                    "count": 6,
                    "compute_sps": 50,
                    "n_samples": 50,
                    "mobility": {
                        "model": "constant_velocity",
                        "start_m": [0, 50],
                        "heading_deg": 0,
                        "speed_mps": 20,
                        "two_way": True,
                        "at_edge": "wrap",
                    },
                }
            ]
        },
        "fl": {"rounds": 6, "clients_per_round": 3, "model_size_bits": 2.0e6},
        "learning": "none",
        "output": {"trajectory_every_s": 1.0},
    }
    out = tmp_path_factory.mktemp("moving") / "run"
    return simulate(scenario_from_data(data), out).run_dir


def test_the_layout_draws_sites_sectors_cell_ids_and_handovers(moving_run):
    run = netfl.load_run(moving_run)
    fig = plots.layout(run)
    ax = fig.axes[0]

    def by_gid(gid):
        artists = (*ax.lines, *ax.patches, *ax.texts, *ax.collections)
        return [a for a in artists if a.get_gid() == gid]

    (sites,) = by_gid("site")
    grid = layout_from_config(run.scenario.cell)
    assert np.array_equal(np.column_stack(sites.get_data()), grid.site_xy_m)
    boundaries = by_gid("sector_boundary")
    assert len(boundaries) == grid.n_cells == 57
    # Sector 0 of the centre site: the rhombus site, corners at 330, 30 and 90 degrees.
    corners = boundaries[0].get_xy()[:4]
    radius = grid.site_radius_m
    angles = np.radians([-30.0, 30.0, 90.0])
    expected = [(0.0, 0.0), *zip(radius * np.cos(angles), radius * np.sin(angles), strict=True)]
    assert corners == pytest.approx(np.array(expected))
    assert [t.get_text() for t in by_gid("cell_id")] == [str(c) for c in range(57)]
    handovers = run.timeline[run.timeline["kind"] == "handover"]
    assert len(handovers) > 0
    (marks,) = by_gid("handover")
    assert len(marks.get_xdata()) == len(handovers)
    # Each stretch of a trajectory has the colour of the cell serving the device then.
    (lines,) = by_gid("trajectory")
    colours = map_plot.cell_colours(grid.n_cells)
    served = set(run.clients["cell"]) | set(handovers["cell"].astype(int))
    drawn = {tuple(np.round(c[:3], 6)) for c in lines.get_colors()}
    assert drawn <= {tuple(np.round(colours[c], 6)) for c in served}
    assert len(drawn) > 1
    # Distinct colours for the cells of one site and for neighbouring ids.
    assert len({tuple(c) for c in np.round(colours, 3)}) == 57


def test_the_report_states_the_achieved_rate_beside_the_nominal_one(moving_run, tmp_path):
    run = netfl.load_run(moving_run)
    out = tmp_path / "report"
    assert main(["report", str(moving_run), "--out", str(out)]) == 0
    raw = pd.read_csv(out / "summary.csv").set_index("quantity")["value"]
    ends = run.timeline[run.timeline["kind"] == "upload_end"]
    assert float(raw["rate_ul_achieved_mean_bps"]) == pytest.approx(
        (ends["bits"] / ends["duration_s"]).mean()
    )
    page = (out / "report.html").read_text()
    assert "rate_ul_mean_bps (nominal" in page and "rate_ul_achieved_mean_bps (achieved" in page
    assert "accuracy_last5" in page
    # A synchronous run: no staleness figure, and a line that says why.
    assert not (out / "staleness_histogram.png").exists()
    assert "Staleness: not drawn" in page
    assert (out / "layout.png").is_file()


def test_on_fixed_links_each_upload_achieves_its_clients_nominal_rate(
    write_scenario, tiny, tmp_path
):
    out = tmp_path / "run"
    assert main(["simulate", str(write_scenario(tiny)), "--out", str(out), "--quiet"]) == 0
    run = netfl.load_run(out)
    ends = run.timeline[run.timeline["kind"] == "upload_end"]
    nominal = run.clients.set_index("client")["rate_ul_bps"]
    assert run.upload_rates_bps().to_numpy() == pytest.approx(
        nominal.loc[ends["client"]].to_numpy()
    )


@pytest.fixture(scope="module")
def budget_comparison(tmp_path_factory) -> Path:
    """FedAvg and FedBuff on the tiny scenario with a 12 s budget, 3 seeds each: seeds stop
    after different numbers of rounds."""
    folder = tmp_path_factory.mktemp("budget")
    base = copy.deepcopy(TINY)
    base["fl"] = {"rounds": None, "time_budget_s": 12, "clients_per_round": 3}
    base["learning"]["target_accuracy"] = 0.3
    sweep = {
        "base": "base.yaml",
        "zip": {
            "fl.protocol": ["fedavg", "fedbuff"],
            "fl.concurrency": [None, 3],
            "fl.buffer_size": [None, 2],
        },
        "seeds": [1, 2, 3],
    }
    (folder / "base.yaml").write_text(yaml.safe_dump(base))
    (folder / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    return run_sweep(load_sweep(folder / "sweep.yaml"), folder / "out", progress="quiet").sweep_dir


def test_compare_writes_the_last_evaluations_and_draws_what_is_true(budget_comparison, tmp_path):
    out = tmp_path / "cmp"
    args = ["compare", str(budget_comparison), "--out", str(out), "--last-k", "3"]
    assert main(args) == 0
    table = pd.read_csv(out / "comparison.csv", index_col=0)
    runs = netfl.load_runs(budget_comparison)
    per = compare.per_run(runs, 0.3, last_k=3)
    for label in set(per["configuration"]):
        expected = [
            np.mean(r.rounds["accuracy"].dropna().to_numpy()[-3:])
            for r, c in zip(runs, runs.configuration(), strict=True)
            if c == label
        ]
        assert table.loc[label, "accuracy_last3_mean"] == pytest.approx(np.mean(expected))
        assert np.isfinite(table.loc[label, "accuracy_last3_sd_mean"])
    assert {"uplink_busy_fraction_mean", "rate_ul_achieved_mean_bps_mean"} <= set(table.columns)
    # Staleness: FedBuff's bars only.
    assert (out / "staleness_histogram.png").is_file()
    # Cumulative time: the seeds stopped after different rounds, and the curve never falls.
    assert len({len(r.rounds) for r in runs}) > 1
    left = plots.round_times(runs).axes[0]
    for colour in {line.get_color() for line in left.lines}:
        parts = [line for line in left.lines if line.get_color() == colour]
        y = np.concatenate([line.get_ydata() for line in parts])
        x = np.concatenate([line.get_xdata() for line in parts])
        assert np.all(np.diff(y[np.argsort(x, kind="stable")]) >= 0)
    for band in (c for c in left.collections if isinstance(c, PolyCollection)):
        vertices = np.concatenate([path.vertices for path in band.get_paths()])
        assert vertices[:, 1].min() >= 0.0 and vertices[:, 1].max() <= 12.0 + 1e-9
    page = (out / "report.html").read_text()
    assert "(all runs alike)" not in page


def test_a_synchronous_comparison_draws_no_staleness(budget_comparison, tmp_path):
    runs = netfl.load_runs(budget_comparison)
    fedavg = [str(r.path) for r in runs if r.scenario_dict["fl"]["protocol"] == "fedavg"]
    out = tmp_path / "cmp"
    assert main(["compare", *fedavg, "--out", str(out)]) == 0
    assert not (out / "staleness_histogram.png").exists()
    assert "Staleness: not drawn" in (out / "report.html").read_text()


@pytest.mark.parametrize(
    ("axial", "spacing_isd"),
    [((1, 0), math.sqrt(3) / 2), ((0, 1), math.sqrt(3) / 2), ((1, 1), 0.5), ((2, 1), None)],
)
def test_a_wrapped_road_folds_into_parallel_roads_at_the_documented_spacing(axial, spacing_isd):
    """docs/mobility.md: a road along axial (q, r) folds into parallel roads
    (sqrt(3)/2) ISD / sqrt(q^2 + qr + r^2) apart (checked here by folding it)."""
    q, r = axial
    isd = 200.0
    grid = hex_layout(19, 3, isd, wrap_around=True)
    direction = np.array([q + r / 2, r * math.sqrt(3) / 2])
    u = direction / np.linalg.norm(direction)
    s = np.linspace(0.0, 80 * isd, 200_001)
    folded, _ = fold_with_shift(grid, s[:, None] * u[None, :] + np.array([0.0, 37.0]), None)
    offsets = np.unique(np.round(folded @ np.array([-u[1], u[0]]), 3))
    gaps = np.diff(offsets)
    documented = (math.sqrt(3) / 2) * isd / math.sqrt(q * q + q * r + r * r)
    if spacing_isd is not None:
        assert documented == pytest.approx(spacing_isd * isd)
    assert gaps == pytest.approx(np.full(len(gaps), documented), abs=0.01)
    assert len(offsets) >= 3


def test_compare_cli_default_last_k_is_the_libraries():
    from netfl.commands import analysis

    assert analysis.LAST_K == compare.LAST_K
    with pytest.raises(SystemExit) as refused:  # the parser refuses it, like --target 90
        main(["compare", "nothing-here", "--last-k", "0"])
    assert refused.value.code == 2
