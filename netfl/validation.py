"""The one validation stage of a scenario, shared by ``netfl validate`` and ``simulate``.

:mod:`netfl.config` is the schema and imports nothing above it; the checks here need the
layers above it (the radio's path-loss validity and load, the registries of strategies,
datasets and models, the memory the run needs: :mod:`netfl.resources`), so they run where
scenarios are loaded (:mod:`netfl.scenario`).
"""

from __future__ import annotations

import warnings

from netfl.config import Scenario, cross_checks
from netfl.errors import Problem, ScenarioWarning
from netfl.resources import memory_problems


def scenario_problems(scenario: Scenario, *, check_registry: bool = True) -> list[Problem]:
    """Every problem of a schema-valid scenario, in one pass (empty if it can run).

    ``check_registry``: also check that named strategies, datasets and models exist and
    that the strategy accepts its parameters.
    """
    from netfl.radio.checks import radio_problems

    problems, notes = memory_problems(scenario)
    for note in notes:
        warnings.warn(note, ScenarioWarning, stacklevel=3)
    problems += cross_checks(scenario)
    problems += radio_problems(scenario)
    if check_registry:
        from netfl.registry import registry_checks

        problems += registry_checks(scenario)
    return problems
