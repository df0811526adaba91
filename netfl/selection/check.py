"""``check_strategy``: conformance checks every registered strategy must pass.

Modelled on Gymnasium's ``check_env``. It drives a strategy through synthetic rounds and
checks that each selection is a subset of the candidates (integer ids) with no repeats, at
most the budget; that inputs are never mutated; that the same seed gives the same
selections; that rounds with no candidates, or where no selected client reported back, are
survived; and that ``scores()`` returns ``{name: {client id: number}}`` for clients of the
population.
A strategy that polls (``choose_polled``) is served as the server would: its polled
candidates answer (most of them), the others get NaN.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from netfl.selection.base import PopulationInfo, RoundFeedback, SelectionContext, Strategy


class StrategyCheckError(AssertionError):
    """A strategy broke the selection contract."""


#: The contract rule an exception from inside a strategy most likely broke.
_RULES: list[tuple[type[BaseException], str, str]] = [
    (
        ValueError,
        "read-only",
        "it wrote to an input array; SelectionContext and RoundFeedback arrays are"
        " read-only: copy one (np.array(x)) before modifying it",
    ),
    (
        IndexError,
        "",
        "it indexed outside an array; ids in ctx.candidates and feedback.selected are"
        " client ids (0 .. n_clients - 1), positions in the per-candidate arrays run"
        " 0 .. len(ctx.candidates) - 1",
    ),
    (KeyError, "", "it read a feature or signal the server did not provide"),
]


def _call(what: str, round_: int | None, call: Callable[[], Any]) -> Any:
    """Run one strategy method; an exception becomes a StrategyCheckError naming the rule."""
    try:
        return call()
    except StrategyCheckError:
        raise
    except Exception as exc:
        where = f"round {round_}: " if round_ is not None else ""
        rule = next(
            (text for kind, needle, text in _RULES if isinstance(exc, kind) and needle in str(exc)),
            "the strategy raised instead of returning",
        )
        raise StrategyCheckError(
            f"{where}{what} raised {type(exc).__name__}: {exc} -- {rule}"
        ) from exc


def _context(
    rng: np.random.Generator,
    info: PopulationInfo,
    round_: int,
    n_cand: int,
    history: dict[str, np.ndarray],
) -> SelectionContext:
    candidates = np.sort(rng.choice(info.n_clients, size=n_cand, replace=False))
    features = {
        "mu": rng.uniform(0.5, 2.0, n_cand),
        "bandwidth_hz": rng.uniform(2e6, 4e6, n_cand),
        "cold_start": (history["last_round"][candidates] != round_ - 1).astype(float),
        "loss": rng.uniform(0.1, 3.0, n_cand),
        "context": rng.normal(size=(n_cand, 8)),
        "expected_exchange_time_s": rng.uniform(1.0, 40.0, n_cand),
    }
    return SelectionContext(
        round=round_,
        now_s=10.0 * round_,
        candidates=candidates,
        budget=info.budget,
        update_time_s=history["update"][candidates],
        upload_time_s=history["upload"][candidates],
        n_samples=info.n_samples[candidates],
        deadline_s=info.deadline_s,
        features=features,
    )


def _poll(
    strategy: Strategy, ctx: SelectionContext, rng: np.random.Generator, dim: int = 16
) -> SelectionContext:
    polled = [
        int(c) for c in _call("choose_polled()", ctx.round, lambda: strategy.choose_polled(ctx))
    ]
    if not polled:
        return ctx
    if len(polled) != len(set(polled)):
        raise StrategyCheckError(f"round {ctx.round}: polled a client twice: {polled}")
    outside = set(polled) - set(ctx.candidates.tolist())
    if outside:
        raise StrategyCheckError(f"round {ctx.round}: polled non-candidates {sorted(outside)}")
    n = len(ctx.candidates)
    answered = np.isin(ctx.candidates, polled) & (rng.random(n) < 0.9)
    features = dict(ctx.features)
    if strategy.poll_signal == "update_vector":
        vectors = np.full((n, dim), np.nan)
        vectors[answered] = rng.normal(size=(int(answered.sum()), dim))
        features["update_vector"] = vectors
    elif strategy.poll_signal == "poll_loss":
        features["loss"] = np.where(answered, ctx.features["loss"], np.nan)
    else:
        raise StrategyCheckError(
            f"round {ctx.round}: polls {polled} but declares no poll signal in requires"
            ' ("poll_loss" or "update_vector")'
        )
    return dataclasses.replace(ctx, features=features)


def _feedback(
    rng: np.random.Generator,
    round_: int,
    selected: np.ndarray,
    nobody_reported: bool,
    dim: int = 16,
) -> RoundFeedback:
    k = len(selected)
    completed = np.zeros(k, bool) if nobody_reported else rng.random(k) < 0.8
    nan = np.full(k, np.nan)
    update = np.where(completed, rng.uniform(1, 20, k), np.nan)
    upload = np.where(completed, rng.uniform(1, 20, k), np.nan)
    download = np.where(completed, rng.uniform(0.5, 5, k), np.nan)
    loss = np.where(completed, rng.uniform(0.1, 3.0, k), np.nan)
    signals = {
        "local_loss_std": np.where(completed, rng.uniform(0.0, 0.5, k), np.nan),
        "update_vector": rng.normal(size=(k, dim)) * completed[:, None],
        "global_update": rng.normal(size=dim),
    }
    return RoundFeedback(
        round=round_,
        selected=selected,
        completed=completed,
        download_time_s=download,
        update_time_s=update,
        upload_time_s=upload,
        exchange_time_s=download + update + upload if k else nan,
        round_time_s=float(np.nanmax(download + update + upload)) if completed.any() else 30.0,
        local_loss=loss,
        global_accuracy=0.1 + 0.01 * round_,
        global_loss=2.0 / (1 + round_),
        signals=signals,
    )


class SyntheticRounds:
    """Drive a strategy outside the simulator: synthetic resource reports, polls and
    feedback drawn from ``rng``, with each client's last reported times kept as the
    server keeps them (also used by the checkpoint tests)."""

    def __init__(self, info: PopulationInfo, rng: np.random.Generator) -> None:
        self.info, self.rng = info, rng
        n = info.n_clients
        self.history = {
            "update": np.zeros(n),
            "upload": np.zeros(n),
            "last_round": np.full(n, -10),
        }

    def context(self, strategy: Strategy, round_: int, n_candidates: int) -> SelectionContext:
        """The round's context, after serving any poll the strategy asks for."""
        ctx = _context(self.rng, self.info, round_, n_candidates, self.history)
        return _poll(strategy, ctx, self.rng)

    def feedback(
        self, round_: int, selected: np.ndarray, nobody_reported: bool = False
    ) -> RoundFeedback:
        """The round's feedback; the reported times of the clients that completed."""
        feedback = _feedback(self.rng, round_, selected, nobody_reported)
        done = selected[feedback.completed]
        self.history["update"][done] = feedback.update_time_s[feedback.completed]
        self.history["upload"][done] = feedback.upload_time_s[feedback.completed]
        self.history["last_round"][selected] = round_
        return feedback


def _checked_selection(strategy: Strategy, ctx: SelectionContext, n_candidates: int) -> list[int]:
    """``strategy.select(ctx)``, after checking it against the contract."""
    round_ = ctx.round
    before = {
        name: np.array(getattr(ctx, name))
        for name in ("candidates", "update_time_s", "upload_time_s", "n_samples")
    }
    returned = list(_call("select()", round_, lambda: strategy.select(ctx)))
    if not all(isinstance(c, int | np.integer) for c in returned):
        raise StrategyCheckError(f"round {round_}: selected non-integer ids {returned}")
    chosen = [int(c) for c in returned]
    for name, value in before.items():
        if not np.array_equal(value, getattr(ctx, name)):
            raise StrategyCheckError(f"round {round_}: select() modified ctx.{name}")
    if len(chosen) != len(set(chosen)):
        raise StrategyCheckError(f"round {round_}: selected a client twice: {chosen}")
    if len(chosen) > ctx.budget:
        raise StrategyCheckError(f"round {round_}: selected {len(chosen)} > budget {ctx.budget}")
    outside = set(chosen) - set(ctx.candidates.tolist())
    if outside:
        raise StrategyCheckError(f"round {round_}: selected non-candidates {sorted(outside)}")
    if n_candidates >= ctx.budget and len(chosen) < ctx.budget and not _may_underfill(strategy):
        raise StrategyCheckError(
            f"round {round_}: selected {len(chosen)} of a budget of {ctx.budget}"
            f" with {n_candidates} candidates"
        )
    return chosen


def _run(
    factory: Callable[[], Strategy], seed: int, n_clients: int, budget: int, rounds: int
) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    info = PopulationInfo(
        n_clients=n_clients,
        budget=budget,
        n_samples=rng.integers(20, 500, n_clients),
        rounds=rounds,
        deadline_s=None,
        model_size_bits=20e6,
    )
    strategy = factory()
    _call("setup()", None, lambda: strategy.setup(info, np.random.default_rng(seed + 1)))
    driver = SyntheticRounds(info, rng)
    selections: list[list[int]] = []
    for round_ in range(rounds):
        # Round 2 has no candidates; in round 3 nobody reports back.
        n_candidates = 0 if round_ == 2 else int(rng.integers(1, n_clients + 1))
        chosen = _checked_selection(
            strategy, driver.context(strategy, round_, n_candidates), n_candidates
        )
        _check_scores(strategy, round_, info.n_clients)
        feedback = driver.feedback(round_, np.asarray(chosen, dtype=np.int64), round_ == 3)
        _call("observe()", round_, functools.partial(strategy.observe, feedback))
        selections.append(chosen)
    return selections


def _check_scores(strategy: Strategy, round_: int, n_clients: int) -> None:
    scores = _call("scores()", round_, strategy.scores)
    if not isinstance(scores, Mapping):
        raise StrategyCheckError(f"round {round_}: scores() returned {type(scores).__name__}")
    for name, values in scores.items():
        if not isinstance(name, str) or not isinstance(values, Mapping):
            raise StrategyCheckError(
                f"round {round_}: scores() must map names to {{client: value}}, got {name!r}"
            )
        for client, value in values.items():
            if not 0 <= int(client) < n_clients or int(client) != client:
                raise StrategyCheckError(
                    f"round {round_}: scores()[{name!r}] has a non-client key {client!r}"
                )
            float(value)


def _may_underfill(strategy: Strategy) -> bool:
    return bool(getattr(strategy, "may_select_fewer", False))


def check_strategy(
    factory: Callable[[], Strategy],
    *,
    n_clients: int = 30,
    budget: int = 5,
    rounds: int = 12,
    seed: int = 7,
) -> None:
    """Run the conformance checks; raises :class:`StrategyCheckError` on a violation.

    ``factory`` builds a fresh, unconfigured strategy (``lambda: MyStrategy(**params)``).
    A strategy that may legitimately select fewer than the budget (deadline-driven ones)
    sets the class attribute ``may_select_fewer = True``.
    """
    first = _run(factory, seed, n_clients, budget, rounds)
    second = _run(factory, seed, n_clients, budget, rounds)
    if first != second:
        raise StrategyCheckError("not deterministic: same seed, different selections")
