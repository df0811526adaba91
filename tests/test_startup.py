"""Start-up (issue 16, item 4): short commands do not import the heavy libraries.

``netfl validate quickstart`` took 1.7 s, 1.2 s of it importing ``scipy.stats`` through
``netfl.config.dist``; the times are in ``benchmarks/bench_startup.py`` and
``docs/benchmarks.md``. Here: which modules a fresh process has imported afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("scipy.stats", "torch", "networkx", "pandas", "matplotlib", "sklearn")

_PROBE = """
import json, sys, contextlib, io
from netfl.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code, "heavy": [m for m in %r if m in sys.modules]}))
"""


def imported_heavy(*args: str) -> tuple[int, list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE % (HEAVY,), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result = json.loads(out.splitlines()[-1])
    return result["code"], result["heavy"]


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("validate", "quickstart"),
        ("validate", "mab_cs_paper", "--set", "learning=none"),
        ("list",),
    ],
)
def test_short_commands_import_no_heavy_library(args: tuple[str, ...]) -> None:
    code, heavy = imported_heavy(*args)
    assert code == 0
    assert heavy == []


def test_a_learning_none_run_never_imports_torch(tmp_path: Path) -> None:
    # Issue 16 item 11: checkpoint/store.py and learning/learner.py imported torch at
    # module level, so timing-only runs paid for it (about 1 s) and its exit.
    code, heavy = imported_heavy(
        "simulate",
        "quickstart",
        "--set",
        "learning=none",
        "--set",
        "fl.model_size_bits=1e6",
        "--set",
        "fl.rounds=4",
        "--set",
        "fl.checkpoint_every=2",
        "--quiet",
        "--out",
        str(tmp_path / "run"),
    )
    assert code == 0
    assert "torch" not in heavy
    assert (tmp_path / "run" / "checkpoint").is_dir()
