"""The selection interface: conformance of every registered strategy, registry, params."""

from __future__ import annotations

import numpy as np
import pytest

from netfl.registry import strategies
from netfl.scenario import scenario_from_data
from netfl.selection.base import Strategy, make_strategy
from netfl.selection.check import StrategyCheckError, check_strategy
from netfl.selection.random import RandomSelection
from tests.selection_helpers import ctx, info, ready, selection_error

REGISTERED = sorted(strategies().entries())


@pytest.mark.parametrize("name", REGISTERED)
def test_every_registered_strategy_passes_check(name):
    cls = strategies().load(name)
    check_strategy(lambda: make_strategy(cls, {}))


class _Greedy(Strategy):
    """Always the first candidates; deterministic and valid."""

    def select(self, ctx):
        return ctx.candidates[: ctx.budget].tolist()


class _OverBudget(_Greedy):
    def select(self, ctx):
        return ctx.candidates.tolist()


class _Mutates(_Greedy):
    def select(self, ctx):
        ctx.update_time_s[:] = 0  # read-only: raises
        return []


class _Unseeded(_Greedy):
    def select(self, ctx):
        k = min(ctx.budget, len(ctx.candidates))
        return np.random.default_rng().choice(ctx.candidates, k, replace=False).tolist()


class _FloatIds(_Greedy):
    def select(self, ctx):
        return [c + 0.5 for c in ctx.candidates[: ctx.budget].tolist()]


class _NotCandidates(_Greedy):
    def select(self, ctx):
        outside = sorted(set(range(self.info.n_clients)) - set(ctx.candidates.tolist()))
        chosen = ctx.candidates[: ctx.budget].tolist()
        if outside and chosen:
            chosen[-1] = outside[0]
        return chosen


def test_check_accepts_a_valid_strategy():
    check_strategy(_Greedy)


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (_OverBudget, "budget"),
        (_Unseeded, "deterministic"),
        (_NotCandidates, "non-candidates"),
        (_FloatIds, "non-integer"),
    ],
)
def test_check_catches_violations(cls, message):
    with pytest.raises(StrategyCheckError, match=message):
        check_strategy(cls)


def test_context_arrays_are_read_only():
    # Writing to an input raises numpy's ValueError inside the strategy; check_strategy
    # reports it as the rule it breaks.
    with pytest.raises(StrategyCheckError, match="arrays are read-only"):
        check_strategy(_Mutates)


def test_random_is_uniform_over_candidates():
    strategy = ready(RandomSelection(), info(10))
    counts = np.zeros(10)
    context = ctx(range(10), 3)
    for _ in range(6000):
        counts[strategy.select(context)] += 1
    # Each client is picked with probability 3/10 per round.
    assert np.allclose(counts / 6000, 0.3, atol=0.03)


@pytest.mark.parametrize("n", [1, 2, 7, 50, 51, 9_999, 10_000, 10_001, 100_000])
def test_random_single_pick_is_numpys_choice(n):
    # RandomSelection draws one client with integers(n) instead of choice(candidates, 1,
    # replace=False): the same client and the same generator state after, for every
    # population size (choice switches algorithms at 50 and 10,000 candidates).
    candidates = np.arange(n, dtype=np.int64) * 3 + 1
    strategy = ready(RandomSelection(), info(3 * n + 1, budget=1), seed=n)
    reference = np.random.default_rng(n)
    context = ctx(candidates, 1)
    for _ in range(50):
        assert strategy.select(context) == reference.choice(candidates, 1, replace=False).tolist()
    assert strategy.rng.random() == reference.random()


def test_weighted_random_follows_data_size():
    strategy = ready(RandomSelection(weighted=True), info(2))
    context = ctx(range(2), 1, n_samples=[100, 300])
    picks = [strategy.select(context)[0] for _ in range(4000)]
    assert np.mean(picks) == pytest.approx(0.75, abs=0.03)  # p = 300 / (100 + 300)


def test_weighted_random_fills_the_budget_past_the_clients_with_data():
    # Two of the three candidates hold no data: the one that does is drawn first
    # (p = 50 / 50), and a zero-size client fills the second place instead of numpy
    # refusing the draw.
    strategy = ready(RandomSelection(weighted=True), info(3, budget=2))
    chosen = strategy.select(ctx([0, 1, 2], 2, n_samples=[0, 0, 50]))
    assert chosen[0] == 2 and len(set(chosen)) == 2


def test_plugin_by_module_path():
    cls = strategies().load("tests.test_selection:_Greedy")
    assert cls is _Greedy
    with pytest.raises(ValueError, match="cannot import"):
        strategies().load("no_such_module:Thing")


def test_plugin_without_init_takes_no_params(tiny):
    # _Greedy inherits object.__init__: no parameters, and a scenario may name it.
    tiny["selection"] = {"name": "tests.test_selection:_Greedy"}
    scenario = scenario_from_data(tiny)
    assert isinstance(make_strategy(strategies().load(scenario.selection.name), {}), _Greedy)
    error = selection_error(tiny, "tests.test_selection:_Greedy", {"x": 1})
    assert error.problems[0].key == "selection.params.x"
    assert "it takes: no parameters" in str(error)


class _WritesItsInput(Strategy):
    def select(self, ctx):
        ctx.update_time_s[0] = 1.0  # mutating a read-only input
        return ctx.candidates[: ctx.budget].tolist()


class _IndexesByClientId(Strategy):
    def setup(self, info, rng):
        super().setup(info, rng)
        self.times = np.zeros(3)  # sized by budget, indexed by client id

    def select(self, ctx):
        return ctx.candidates[: ctx.budget].tolist()

    def observe(self, feedback):
        self.times[feedback.selected] += 1.0


class _ReadsAMissingFeature(Strategy):
    def select(self, ctx):
        ctx.features["no_such_feature"]
        return []


@pytest.mark.parametrize(
    ("cls", "rule"),
    [
        (
            _WritesItsInput,
            "select() raised ValueError: assignment destination is read-only -- it wrote to"
            " an input array",
        ),
        (_IndexesByClientId, "observe() raised IndexError"),
        (_ReadsAMissingFeature, "a feature or signal the server did not provide"),
    ],
)
def test_check_names_the_rule_a_raising_plugin_broke(cls, rule):
    # Issue 18: these plug-in bugs escaped check_strategy as bare ValueError/IndexError.
    with pytest.raises(StrategyCheckError, match="round") as error:
        check_strategy(cls)
    assert rule in str(error.value)
    if cls is _IndexesByClientId:
        assert "client ids (0 .. n_clients - 1)" in str(error.value)
