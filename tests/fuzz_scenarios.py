"""Hostile and broken scenario files for ``netfl validate`` (tests and the fuzz benchmark).

:func:`scenario_bytes` draws either random bytes or a shipped scenario mutated line by line
(lines deleted, duplicated, swapped, cut, or spliced with YAML punctuation, aliases and
random text). :func:`validate_file` runs ``netfl validate`` in-process and returns its exit
code, its stderr and its wall time; :func:`check_outcome` states what every file must get:
exit 0 or 2, every stderr line one ``error:``/``warning:`` line, no traceback.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import io
import time
from pathlib import Path

from hypothesis import strategies as st

from netfl.cli import main

SEEDS = sorted(
    entry.read_text(encoding="utf-8")
    for entry in importlib.resources.files("netfl.scenarios").iterdir()
    if entry.name.endswith(".yaml")
)

_PIECES = [
    "&a ",
    "*a",
    "<<: *a",
    "[",
    "]",
    "{",
    "}",
    ": ",
    "- ",
    "!!python/object:os.system ",
    "? ",
    "|",
    ">",
    "'",
    '"',
    "#",
    "\t",
    "  ",
    "\x00",
    "~",
    "null",
    "-1",
    "1e999",
    ".nan",
    "0x10",
    "yes",
    "2 MB",
    "0.5 MB",
    "{dist: normal}",
    "os:system",
    "\ufeff",
    "\u2028",
]


@st.composite
def mutated_scenario(draw: st.DrawFn) -> bytes:
    lines = draw(st.sampled_from(SEEDS)).splitlines()
    for _ in range(draw(st.integers(1, 6))):
        if not lines:
            break
        at = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["delete", "duplicate", "swap", "cut", "splice", "text"]))
        if kind == "delete":
            del lines[at]
        elif kind == "duplicate":
            lines.insert(at, lines[at])
        elif kind == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[at], lines[other] = lines[other], lines[at]
        elif kind == "cut":
            lines[at] = lines[at][: draw(st.integers(0, len(lines[at])))]
        else:
            piece = (
                draw(st.sampled_from(_PIECES)) if kind == "splice" else draw(st.text(max_size=12))
            )
            col = draw(st.integers(0, len(lines[at])))
            lines[at] = lines[at][:col] + piece + lines[at][col:]
    return "\n".join(lines).encode("utf-8", errors="surrogatepass")


def scenario_bytes() -> st.SearchStrategy[bytes]:
    return st.one_of(mutated_scenario(), st.binary(max_size=400))


WARM_UP = """
devices: {groups: [{name: a, count: 10, n_samples: 20}]}
learning: {dataset: digits, partition: {kind: dirichlet, alpha: 1}}
"""


def warm_up(folder: Path) -> None:
    """Validate a scenario that imports what validation can import (the schema, the radio,
    the registries, torch and a dataset for the data check), so that per-file times measure
    the file, not the first import."""
    path = folder / "warm-up.yaml"
    path.write_text(WARM_UP)
    code, err, _ = validate_file(path)
    assert code == 0, err


def validate_file(path: Path) -> tuple[int, str, float]:
    """``netfl validate PATH`` in this process: (exit code, stderr, wall seconds)."""
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["validate", str(path)])
    return code, err.getvalue(), time.perf_counter() - start


def check_outcome(path: Path, code: int, stderr: str) -> None:
    assert code in (0, 2), (code, stderr)
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    for line in lines:
        assert line.startswith(("error: ", "warning: ")), stderr
    if code == 2:
        assert any(line.startswith(f"error: {path}") for line in lines), stderr
