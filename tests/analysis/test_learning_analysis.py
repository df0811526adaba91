"""Loss fairness, global loss and participation, from a run directory and in figures."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import netfl
from netfl.cli import main
from netfl.errors import MissingDataError
from netfl.scenario import scenario_from_data
from netfl.simulation import simulate
from netfl.trace import learning_metrics, learning_plots
from netfl.trace.metrics import jain_index
from tests.analysis.conftest import LEARNING


@pytest.fixture(scope="module")
def fair_run(tmp_path_factory: pytest.TempPathFactory) -> netfl.Run:
    """Digits, 8 devices, 4 rounds, every device's training loss at each evaluation."""
    data = copy.deepcopy(LEARNING)
    data["learning"]["fairness_loss"] = "train"
    out = tmp_path_factory.mktemp("fair") / "run"
    simulate(scenario_from_data(data), out)
    return netfl.load_run(out)


def test_client_losses_global_loss_and_their_fairness(fair_run):
    losses = fair_run.client_losses()
    assert losses.shape == (4, 8) and list(losses.index) == [0, 1, 2, 3]
    assert np.isfinite(losses.to_numpy()).all() and (losses.to_numpy() > 0).all()
    sizes = fair_run.clients.sort_values("client")["n_samples"].to_numpy(float)
    # eq. (1) of 000: F(w) = sum_k p_k F_k(w), p_k = D_k / sum_j D_j
    expected = losses.to_numpy() @ (sizes / sizes.sum())
    assert fair_run.global_loss().to_numpy() == pytest.approx(expected)
    jain = fair_run.loss_fairness()
    assert jain.to_numpy() == pytest.approx([jain_index(row) for row in losses.to_numpy()])
    assert ((jain >= 1 / 8) & (jain <= 1)).all()


def test_weighted_loss_leaves_out_clients_without_a_loss():
    matrix = pd.DataFrame([[1.0, np.nan, 3.0]], columns=pd.Index([0, 1, 2], name="client"))
    # Client 1 has no loss: weights 1 and 3 of clients 0 and 2 are renormalised.
    assert learning_metrics.weighted_loss(matrix, [1, 5, 3]).iloc[0] == pytest.approx(2.5)


def test_participation(fair_run):
    distinct = fair_run.distinct_selected()
    assert list(distinct.index) == [0, 1, 2, 3]
    assert (np.diff(distinct.to_numpy()) >= 0).all() and distinct.iloc[0] == 3
    assert distinct.iloc[-1] == int((fair_run.clients["n_selected"] > 0).sum())
    histogram = fair_run.selection_histogram()
    assert histogram.sum() == 8  # every client counted once
    assert (histogram.index * histogram).sum() == fair_run.clients["n_selected"].sum()


def test_client_losses_need_fairness_loss(digits_run: Path):
    with pytest.raises(MissingDataError, match="fairness_loss"):
        netfl.load_run(digits_run).client_losses()


def test_learning_figures(fair_run, digits_run: Path, tmp_path):
    for x in ("round", "time"):
        fig = learning_plots.global_loss(fair_run, x=x)
        assert len(fig.axes[0].lines) == 1
        fig.savefig(tmp_path / f"loss_{x}.png")
    assert len(learning_plots.loss_fairness(fair_run).axes[0].lines) == 1
    (line,) = learning_plots.distinct_selected(fair_run).axes[0].lines
    assert line.get_ydata()[-1] == fair_run.distinct_selected().iloc[-1]
    learning_plots.selection_histogram(fair_run).savefig(tmp_path / "hist.png")
    # A run without client losses gets a figure that says why.
    text = learning_plots.global_loss(netfl.load_run(digits_run)).axes[0].texts[0].get_text()
    assert "fairness_loss" in text


def test_report_and_compare_show_the_client_losses(fair_run, digits_run: Path, tmp_path):
    report = tmp_path / "report"
    assert main(["report", str(fair_run.path), "--out", str(report)]) == 0
    assert {"global_loss.png", "loss_fairness.png", "distinct_selected.png"} <= {
        p.name for p in report.glob("*.png")
    }
    summary = pd.read_csv(report / "summary.csv").set_index("quantity")["value"]
    last = fair_run.loss_fairness().iloc[-1]
    assert float(summary["loss_jain (clients' losses, last evaluation)"]) == pytest.approx(last)
    both = tmp_path / "both"
    assert main(["compare", str(fair_run.path), str(digits_run), "--out", str(both)]) == 0
    table = pd.read_csv(both / "runs.csv").set_index("run")
    assert table.at[fair_run.id, "loss_jain"] == pytest.approx(last)
    assert np.isnan(table.at[netfl.load_run(digits_run).id, "loss_jain"])
    assert "loss_jain_mean" in pd.read_csv(both / "comparison.csv").columns
    alone = tmp_path / "alone"  # runs without client losses: no such column
    assert main(["compare", str(digits_run), "--out", str(alone)]) == 0
    assert "loss_jain_mean" not in pd.read_csv(alone / "comparison.csv").columns
