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


# -- motion that must finish in bounded time (issue 34, part 3) ---------------------------

#: Values from harmless to absurd, for the motion keys.
_EXTREMES = [1e-300, 1e-12, 1e-9, 1e-3, 0.05, 0.1, 1.0, 30.0, 138.0, 139.0, 1e9, 1e300]


@st.composite
def motion_scenario(draw: st.DrawFn) -> dict:
    """A timing-only scenario of 4 moving devices whose speeds, legs, pauses, update
    interval, interruption and positions are drawn from :data:`_EXTREMES` (and the
    hierarchical protocol's kappa1 x kappa2)."""
    value = st.sampled_from(_EXTREMES)
    model = draw(st.sampled_from(["random_waypoint", "random_direction", "gauss_markov",
                                  "constant_velocity"]))  # fmt: skip
    mobility: dict = {"model": model}
    if model == "gauss_markov":
        mobility.update(mean_speed_mps=draw(value), speed_std_mps=draw(value))
    else:
        mobility["speed_mps"] = draw(value)
    if model == "random_direction":
        mobility.update(travel_s=draw(value), pause_s=draw(st.sampled_from([0.0, *_EXTREMES])))
    if model == "random_waypoint":
        mobility["pause_s"] = draw(st.sampled_from([0.0, *_EXTREMES]))
    if model == "constant_velocity":
        mobility.update(start_m=[draw(st.sampled_from([0.0, 1e7, 1e300])), 0.0], at_edge="reverse")
    fl: dict = {"rounds": 2, "clients_per_round": 2, "model_size_bits": 1e5, "deadline_s": 20.0}
    if draw(st.booleans()):
        fl.update(protocol="hierarchical", kappa1=draw(st.sampled_from([1, 10, 1000])),
                  kappa2=draw(st.sampled_from([1, 10, 1000])))  # fmt: skip
    return {
        "name": "motion",
        "seed": 1,
        "cell": {"sites": 7, "sectors": 1, "indoor_fraction": 0.0, "radius_m": 100.0},
        "radio": {
            "model": "lte",
            "channel_model": "umi_nlos",
            "update_interval_s": draw(st.sampled_from([0.1, *_EXTREMES])),
            "handover": {"interruption_s": draw(st.sampled_from([0.05, *_EXTREMES]))},
        },
        "devices": {"groups": [{"count": 4, "n_samples": 40, "mobility": mobility}]},
        "fl": fl,
        "learning": "none",
    }


class Unbounded(AssertionError):
    """A run computed more events or legs than a bounded run could."""


@contextlib.contextmanager
def counted(max_events: int, max_passes_per_tick: float):
    """Within the block, a run's SimPy events and its mobility legs are counted and
    :class:`Unbounded` is raised past the bounds (so a run that would hang fails fast):
    at most ``max_events`` events, at most ``max_passes_per_tick`` leg passes a radio
    update on average (the models' ``_walk`` calls, each one vectorised pass)."""
    import simpy

    from netfl.mobility.random_direction import RandomDirectionModel
    from netfl.mobility.random_waypoint import RandomWaypointModel

    counts = {"events": 0, "passes": 0, "ticks": 0}
    step = simpy.Environment.step
    originals = {cls: cls._walk for cls in (RandomDirectionModel, RandomWaypointModel)}
    advance = {cls: cls.advance for cls in originals}

    def counted_step(env: simpy.Environment) -> None:
        counts["events"] += 1
        if counts["events"] > max_events:
            raise Unbounded(f"more than {max_events:,} SimPy events")
        step(env)

    def walker(cls: type):
        def walk(self, idx, remaining):  # type: ignore[no-untyped-def]
            counts["passes"] += 1
            if counts["passes"] > max_passes_per_tick * (counts["ticks"] + 1):
                raise Unbounded(f"{counts['passes']:,} leg passes in {counts['ticks']} updates")
            return originals[cls](self, idx, remaining)

        def ticked(self, dt_s):  # type: ignore[no-untyped-def]
            counts["ticks"] += 1
            return advance[cls](self, dt_s)

        return walk, ticked

    simpy.Environment.step = counted_step  # type: ignore[method-assign]
    for cls in originals:
        cls._walk, cls.advance = walker(cls)  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        simpy.Environment.step = step  # type: ignore[method-assign]
        for cls in originals:
            cls._walk, cls.advance = originals[cls], advance[cls]  # type: ignore[method-assign]
