"""Builders of selection contexts and round feedback for strategy unit tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from netfl.selection.base import PopulationInfo, RoundFeedback, SelectionContext, Strategy


def setup(
    strategy: Strategy,
    n_samples: Any,
    budget: int = 2,
    rounds: int | None = 10,
    seed: int = 0,
) -> Strategy:
    """Call ``strategy.setup`` for a population with these data sizes; return it."""
    sizes = np.asarray(n_samples)
    info = PopulationInfo(n_clients=len(sizes), budget=budget, n_samples=sizes, rounds=rounds)
    strategy.setup(info, np.random.default_rng(seed))
    return strategy


def context(
    strategy: Strategy, candidates: Any, round: int = 0, budget: int | None = None, **features: Any
) -> SelectionContext:
    """A selection context for ``candidates`` of a strategy already set up."""
    candidates = np.asarray(candidates, dtype=np.int64)
    n = len(candidates)
    return SelectionContext(
        round=round,
        now_s=0.0,
        candidates=candidates,
        budget=strategy.info.budget if budget is None else budget,
        update_time_s=np.zeros(n),
        upload_time_s=np.zeros(n),
        n_samples=strategy.info.n_samples[candidates],
        features={k: np.asarray(v, dtype=float) for k, v in features.items()},
    )


def feedback(
    round: int,
    selected: Any,
    local_loss: Any,
    completed: Any = None,
    global_accuracy: float = float("nan"),
    global_loss: float = float("nan"),
    **signals: Any,
) -> RoundFeedback:
    """Feedback of a round; every selected client completed unless told otherwise."""
    selected = np.asarray(selected, dtype=np.int64)
    k = len(selected)
    loss = np.asarray(local_loss, dtype=float)
    done = np.isfinite(loss) if completed is None else np.asarray(completed, dtype=bool)
    nan = np.full(k, np.nan)
    return RoundFeedback(
        round=round,
        selected=selected,
        completed=done,
        download_time_s=nan,
        update_time_s=nan,
        upload_time_s=nan,
        exchange_time_s=nan,
        round_time_s=1.0,
        local_loss=loss,
        global_accuracy=global_accuracy,
        global_loss=global_loss,
        signals={k: np.asarray(v, dtype=float) for k, v in signals.items()},
    )


def scenario_data(tiny: dict[str, Any], name: str, **params: Any) -> dict[str, Any]:
    """The tiny scenario with a strategy and its params."""
    tiny["selection"] = {"name": name, "params": params}
    return tiny
