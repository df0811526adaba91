"""Small versions of the system-aware reproductions (docs/reproductions.md).

Each runs the shipped scenario with fewer rounds and seeds, timing only, and asserts the
ordering the paper reports, seed by seed (the runs of one seed share every draw but the
strategy's: common random numbers):

- RBCS-F, Huang et al. 2021 Sec. 6.1.2 (Figs. 2-3): cumulative time FedCS(3) <
  RBCS-F (large V) < RBCS-F (small V) < random; the virtual-queue backlogs flatten, and a
  larger V converges more slowly to a higher backlog;
- MAB-CS, Yoshida et al. 2020 Sec. IV-C (Figs. 1-2): without fluctuation the MAB-CS
  variants are no faster than FedCS; at eta = 1.99 Element-wise MAB-CS is faster.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import yaml

import netfl
from netfl.scenario import load_scenario
from netfl.sweep import load_sweep, run_sweep
from netfl.trace import metrics, plots
from netfl.world import World, build_world

ROOT = Path(__file__).resolve().parents[1]
RBCS_F_SEEDS = (0, 1)
MAB_CS_SEEDS = (0, 1, 2)
FEDCS3 = [
    "selection.name=fedcs_deadline",
    "selection.params={deadline_s: 3}",
    "fl.clients_per_round=40",  # FedCS(3) takes every client under the deadline
]
RANDOM = ["selection.name=random", "selection.params={}"]


def _run(scenario: str, overrides: list[str]) -> World:
    world = build_world(load_scenario(scenario, overrides))
    world.env.run(until=world.env.process(world.server.run()))
    return world


def _elapsed_s(world: World) -> float:
    return world.server.records[-1].t_end_s


def _mean_backlog(world: World) -> np.ndarray:
    frame = world.server.score_log.to_arrow().to_pandas()
    return metrics.backlogs(frame).mean(axis=1).to_numpy()


# -- RBCS-F's numerical simulation -----------------------------------------------------------

RBCS_F = {
    "FedCS(3)": FEDCS3,
    "V=1000": ["selection.params.V=1000"],
    "V=10": ["selection.params.V=10"],
    "V=1": ["selection.params.V=1"],
    "random": RANDOM,
}


@pytest.fixture(scope="module")
def rbcs_f_runs() -> dict[tuple[str, int], World]:
    """300 of the scenario's 500 rounds, two seeds (about 2 s per seed)."""
    return {
        (name, seed): _run("rbcs_f_numerical", [*overrides, "fl.rounds=300", f"seed={seed}"])
        for seed in RBCS_F_SEEDS
        for name, overrides in RBCS_F.items()
    }


@pytest.mark.parametrize("seed", RBCS_F_SEEDS)
def test_rbcs_f_cumulative_time_ordering(rbcs_f_runs, seed):
    """Fig. 3: FedCS(3) < RBCS-F(large V) < RBCS-F(small V) < random, same rounds."""
    elapsed = [_elapsed_s(rbcs_f_runs[name, seed]) for name in RBCS_F]
    assert elapsed == sorted(elapsed), dict(zip(RBCS_F, elapsed, strict=True))
    assert len(set(elapsed)) == len(elapsed)


@pytest.mark.parametrize("seed", RBCS_F_SEEDS)
def test_rbcs_f_backlogs_flatten_and_larger_v_converges_slower_and_higher(rbcs_f_runs, seed):
    """Fig. 2: the queues stop growing; a larger V reaches a higher level, later."""
    mean = {v: _mean_backlog(rbcs_f_runs[v, seed]) for v in ("V=1", "V=10", "V=1000")}
    slope = {v: np.polyfit(np.arange(100), z[-100:], 1)[0] for v, z in mean.items()}
    # Flat: a client left out of every round would grow by beta = 0.15 a round.
    assert abs(slope["V=1"]) < 0.02 and abs(slope["V=10"]) < 0.02
    # Not the paper's (its curves all flatten within 500 rounds): with this scenario's times,
    # P4's V max tau_bar outweighs the backlogs only after about V / beta rounds (6,700 at
    # V = 1000; docs/reproductions.md, "What does not"), so V = 1000 still rises here.
    assert slope["V=1000"] > 0.05
    assert mean["V=1"][-1] < mean["V=10"][-1] < mean["V=1000"][-1]

    def settled(z: np.ndarray) -> int:  # first round at 90% of the final level
        return int(np.argmax(z >= 0.9 * z[-100:].mean()))

    assert settled(mean["V=1"]) < settled(mean["V=10"])


def test_fedcs3_deadline_admits_about_m_clients(rbcs_f_runs):
    """003 footnote 5: the 3 s deadline makes FedCS(3) select about m = 8 clients."""
    counts = [
        len(r.selected) for s in RBCS_F_SEEDS for r in rbcs_f_runs["FedCS(3)", s].server.records
    ]
    assert 6 <= np.mean(counts) <= 10


# -- MAB-CS under resource fluctuation ---------------------------------------------------------


def _mab_cs(strategy: str, eta: float | None, seed: int) -> float:
    value = "null" if eta is None else eta
    overrides = [
        f"selection.name={strategy}",
        f"radio.fluctuation_eta={value}",
        f"devices.groups.0.compute_fluctuation_eta={value}",
        "fl.rounds=200",
        f"seed={seed}",
    ]
    return _elapsed_s(_run("mab_cs_eta", overrides))


@pytest.fixture(scope="module")
def mab_cs_times() -> dict[tuple[str, float | None, int], float]:
    """Elapsed time of 200 rounds (about 0.3 s a run)."""
    cases = [
        ("fedcs", None),
        ("mab_cs_naive", None),
        ("mab_cs_elementwise", None),
        ("fedcs", 1.99),
        ("mab_cs_elementwise", 1.99),
    ]
    return {(s, eta, seed): _mab_cs(s, eta, seed) for s, eta in cases for seed in MAB_CS_SEEDS}


@pytest.mark.parametrize("seed", MAB_CS_SEEDS)
def test_mab_cs_without_fluctuation_is_no_faster_than_fedcs(mab_cs_times, seed):
    """Fig. 1(a): with stable resources exploration only costs time; Naive MAB-CS most.

    002 Sec. IV-C: "when the resources did not fluctuate, the training time was longer than
    that of FedCS for all three algorithms. Among the three algorithms, the increase in
    training time by Naive MAB-CS was the largest." (Seeds 0-2, 200 rounds: Element-wise
    is 170-360 s slower than FedCS, Naive 6,000-46,000 s.)
    """
    fedcs = mab_cs_times["fedcs", None, seed]
    elementwise = mab_cs_times["mab_cs_elementwise", None, seed]
    assert elementwise > fedcs
    assert mab_cs_times["mab_cs_naive", None, seed] > elementwise


@pytest.mark.parametrize("seed", MAB_CS_SEEDS)
def test_elementwise_mab_cs_is_faster_under_large_fluctuation(mab_cs_times, seed):
    """Fig. 1(b): at eta = 1.99, Element-wise MAB-CS takes less time than FedCS."""
    assert mab_cs_times["mab_cs_elementwise", 1.99, seed] < mab_cs_times["fedcs", 1.99, seed]


# -- the headline comparison ---------------------------------------------------------------------

HEADLINE = {
    "random": RANDOM,
    "fedcs": ["selection.name=fedcs", "selection.params={}"],
    "mab_cs_elementwise": ["selection.name=mab_cs_elementwise", "selection.params={beta: 10}"],
    "rbcs_f": [],
}


@pytest.mark.parametrize("seed", [0, 1])
def test_compare_selection_system_aware_strategies_are_faster_than_random(seed):
    """Timing only, 40 rounds: FedCS and RBCS-F finish before random.

    No paper reports this setting (docs/reproductions.md, "Headline comparison"); both
    prefer clients with short reported exchange times, which random does not. Element-wise
    MAB-CS learns its estimates from its own rounds: on the calibrated 57-cell network 40
    rounds are not enough for it to beat random in every seed (seeds 0-3: slower in 0 and
    2), so it is not asserted here; the full-length sweep is in docs/reproductions.md.
    """
    common = [
        "learning=none",
        "devices.groups.0.n_samples=36",
        "fl.rounds=40",
        "fl.time_budget_s=null",
    ]
    elapsed = {
        name: _elapsed_s(_run("compare_selection", [*overrides, *common, f"seed={seed}"]))
        for name, overrides in HEADLINE.items()
    }
    assert all(elapsed[name] < elapsed["random"] for name in ("fedcs", "rbcs_f")), elapsed


def test_compare_selection_trains_on_digits_within_its_time_budget():
    world = _run("compare_selection", ["fl.time_budget_s=120"])
    records = world.server.records
    assert records[-1].t_end_s <= 120.0
    assert all(np.isfinite(r.accuracy) and 0.0 <= r.accuracy <= 1.0 for r in records)
    assert len(world.server.score_log) > 0  # RBCS-F's backlogs and estimates


@pytest.mark.parametrize(
    ("sweep_file", "n_runs", "strategies"),
    [
        ("rbcs_f_numerical_sweep.yaml", 30, {"rbcs_f", "random", "fedcs_deadline"}),
        (
            "mab_cs_eta_sweep.yaml",
            160,
            {"fedcs", "fedcs_extended", "mab_cs_naive", "mab_cs_elementwise"},
        ),
        ("compare_selection_sweep.yaml", 32, {"random", "fedcs", "mab_cs_elementwise", "rbcs_f"}),
    ],
)
def test_example_sweeps_expand(sweep_file, n_runs, strategies):
    sweep = load_sweep(ROOT / "examples" / sweep_file)
    assert len(sweep.runs) == n_runs
    assert {run.scenario.selection.name for run in sweep.runs} == strategies


# -- the figure script ---------------------------------------------------------------------------


def _figures_module():
    path = ROOT / "docs" / "figures" / "system_figures.py"
    spec = importlib.util.spec_from_file_location("system_figures", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _small_sweep(folder: Path, scenario: str, body: dict) -> Path:
    """Run a sweep over seeds 1 and 2 on a shipped scenario; return its directory."""
    path = folder / "sweep.yaml"
    base = str(ROOT / "scenarios" / f"{scenario}.yaml")
    path.write_text(yaml.safe_dump({"base": base, **body, "seeds": [1, 2]}))
    return run_sweep(load_sweep(path), folder / "out", progress="quiet").sweep_dir


@pytest.fixture(scope="module")
def small_rbcs_f_sweep(tmp_path_factory) -> Path:
    selections = [
        {"name": "rbcs_f", "params": {"V": 1, "m": 8}},
        {"name": "rbcs_f", "params": {"V": 100, "m": 8}},
        {"name": "random"},
    ]
    body = {"overrides": {"fl.rounds": 20}, "zip": {"selection": selections}}
    return _small_sweep(tmp_path_factory.mktemp("rbcs_f_sweep"), "rbcs_f_numerical", body)


def test_backlog_means_draws_each_rbcs_f_configuration_and_skips_random(small_rbcs_f_sweep):
    runs = netfl.load_runs(small_rbcs_f_sweep)
    ax = plots.backlog_means(runs).axes[0]
    assert len(ax.lines) == 2  # the two RBCS-F configurations; random records no backlog
    first = [r for r in runs if r.scenario_dict["selection"]["params"].get("V") == 1]
    expected = np.mean([metrics.backlogs(r.strategy).mean(axis=1) for r in first], axis=0)
    line = next(line for line in ax.lines if "V=1," in str(line.get_label()))
    assert line.get_xdata().tolist() == list(range(1, 21))
    assert line.get_ydata() == pytest.approx(expected)


def test_figure_script_writes_the_rbcs_f_figures_and_table(small_rbcs_f_sweep, tmp_path):
    figures = _figures_module()
    figures.main(["rbcs_f", str(small_rbcs_f_sweep), "--out", str(tmp_path)])
    for name in ("rbcs_f_cumulative_time.png", "rbcs_f_backlogs.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
    table = (tmp_path / "rbcs_f_numerical.md").read_text().splitlines()
    assert table[0].startswith("| strategy | runs | total simulated time (s)")
    assert [row.split(" | ")[0] for row in table[2:]] == [
        "| RBCS-F (V=1)",
        "| RBCS-F (V=100)",
        "| random",
    ]


@pytest.fixture(scope="module")
def small_mab_cs_sweep(tmp_path_factory) -> Path:
    etas = [None, 1.99]
    body = {
        "overrides": {"fl.rounds": 5},
        "grid": {"selection": [{"name": "fedcs"}, {"name": "mab_cs_elementwise"}]},
        "zip": {"radio.fluctuation_eta": etas, "devices.groups.0.compute_fluctuation_eta": etas},
    }
    return _small_sweep(tmp_path_factory.mktemp("mab_cs_sweep"), "mab_cs_eta", body)


def test_mab_cs_differences_are_eq_12_paired_by_seed(small_mab_cs_sweep):
    """T_FedCS - T_* (002 eq. (12)) and its ratio to T_FedCS, per eta, paired by seed."""
    runs = netfl.load_runs(small_mab_cs_sweep)
    table = _figures_module().mab_cs_differences(runs).set_index("eta")
    assert table.index.tolist() == ["none", "1.99"]
    assert set(table["strategy"]) == {"Element-wise MAB-CS"}
    times = {
        (
            r.scenario_dict["selection"]["name"],
            r.scenario_dict["radio"]["fluctuation_eta"],
            r.scenario_dict["seed"],
        ): float(r.summary["sim_time_s"])
        for r in runs
    }
    for eta, label in ((None, "none"), (1.99, "1.99")):
        fedcs = np.array([times["fedcs", eta, s] for s in (1, 2)])
        other = np.array([times["mab_cs_elementwise", eta, s] for s in (1, 2)])
        row = table.loc[label]
        assert row["T_FedCS (s)"] == pytest.approx(fedcs.mean())
        assert row["T_FedCS - T_* (s)"] == pytest.approx(np.mean(fedcs - other))
        assert row["ratio"] == pytest.approx(np.mean((fedcs - other) / fedcs))
