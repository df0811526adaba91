"""Name -> class registries for strategies, channel models, datasets, models and
aggregation rules.

Entries are declared as plain ``"module:attribute"`` strings in each subpackage's
``__init__`` (no import side effects); the target is imported only when used. A name of
the form ``package.module:Class`` loads a user's own class. Installed packages can also
register names through the entry-point groups ``netfl.selection``,
``netfl.channel_models``, ``netfl.models`` and ``netfl.datasets`` (docs/extending.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from netfl.config.base import suggest
from netfl.errors import Problem
from netfl.registry_entry import Entry, load_target, plugins_allowed, raised

if TYPE_CHECKING:
    from netfl.config import Scenario

__all__ = ["Entry", "Registry", "load_target", "plugins_allowed"]


class Registry:
    """Names of one kind of component (static table + optional entry-point group)."""

    def __init__(
        self, kind: str, table: Mapping[str, Entry | tuple[str, str]], group: str | None = None
    ):
        self.kind = kind
        self._table = {
            name: entry if isinstance(entry, Entry) else Entry(*entry)
            for name, entry in table.items()
        }
        self._group = group

    def entries(self) -> dict[str, Entry]:
        found = dict(self._table)
        if self._group and plugins_allowed():
            for ep in entry_points(group=self._group):
                found.setdefault(ep.name, Entry(ep.value, f"(plug-in from {ep.value})"))
        return dict(sorted(found.items()))

    def __contains__(self, name: str) -> bool:
        # The static table first: scanning the installed packages' entry points costs
        # about 20 ms, and a registered name never needs it (it wins over a plug-in).
        return name in self._table or (":" in name and plugins_allowed()) or name in self.entries()

    def unknown_message(self, name: str) -> str:
        if ":" in name and not plugins_allowed():
            return (
                f"'{name}' names a plug-in (code imported from an installed module), and"
                f" --no-plugins allows only the registered {self.kind} names"
                f" (`netfl list`)"
            )
        names = list(self.entries())
        hint = suggest(name, names)
        if "did you mean" not in hint:
            hint = "; registered: " + ", ".join(names)
        return f"unknown {self.kind} '{name}'{hint}"

    def plugin_target(self, name: str) -> str | None:
        """``module:attribute`` of ``name`` if it is a plug-in (named as such, or an
        entry point); None for a registered name."""
        if ":" in name:
            return name
        if name in self._table:
            return None
        entry = self.entries().get(name)
        return entry.target if entry is not None else None

    def load(self, name: str) -> Any:
        """Return the registered object (class or function) for ``name``."""
        if ":" in name and plugins_allowed():
            return load_target(name)
        if name in self._table:
            return load_target(self._table[name].target)
        entries = self.entries()
        if name not in entries:
            raise KeyError(self.unknown_message(name))
        return load_target(entries[name].target)


def strategies() -> Registry:
    from netfl.selection import STRATEGIES

    return Registry("strategy", STRATEGIES, group="netfl.selection")


def channel_models() -> Registry:
    from channel_models import CHANNEL_MODELS

    return Registry("channel model", CHANNEL_MODELS, group="netfl.channel_models")


def datasets() -> Registry:
    from netfl.learning import DATASETS

    return Registry("dataset", DATASETS, group="netfl.datasets")


def models() -> Registry:
    from netfl.learning import MODELS

    return Registry("model", MODELS, group="netfl.models")


def aggregations() -> Registry:
    from netfl.learning import AGGREGATIONS

    return Registry("aggregation rule", AGGREGATIONS, group="netfl.aggregation")


def _named_problems(
    key: str, registry: Registry, name: str, *, load: bool = False
) -> tuple[Any, list[Problem]]:
    """``(object, [])`` if ``name`` is registered (loaded with ``load``) or is a
    ``package.module:attribute`` that imports; ``(None, [problem])`` otherwise."""
    if name not in registry:
        return None, [Problem(key, registry.unknown_message(name))]
    if not load and ":" not in name:
        return None, []
    try:
        return registry.load(name), []
    except ValueError as exc:
        return None, [Problem(key, str(exc))]


def registry_checks(scenario: Scenario) -> list[Problem]:
    """Check the scenario's named components exist and the strategy takes its params."""
    from netfl.selection.base import strategy_params_problems

    cls, problems = _named_problems(
        "selection.name", strategies(), scenario.selection.name, load=True
    )
    if cls is not None:
        problems += strategy_params_problems(cls, scenario.selection.params, scenario)
    if scenario.learning is not None:
        from netfl.config.learning import DATASET_PARAMS
        from netfl.learning import DATASETS

        learning = scenario.learning
        problems += _named_problems("learning.dataset", datasets(), learning.dataset)[1]
        problems += _named_problems("learning.model", models(), learning.model)[1]
        builtin = learning.dataset in DATASETS and learning.dataset not in DATASET_PARAMS
        if builtin and learning.dataset_params:
            message = f"dataset {learning.dataset} takes no parameters"
            problems.append(Problem("learning.dataset_params", message))
    return problems + _aggregation_problems(scenario)


def _aggregation_problems(scenario: Scenario) -> list[Problem]:
    """The rule exists, takes its params and runs under the protocol."""
    from netfl.learning.aggregation.base import SYNCHRONOUS, params_problems

    config = scenario.fl.aggregation
    rule, problems = _named_problems("fl.aggregation.name", aggregations(), config.name, load=True)
    if rule is None:
        return problems
    problems += [
        Problem(f"fl.aggregation.params.{key}", message)
        for key, message in params_problems(rule, config.params)
    ]
    if not problems and aggregations().plugin_target(config.name) is not None:
        problems += _rule_problems(rule, config.name, config.params)
    protocols = getattr(rule, "protocols", SYNCHRONOUS)
    if scenario.fl.protocol not in protocols:
        problems.append(
            Problem(
                "fl.aggregation.name",
                f"'{config.name}' does not run under fl.protocol {scenario.fl.protocol}; it"
                f" runs under {', '.join(sorted(protocols))} (docs/aggregation.md)",
            )
        )
    return problems


#: Packages whose code is never a plug-in's own, even when a plug-in lives in one of them.
_NOT_PLUGIN_PACKAGES = frozenset({"netfl", "channel_models", "torch", "numpy", "scipy", "simpy"})


def _rule_problems(rule: Any, name: str, params: Mapping[str, Any]) -> list[Problem]:
    """A plug-in rule checked against the contract (it imports torch: plug-ins only; the
    test suite checks netfl's own rules)."""
    from netfl.learning.aggregation.base import validate_params
    from netfl.learning.aggregation.check import RuleCheckError, check_rule

    try:
        check_rule(rule, validate_params(rule, params))
    except RuleCheckError as exc:
        return [Problem("fl.aggregation.name", f"'{name}' {exc}")]
    return []


def _plugin_modules(scenario: Scenario) -> dict[str, tuple[str, str]]:
    """The module of every plug-in the scenario names -> (its key, its name)."""
    named = [
        ("selection.name", strategies(), scenario.selection.name),
        ("fl.aggregation.name", aggregations(), scenario.fl.aggregation.name),
    ]
    channel = getattr(scenario.radio, "channel_model", None)
    if isinstance(channel, str):
        named.append(("radio.channel_model", channel_models(), channel))
    if scenario.learning is not None:
        named.append(("learning.model", models(), scenario.learning.model))
        named.append(("learning.dataset", datasets(), scenario.learning.dataset))
    modules = {}
    for key, registry, name in named:
        target = registry.plugin_target(name)
        if target is not None:
            modules[target.partition(":")[0]] = (key, name)
    return modules


def plugin_problem(exc: BaseException, scenario: Scenario) -> Problem | None:
    """The scenario key of the plug-in that raised ``exc`` (or called ``sys.exit``): the
    innermost frame of its traceback (or of the exceptions it was raised from) in a
    plug-in's module or its package; None when no plug-in's code is on it.

    A plug-in's failure is bad input naming its key (exit 2), whatever it raised, rather
    than "the run failed" (exit 1), or, for ``sys.exit(0)``, a silent success."""
    modules = _plugin_modules(scenario)
    if not modules:
        return None
    packages = {
        module.split(".")[0]: who
        for module, who in modules.items()
        if "." in module and module.split(".")[0] not in _NOT_PLUGIN_PACKAGES
    }
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        found = None
        tb = cause.__traceback__
        while tb is not None:
            module = str(tb.tb_frame.f_globals.get("__name__", ""))
            who = modules.get(module) or packages.get(module.split(".")[0])
            found = who or found
            tb = tb.tb_next
        if found is not None:
            key, name = found
            return Problem(key, f"the plug-in '{name}' {raised(exc)}")
        cause = cause.__cause__ or cause.__context__
    return None


def plugin_error(exc: BaseException, scenario: Scenario) -> BaseException:
    """``exc`` as bad input naming the plug-in it came from (:func:`plugin_problem`); a
    ``sys.exit`` from elsewhere as a failure (it must not end the process as a success);
    otherwise ``exc`` itself."""
    from netfl.errors import NetflError, ScenarioError

    if isinstance(exc, NetflError):
        return exc
    problem = plugin_problem(exc, scenario)
    if problem is not None:
        return ScenarioError([problem])
    if isinstance(exc, SystemExit):
        return RuntimeError(f"sys.exit({exc.code!r}) was called during the run")
    return exc
