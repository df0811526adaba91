"""The client-selection interface: :class:`Strategy`, its context and its feedback.

A strategy is pure decision logic. Each round the server calls ``select(ctx)`` with what
the strategy may know (the candidates that answered the resource request and what they
reported), then ``observe(feedback)`` with what the server saw. A strategy never reaches
into the simulator; it draws randomness only from the generator given to ``setup``.

Writing one: subclass :class:`Strategy`, take your YAML ``params`` as typed keyword
arguments of ``__init__`` (they are validated against the signature), override ``select``
and, if it learns, ``observe``. Declare learning signals you need in ``requires``.
Optional hooks: ``scores()`` exposes internal per-client values (UCB scores, estimates,
virtual-queue backlogs) that the server records after each ``select`` into
``strategy.parquet``; set ``may_select_fewer = True`` on a strategy that may select fewer
than the budget by design (deadline-driven ones).
A strategy that must hear from some candidates before it selects (pow-d's loss poll,
GPFL's initial projections) overrides ``choose_polled`` and names what the polled clients
compute in ``requires`` too (``"poll_loss"`` or ``"update_vector"``): ``requires`` is the
one declaration of what a strategy needs; ``poll_signal`` is derived from it.
"""

from __future__ import annotations

import difflib
import inspect
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import MISSING, dataclass, field
from dataclasses import fields as dataclass_fields
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np
from pydantic import ConfigDict, ValidationError, create_model

from netfl.errors import Problem

if TYPE_CHECKING:
    from netfl.config import Scenario

#: ``Strategy.scores()``: score name -> {client id: value}.
Scores = Mapping[str, Mapping[int, float]]

#: Learning signals a strategy may declare in ``requires``.
LEARNING_SIGNALS = frozenset({"local_loss", "update_vector", "poll_loss", "data_context"})

#: What a polled client computes and sends back: the members of ``LEARNING_SIGNALS`` that,
#: declared in ``requires``, also say what ``choose_polled``'s clients compute
#: (``Strategy.poll_signal``).
POLL_SIGNALS = frozenset({"poll_loss", "update_vector"})


def _frozen(array: np.ndarray) -> np.ndarray:
    """A read-only view (no copy: the server hands over arrays it does not touch again;
    a strategy cannot write through the view)."""
    array = np.asarray(array)
    if not array.flags.writeable:
        return array  # read-only already (the server hands some out as such)
    view = array.view()
    view.setflags(write=False)
    return view


@dataclass(frozen=True)
class PopulationInfo:
    """What a strategy knows about the whole population by design."""

    n_clients: int
    budget: int
    n_samples: np.ndarray
    rounds: int | None = None
    deadline_s: float | None = None
    #: Size of the model on the air, bits (None where the scenario does not say).
    model_size_bits: float | None = None
    #: Updates the server aggregates per round (m); below ``budget`` with over-selection.
    target: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_samples", _frozen(self.n_samples))


@dataclass(frozen=True)
class SelectionContext:
    """Input of ``Strategy.select`` for one round (arrays are read-only).

    Attributes
    ----------
    round
        Round index, from 0.
    now_s
        Simulated time at selection, seconds.
    candidates
        Ids of the clients that answered the resource request and are available.
        ``n_candidates`` and ``candidate(j)`` are ``len(candidates)`` and
        ``int(candidates[j])``: a strategy that reads no more than these (random
        selection) lets a deferred context (:meth:`deferred`) skip gathering them.
    budget
        How many clients to select at most: |S_t|. Without over-selection it equals
        ``target``; with ``fl.over_selection`` o it is ceil(m (1 + o)) and the server keeps
        the first ``target`` updates that arrive.
    update_time_s, upload_time_s
        Per candidate: the model update time (from receiving the model to the update being
        ready: cold start, queue wait and compute) and upload time (the transfer alone) the
        client reports in the resource request. A client that completes a round reports the
        times measured in it; a client that was selected and did not complete (deadline
        miss, drop, cancellation) raises each report to at least the time it was seen to
        spend in that step before it left (``RoundFeedback.observed_update_time_s``), so a
        straggler never looks faster than it was observed to be. 0 s only for a client never
        observed in that step (the first-participation rule of Yoshida et al. 2020,
        Sec. II). The rule is in ``docs/protocol.md`` ("What clients report").
    misses
        Per candidate: how many rounds it was selected in and left without completing
        because of the deadline or because it dropped out (cancellations by over-selection
        are not counted).
    n_samples
        Per candidate: its number of training samples.
    deadline_s
        Round deadline relative to the round's start, or None.
    features
        Extra per-candidate arrays, aligned with candidates, keyed by
        :class:`netfl.features.Feature` (every key and when it is reported:
        ``docs/features.md``, generated from ``netfl/features.py``).
    target
        m, the papers' clients per round: how many updates the server aggregates
        (``fl.clients_per_round``; None: ``budget``). Strategies whose paper sizes
        something against m (pow-d's d = 2m) use ``target``, not ``budget``.
    """

    round: int
    now_s: float
    candidates: np.ndarray
    budget: int
    update_time_s: np.ndarray
    upload_time_s: np.ndarray
    n_samples: np.ndarray
    deadline_s: float | None = None
    features: Mapping[str, np.ndarray] = field(default_factory=dict)
    target: int | None = None
    misses: np.ndarray = field(default_factory=lambda: np.array([], dtype=np.int64))

    def __post_init__(self) -> None:
        if len(self.misses) != len(self.candidates):
            object.__setattr__(self, "misses", np.zeros(len(self.candidates), dtype=np.int64))
        for name in ("candidates", *DEFERRED_COLUMNS):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        object.__setattr__(self, "features", {k: _frozen(v) for k, v in self.features.items()})

    @classmethod
    def deferred(
        cls,
        columns: Callable[[str], np.ndarray],
        feature_names: Sequence[str],
        feature: Callable[[str], np.ndarray],
        **fields: Any,
    ) -> SelectionContext:
        """A context whose per-candidate arrays are computed when a strategy first reads
        them: ``columns(name)`` for :data:`DEFERRED_COLUMNS`, ``feature(name)`` for each of
        ``feature_names``. For servers that select often among many candidates (the
        asynchronous protocols: a selection per freed slot), where a strategy such as
        random selection reads none of them. ``fields`` are the other fields; the caller
        makes sure the values do not change once the context is made (they are read
        later). ``candidates`` may be a :class:`CandidateSource` instead of an array: the
        array is then gathered when a strategy first reads it."""
        ctx = object.__new__(cls)
        state = ctx.__dict__  # frozen: filled directly, as object.__setattr__ would
        for name, default, make in _defaults(cls):  # the fields not given
            if name not in fields:
                state[name] = default if make is None else make()
        state.update(fields)
        candidates = fields["candidates"]
        if isinstance(candidates, np.ndarray):
            state["candidates"] = _frozen(candidates)
        else:  # gathered when first read
            del state["candidates"]
            state["_candidate_source"] = candidates
        state["features"] = _DeferredFeatures(feature_names, feature)
        state["_columns"] = columns
        return ctx

    if not TYPE_CHECKING:  # typed as the fields above

        def __getattr__(self, name: str) -> Any:
            # Only called for an attribute not set: a deferred array read the first time.
            state = self.__dict__
            if name == "candidates" and "_candidate_source" in state:
                value = _frozen(state["_candidate_source"].gather())
            elif name in DEFERRED_COLUMNS and "_columns" in state:
                value = _frozen(state["_columns"](name))
            else:
                raise AttributeError(name)
            state[name] = value
            return value

    @property
    def n_candidates(self) -> int:
        """``len(candidates)``, without gathering them in a deferred context."""
        source = self.__dict__.get("_candidate_source")
        return len(self.candidates) if source is None else len(source)

    def candidate(self, j: int) -> int:
        """``int(candidates[j])``, without gathering them all in a deferred context."""
        source = self.__dict__.get("_candidate_source")
        return int(self.candidates[j]) if source is None else source.at(j)

    def __getstate__(self) -> dict[str, Any]:
        """Every array computed (a pickled context does not hold the server)."""
        state = {f.name: getattr(self, f.name) for f in dataclass_fields(self)}
        state["features"] = dict(self.features)
        return state


class CandidateSource(Protocol):
    """Candidates a deferred context gathers only when a strategy reads them
    (:meth:`SelectionContext.deferred`): their number, the ``j``-th of them and the sorted
    array, as they were when the context was made."""

    def __len__(self) -> int: ...

    def at(self, j: int) -> int: ...

    def gather(self) -> np.ndarray: ...


_DEFAULTS: dict[type, tuple[tuple[str, Any, Callable[[], Any] | None], ...]] = {}


def _defaults(cls: type[SelectionContext]) -> tuple[tuple[str, Any, Callable[[], Any] | None], ...]:
    """``(name, default, default factory)`` of the fields :meth:`SelectionContext.deferred`
    fills with their defaults when not given (the deferred columns and the features are
    its own), found once per class."""
    found = _DEFAULTS.get(cls)
    if found is None:
        found = _DEFAULTS[cls] = tuple(
            (
                spec.name,
                spec.default,
                None if spec.default_factory is MISSING else spec.default_factory,
            )
            for spec in dataclass_fields(cls)
            if spec.name not in (*DEFERRED_COLUMNS, "features")
        )
    return found


#: The per-candidate arrays of a :class:`SelectionContext` that
#: :meth:`SelectionContext.deferred` computes when first read.
DEFERRED_COLUMNS = ("update_time_s", "upload_time_s", "n_samples", "misses")


class _DeferredFeatures(Mapping[str, np.ndarray]):
    """Features computed when first read (read-only arrays, kept once computed)."""

    def __init__(self, names: Sequence[str], make: Callable[[str], np.ndarray]) -> None:
        self._names = names
        self._make = make
        self._made: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        made = self._made.get(name)
        if made is None:
            if name not in self._names:
                raise KeyError(name)
            made = self._made[name] = _frozen(self._make(name))
        return made

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


@dataclass(frozen=True)
class RoundFeedback:
    """Input of ``Strategy.observe``: what the server observed in a round.

    Per-client arrays are aligned with ``selected`` (the selection order); NaN where the
    server did not observe the value (e.g. a client that dropped out).

    ``update_time_s`` runs from the end of the client's download to its update being ready
    (``cold_start_s + queue_wait_s + compute_time_s``); ``upload_time_s`` is the transfer
    alone (after ``upload_wait_s``, the wait for its turn); ``exchange_time_s`` runs from
    the start of the distribution step to the end of the client's upload (RBCS-F's
    tau_{t,n}, Huang et al. 2021 eq. (1)). ``status`` is ``completed``, ``deadline_miss``,
    ``dropped``
    (the client left) or ``cancelled`` (over-selection); ``completed`` is its boolean
    form and ``deadline_met`` is False exactly for ``deadline_miss``. ``features`` holds the
    selected clients' context features as the strategy saw them in ``select``.

    ``observed_update_time_s`` and ``observed_upload_time_s`` are the times the server saw
    each client spend in the step: the measured time where the step finished, else (a
    client that left during the step) the time from the step's start to its leaving, a
    lower bound of the true time; NaN only where the client never reached the step. A
    client that left before receiving the model is counted as updating from the exchange's
    start. Strategies that schedule on observed times use these, so a straggler that missed
    the deadline is not mistaken for a fast client (``docs/protocol.md``). Left empty, they
    default to ``update_time_s`` and ``upload_time_s``.
    """

    round: int
    selected: np.ndarray
    completed: np.ndarray
    download_time_s: np.ndarray
    update_time_s: np.ndarray
    upload_time_s: np.ndarray
    exchange_time_s: np.ndarray
    round_time_s: float
    local_loss: np.ndarray
    global_accuracy: float = math.nan
    global_loss: float = math.nan
    signals: Mapping[str, Any] = field(default_factory=dict)
    status: np.ndarray = field(default_factory=lambda: np.array([], dtype=str))
    deadline_met: np.ndarray = field(default_factory=lambda: np.array([], dtype=bool))
    cold_start_s: np.ndarray = field(default_factory=lambda: np.array([]))
    queue_wait_s: np.ndarray = field(default_factory=lambda: np.array([]))
    compute_time_s: np.ndarray = field(default_factory=lambda: np.array([]))
    upload_wait_s: np.ndarray = field(default_factory=lambda: np.array([]))
    features: Mapping[str, np.ndarray] = field(default_factory=dict)
    observed_update_time_s: np.ndarray = field(default_factory=lambda: np.array([]))
    observed_upload_time_s: np.ndarray = field(default_factory=lambda: np.array([]))

    def __post_init__(self) -> None:
        for observed, measured in (
            ("observed_update_time_s", "update_time_s"),
            ("observed_upload_time_s", "upload_time_s"),
        ):
            if len(getattr(self, observed)) != len(self.selected):
                object.__setattr__(self, observed, getattr(self, measured))
        for name in (
            "selected",
            "completed",
            "download_time_s",
            "update_time_s",
            "upload_time_s",
            "exchange_time_s",
            "local_loss",
            "status",
            "deadline_met",
            "cold_start_s",
            "queue_wait_s",
            "compute_time_s",
            "upload_wait_s",
            "observed_update_time_s",
            "observed_upload_time_s",
        ):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        object.__setattr__(self, "features", {k: _frozen(v) for k, v in self.features.items()})


class Strategy(ABC):
    """Base class of client-selection strategies (see the module docstring)."""

    #: Learning signals the strategy needs (subset of ``LEARNING_SIGNALS``).
    requires: ClassVar[frozenset[str]] = frozenset()
    #: True if ``select`` may return fewer than ``min(budget, candidates)`` by design
    #: (a class attribute; a strategy whose parameters decide it may set it per instance).
    may_select_fewer: bool = False
    #: True if the strategy works under the asynchronous protocols (fedasync, fedbuff):
    #: there ``select`` is called whenever training slots free, with ``ctx.budget`` the
    #: free slots and ``ctx.candidates`` the available devices not already training,
    #: ``ctx.round`` counts these calls, and ``observe`` gets one feedback per global
    #: model version with the updates it applied and the clients that left since the
    #: previous version (``docs/protocol.md``). A strategy that polls, or whose
    #: reasoning needs whole synchronous rounds, leaves it False; the scenario is refused.
    supports_async: ClassVar[bool] = False

    info: PopulationInfo
    rng: np.random.Generator

    def setup(self, info: PopulationInfo, rng: np.random.Generator) -> None:
        """Called once before the first round."""
        self.info = info
        self.rng = rng

    @abstractmethod
    def select(self, ctx: SelectionContext) -> Sequence[int]:
        """Return the ids to select: distinct candidates, at most ``ctx.budget``."""

    def observe(self, feedback: RoundFeedback) -> None:  # noqa: B027 - optional hook
        """Learn from a finished round (default: nothing)."""

    @property
    def observes(self) -> bool:
        """Whether ``observe`` does anything (the class overrides it): a server may skip
        building feedback nobody reads (one per global version under asynchrony)."""
        return type(self).observe is not Strategy.observe

    def scores(self) -> Scores:
        """Internal per-client values behind the latest ``select`` (default: none).

        Returns ``{name: {client: value}}``, e.g. ``{"ucb": {3: 0.7, 8: 0.2}}``. The server
        calls it right after each ``select`` and records every value with the round.
        """
        return {}

    #: What each client returned by ``choose_polled`` computes and uploads: derived from
    #: ``requires`` when the class is defined (its one member of ``POLL_SIGNALS``; None
    #: when it declares none). Never set it: declare the signal in ``requires``.
    poll_signal: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("poll_signal")
        if own is not None and not isinstance(own, property):
            raise TypeError(
                f"{cls.__qualname__} sets poll_signal = {own!r}: declare what polled clients"
                f" compute in requires instead (one of {sorted(POLL_SIGNALS)})"
            )
        if isinstance(own, property):  # a wrapper that answers for another strategy
            return
        polls = sorted(frozenset(cls.requires) & POLL_SIGNALS)
        if len(polls) > 1:
            raise TypeError(f"{cls.__qualname__} requires {polls}: a strategy polls for one signal")
        cls.poll_signal = polls[0] if polls else None

    def choose_polled(self, ctx: SelectionContext) -> Sequence[int]:
        """Candidates to poll before ``select`` in this round (default: none).

        The server's side of the contract, when this returns a non-empty list:

        1. Poll exactly those clients (distinct ids among ``ctx.candidates``; anything
           else is a contract error) in this round, before selection, and simulate the
           cost in time and bits: the global model (model-size bits) goes down to each
           polled client; then, by ``poll_signal`` (the poll signal in ``requires``;
           polling without declaring one is a contract error),

           - ``"poll_loss"``: the device evaluates the global model's mean loss on its
             local data (a forward pass over its samples) and uploads one number
             (32 bits);
           - ``"update_vector"``: the device runs the local update a selected client
             would run and uploads the update ``w_local - w_global`` (model-size bits).
             The polled update is *not* aggregated into the global model.

        2. Wait for the answers (until the round deadline at most), then call
           ``select`` once with a copy of ``ctx`` whose ``features`` gain, aligned with
           ``ctx.candidates`` and NaN for candidates not polled or that did not answer:
           ``features["loss"]`` (shape ``(n,)``) for ``"poll_loss"``, or
           ``features["update_vector"]`` (shape ``(n, P)``) for ``"update_vector"``.

        The server calls ``choose_polled`` exactly once per round, right before
        ``select``, even when it returns nothing.
        """
        return ()

    @classmethod
    def scenario_problems(cls, scenario: Scenario) -> list[Problem]:
        """Problems with using this strategy in ``scenario`` (override to add checks)."""
        if scenario.fl.is_async and not cls.supports_async:
            return [
                Problem(
                    "selection.name",
                    f"'{scenario.selection.name}' does not support asynchronous protocols"
                    f" (fl.protocol {scenario.fl.protocol}); strategies that do: see"
                    " `netfl list strategies --verbose`",
                )
            ]
        if cls.requires and scenario.learning is None:
            needs = ", ".join(sorted(cls.requires))
            return [
                Problem(
                    "selection.name",
                    f"'{scenario.selection.name}' needs learning signals ({needs}) but"
                    " learning is none",
                )
            ]
        return []


def _params_model(cls: type[Strategy]) -> Any:
    fields: dict[str, Any] = {}
    # eval_str: ``from __future__ import annotations`` leaves strings; pydantic needs types.
    signature = inspect.signature(cls.__init__, eval_str=True)
    for name, param in signature.parameters.items():
        if name == "self" or param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        annotation = param.annotation if param.annotation is not param.empty else Any
        default = param.default if param.default is not param.empty else ...
        fields[name] = (annotation, default)
    return create_model(
        f"{cls.__name__}Params",
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True),
        **fields,
    )


def validate_params(cls: type[Strategy], params: Mapping[str, Any]) -> dict[str, Any]:
    """Validate ``params`` against ``cls.__init__``; raises ``ValidationError``."""
    return dict(_params_model(cls).model_validate(dict(params)))


def strategy_params_problems(
    cls: Any, params: Mapping[str, Any], scenario: Scenario
) -> list[Problem]:
    if not (isinstance(cls, type) and issubclass(cls, Strategy)):
        return [Problem("selection.name", f"{cls!r} is not a netfl Strategy subclass")]
    try:
        validate_params(cls, params)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            key = ".".join(str(p) for p in err["loc"])
            message = err["msg"]
            if err["type"] == "extra_forbidden":
                accepted = [p for p in _params_model(cls).model_fields]
                lower = {name.lower(): name for name in accepted}
                close = [
                    lower[m]
                    for m in difflib.get_close_matches(key.lower(), list(lower), n=1, cutoff=0.6)
                ]
                hint = f"; did you mean '{close[0]}'?" if close else ""
                message = (
                    "not a parameter of this strategy"
                    + hint
                    + "; it takes: "
                    + (", ".join(accepted) or "no parameters")
                )
            problems.append(Problem(f"selection.params.{key}", message))
        return problems
    return cls.scenario_problems(scenario)


def make_strategy(cls: type[Strategy], params: Mapping[str, Any]) -> Strategy:
    """Instantiate a strategy from validated YAML params."""
    return cls(**validate_params(cls, params))
