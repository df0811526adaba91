"""Content digests of a few small scenarios' results, to show that new keys at their defaults
change nothing (issue 24: partial work, FedProx, aggregation rules).

``python -m tests.default_results --write`` records the digests in
``tests/data/default_results.json``; ``tests/test_learning_defaults.py`` reruns the
scenarios and compares. The recorded digests were taken with the code *before* the keys
existed (the commit is in the file), so equality means "byte-identical to before". A change
that legitimately moves results (a new radio model, say) rewrites the file with this command
and says why in its commit.

The digest covers every column of ``timeline.parquet`` and ``rounds.parquet`` exactly, except
``loss`` (the evaluation's mean cross-entropy), which is rounded to 9 significant digits: its
last bits depend on the CPU's BLAS kernels, and this file may be checked on another machine.
Accuracy is a ratio of counts and is compared exactly.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from netfl.scenario import scenario_from_data
from netfl.simulation import simulate
from tests.conftest import TINY, isolated

HERE = Path(__file__).resolve().parent
DIGESTS = HERE / "data" / "default_results.json"


def _tiny() -> dict[str, Any]:
    return yaml.safe_load(yaml.safe_dump(TINY))


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


def digest(frame: pd.DataFrame) -> str:
    """sha256 of every value of ``frame`` (``loss`` to 9 significant digits)."""
    frame = frame.copy()
    if "loss" in frame:
        frame["loss"] = [float(f"{v:.9g}") for v in frame["loss"].to_numpy(dtype=float)]
    for name in frame.columns:
        if frame[name].dtype == object:
            frame[name] = frame[name].map(
                lambda v: json.dumps(np.asarray(v).tolist()) if v is not None else "null"
            )
    hashed = pd.util.hash_pandas_object(frame, index=True).to_numpy()
    return hashlib.sha256(hashed.tobytes() + ",".join(map(str, frame.columns)).encode()).hexdigest()


def run_digests(name: str, out: Path) -> dict[str, str]:
    run_dir = simulate(scenario_from_data(SCENARIOS[name]()), out / name).run_dir
    return {
        table: digest(pd.read_parquet(run_dir / f"{table}.parquet"))
        for table in ("timeline", "rounds")
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the digests")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        found = {name: run_digests(name, Path(tmp)) for name in SCENARIOS}
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE
    ).stdout.strip()
    if args.write:
        DIGESTS.parent.mkdir(exist_ok=True)
        DIGESTS.write_text(json.dumps({"commit": commit, "digests": found}, indent=2) + "\n")
    print(json.dumps(found, indent=2))


if __name__ == "__main__":
    main()
