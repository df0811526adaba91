"""netfl: discrete-event simulation of federated learning over mobile networks.

Public API::

    import netfl
    scenario = netfl.load_scenario("quickstart", overrides=["fl.rounds=5"])
    result = netfl.simulate(scenario, out="runs/demo")

Attributes are imported on first use, so ``import netfl`` stays light (no torch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from netfl._version import __version__

if TYPE_CHECKING:
    from netfl.scenario import load_scenario
    from netfl.simulation import RunResult, simulate

__all__ = ["RunResult", "__version__", "load_scenario", "simulate"]

_LAZY = {
    "load_scenario": "netfl.scenario",
    "simulate": "netfl.simulation",
    "RunResult": "netfl.simulation",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'netfl' has no attribute {name!r}")
