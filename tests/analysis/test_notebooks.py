"""The notebooks run top to bottom on runs the tests make (so they never rot)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def _execute(name: str) -> nbformat.NotebookNode:
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": NOTEBOOKS}}
    ).execute()
    return notebook


def _outputs(notebook: nbformat.NotebookNode, mime: str) -> int:
    return sum(
        mime in output.get("data", {})
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )


@pytest.mark.slow
def test_timeline_analysis(digits_run, monkeypatch):
    monkeypatch.setenv("NETFL_RUN_DIR", str(digits_run))
    notebook = _execute("timeline_analysis.ipynb")
    assert _outputs(notebook, "image/png") == 6  # every figure cell drew its figure
    text = "".join(
        o.get("text", "") for c in notebook.cells if c.cell_type == "code" for o in c.outputs
    )
    assert "time to 30% accuracy" in text
    assert "Jain's fairness index" in text


@pytest.mark.slow
def test_compare_strategies(digits_sweep, monkeypatch):
    monkeypatch.setenv("NETFL_SWEEP_DIR", str(digits_sweep))
    notebook = _execute("compare_strategies.ipynb")
    assert _outputs(notebook, "image/png") == 5
    tables = [
        o["data"]["text/html"]
        for c in notebook.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "text/html" in o.get("data", {})
    ]
    assert any("time_to_target_s_mean" in t for t in tables)


def test_notebooks_are_committed_without_outputs():
    for path in NOTEBOOKS.glob("*.ipynb"):
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code"), path
