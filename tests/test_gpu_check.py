"""benchmarks/gpu_check.sh (issue 32 item 5): its dry run goes through every step on the CPU.

The GPU check itself runs on a CUDA machine (docs/benchmarks.md, "GPU (issue 32)"); here its
``--dry-run`` (toy sizes, CPU) shows that each step starts, finishes and reports, so the
script is ready when a GPU is at hand.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable}
    env.pop("OUT", None)
    return subprocess.run(
        ["bash", "benchmarks/gpu_check.sh", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without CUDA")
def test_without_cuda_it_says_to_use_the_dry_run(tmp_path):
    done = _check("--out", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "gpu_check: torch sees no CUDA device; use --dry-run on a machine without one"
    )


@pytest.mark.slow
def test_the_dry_run_goes_through_every_step(tmp_path):
    done = _check("--dry-run", "--out", str(tmp_path / "out"), "--work", str(tmp_path / "work"))
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    checks = [row["check"] for row in rows]
    for start in (
        "GPU tests",
        "FMNIST CNN, 4 clients, batched-vmap / sequential",
        "FMNIST CNN, 4 clients, batched-graph / sequential",
        "fedcs_cifar_cnn 4 clients x 20, fp32, batched-graph",
        "fedcs_cifar_cnn 4 clients x 20, bf16, batched-graph",
        "mab_cs_paper 2 rounds end to end",
        "mab_cs_paper training per round, eager / captured",
        "2 seeds through netfl sweep --jobs 2 / 1 seed",
    ):
        assert any(check.startswith(start) for check in checks), start
    assert {row["status"] for row in rows} <= {"info", "dry run"}
    table = (tmp_path / "out" / "gpu_check.md").read_text()
    assert done.stdout.strip().endswith(table.strip().splitlines()[-1])
    summary = json.loads((tmp_path / "work" / "mab" / "summary.json").read_text())
    assert summary["rounds"] == 2 and summary["status"] == "completed"
