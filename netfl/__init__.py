"""netfl: discrete-event simulation of federated learning over mobile networks.

Public API::

    import netfl
    scenario = netfl.load_scenario("quickstart", overrides=["fl.rounds=5"])
    result = netfl.simulate(scenario, out="runs/demo")
    result = netfl.resume("runs/demo")         # an interrupted run, from its checkpoint
    run = netfl.load_run("runs/demo")          # tables, phases, time to accuracy
    runs = netfl.load_runs("sweeps/demo")      # many runs, parameters as columns

Attributes are imported on first use, so ``import netfl`` stays light (no torch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from netfl._version import __version__

if TYPE_CHECKING:
    from netfl.scenario import load_scenario
    from netfl.simulation import RunResult, resume, simulate
    from netfl.trace.run import Run, Runs, load_run, load_runs

__all__ = [
    "Run",
    "RunResult",
    "Runs",
    "__version__",
    "load_run",
    "load_runs",
    "load_scenario",
    "resume",
    "simulate",
]

_LAZY = {
    "load_scenario": "netfl.scenario",
    "simulate": "netfl.simulation",
    "resume": "netfl.simulation",
    "RunResult": "netfl.simulation",
    "load_run": "netfl.trace.run",
    "load_runs": "netfl.trace.run",
    "Run": "netfl.trace.run",
    "Runs": "netfl.trace.run",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'netfl' has no attribute {name!r}")
