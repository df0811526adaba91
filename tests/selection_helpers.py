"""Small builders of selection contexts and feedback for the strategy tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from netfl.errors import ScenarioError
from netfl.scenario import scenario_from_data
from netfl.selection.base import PopulationInfo, RoundFeedback, SelectionContext, Strategy


def info(n: int, budget: int = 3, n_samples: Sequence[int] | None = None, **kw) -> PopulationInfo:
    sizes = np.full(n, 100) if n_samples is None else np.asarray(n_samples)
    return PopulationInfo(n_clients=n, budget=budget, n_samples=sizes, **kw)


def ready(strategy: Strategy, population: PopulationInfo, seed: int = 0) -> Strategy:
    strategy.setup(population, np.random.default_rng(seed))
    return strategy


def ctx(
    candidates: Sequence[int],
    budget: int,
    *,
    round_: int = 0,
    update: Sequence[float] | None = None,
    upload: Sequence[float] | None = None,
    n_samples: Sequence[int] | None = None,
    deadline_s: float | None = None,
    features: Mapping[str, Sequence[float]] | None = None,
) -> SelectionContext:
    n = len(candidates)
    return SelectionContext(
        round=round_,
        now_s=0.0,
        candidates=np.asarray(candidates, dtype=np.int64),
        budget=budget,
        update_time_s=np.zeros(n) if update is None else np.asarray(update, float),
        upload_time_s=np.zeros(n) if upload is None else np.asarray(upload, float),
        n_samples=np.full(n, 100) if n_samples is None else np.asarray(n_samples),
        deadline_s=deadline_s,
        features={k: np.asarray(v, float) for k, v in (features or {}).items()},
    )


def feedback(
    selected: Sequence[int],
    *,
    round_: int = 0,
    update: Sequence[float] | None = None,
    upload: Sequence[float] | None = None,
    exchange: Sequence[float] | None = None,
    loss: Sequence[float] | None = None,
    completed: Sequence[bool] | None = None,
    round_time_s: float = 10.0,
    signals: Mapping[str, object] | None = None,
) -> RoundFeedback:
    k = len(selected)

    def arr(values: Sequence[float] | None) -> np.ndarray:
        return np.full(k, np.nan) if values is None else np.asarray(values, float)

    done = np.ones(k, bool) if completed is None else np.asarray(completed, bool)
    return RoundFeedback(
        round=round_,
        selected=np.asarray(selected, dtype=np.int64),
        completed=done,
        download_time_s=np.zeros(k),
        update_time_s=arr(update),
        upload_time_s=arr(upload),
        exchange_time_s=arr(exchange),
        round_time_s=round_time_s,
        local_loss=arr(loss),
        signals=dict(signals or {}),
    )


def selection_error(
    scenario: dict, name: str, params: Mapping[str, object] | None = None
) -> ScenarioError:
    """The error that loading ``scenario`` with this strategy and params raises."""
    scenario["selection"] = {"name": name, "params": dict(params or {})}
    with pytest.raises(ScenarioError) as error:
        scenario_from_data(scenario)
    return error.value
