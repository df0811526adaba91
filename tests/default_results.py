"""Fingerprints of a few small scenarios' results, to show that new keys at their defaults
change nothing (issue 24: partial work, FedProx, aggregation rules), on every x86-64 CPU.

``python -m tests.default_results --write`` records the fingerprints in
``tests/data/default_results.json``; ``tests/test_learning_defaults.py`` reruns the
scenarios and compares. A change that legitimately moves results (a new radio model, a
faster training path that rounds differently) rewrites the file with this command and says
why in its commit.

A fingerprint (:mod:`tests.fingerprint`) covers every column of ``timeline.parquet`` and
``rounds.parquet``: integers, strings, lists of ids and the order of rows exactly; times to
rtol 1e-11; what training gives to what another CPU's float32 kernels move it by (loss
rtol 1e-5, accuracy atol 0.01). Training is pinned to the CPU (``learning.device: cpu``):
a CUDA run is checked against the sequential trainer within tolerance by the GPU tests,
not against these.

History: until issue 32 these were sha256 digests of the tables with the loss written to 9
digits, taken with the code before issue 24's keys existed (6225162); they pinned the CPU
(three failed without AVX-512). The fingerprints were recorded when issue 32's dense path
became the CPU path of the MLPs, another rounding of the same steps: against the code
before it (main at 5f27535) every column is equal but the losses, which moved by 3e-9
relative at most.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from netfl.scenario import scenario_from_data
from netfl.simulation import simulate
from tests.conftest import TINY, isolated
from tests.fingerprint import fingerprint

HERE = Path(__file__).resolve().parent
DIGESTS = HERE / "data" / "default_results.json"


def _tiny() -> dict[str, Any]:
    data = yaml.safe_load(yaml.safe_dump(TINY))
    data["learning"]["device"] = "cpu"  # these fingerprints pin the CPU's results
    return data


def _busy_lte() -> dict[str, Any]:
    # One LTE cell (the engine's isolated-cell configuration) with the rate mapping the
    # digest was recorded with (the LTE default until issue 26's lte_tbs): what this digest
    # checks is issue 24's keys, not the mapping.
    data = isolated(_tiny(), rate_mapping={"kind": "shannon_with_loss"})
    data["traffic"] = {"sources": [{"kind": "ftp1", "direction": "uplink", "arrival_rate_hz": 0.5}]}
    group = data["devices"]["groups"][0]
    group.update(
        count=8,
        availability={"kind": "markov", "mean_on_s": 30, "mean_off_s": 10},
        background={"arrival_rate_hz": 0.1, "job_work_s": {"dist": "exponential", "mean": 2.0}},
    )
    data["fl"].update(rounds=5, deadline_s=2.5, protocol="fedcs")
    data["learning"].update(momentum=0.5, backend="sequential")
    return data


def _fedbuff() -> dict[str, Any]:
    data = _tiny()
    data["devices"]["groups"][0]["count"] = 8
    data["fl"] = {"protocol": "fedbuff", "rounds": 6, "concurrency": 4, "buffer_size": 2}
    data["learning"].update(local_steps=3, local_epochs=None)
    return data


def _hierarchical() -> dict[str, Any]:
    data = _tiny()
    data["fl"].update(protocol="hierarchical", rounds=2, kappa1=2, kappa2=2)
    return data


def _timing_only() -> dict[str, Any]:
    data = _tiny()
    data["learning"] = "none"
    data["fl"].update(rounds=6, model_size_bits=1e6, deadline_s=2.0)
    return data


SCENARIOS: dict[str, Callable[[], dict[str, Any]]] = {
    "tiny": _tiny,
    "busy_lte_fedcs_deadline": _busy_lte,
    "fedbuff_local_steps": _fedbuff,
    "hierarchical_kappa": _hierarchical,
    "timing_only_deadline": _timing_only,
}


def run_tables(name: str, out: Path) -> dict[str, pd.DataFrame]:
    run_dir = simulate(scenario_from_data(SCENARIOS[name]()), out / name).run_dir
    return {table: pd.read_parquet(run_dir / f"{table}.parquet") for table in TABLES}


TABLES = ("timeline", "rounds")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the fingerprints")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        found = {
            name: {t: fingerprint(f) for t, f in run_tables(name, Path(tmp)).items()}
            for name in SCENARIOS
        }
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE
    ).stdout.strip()
    text = json.dumps({"commit": commit, "fingerprints": found}, indent=1) + "\n"
    if args.write:
        DIGESTS.parent.mkdir(exist_ok=True)
        DIGESTS.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
