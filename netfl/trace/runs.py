"""Several runs (:class:`Runs`): their tables concatenated, their parameters as columns.

The runs' scenario parameters become flattened dotted columns (``fl.clients_per_round``,
``selection.params.weighted``), which is what sweeps and comparisons group by. Open runs
with :func:`netfl.load_runs` (:func:`netfl.trace.run.load_runs`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, TypeVar, overload

import numpy as np
import pandas as pd

#: Scenario keys that do not change what a run computes (left out of configurations).
NON_CONFIG_PREFIXES = ("name", "output.", "seed")


class RunTables(Protocol):
    """What :class:`Runs` reads of a run (:class:`netfl.trace.run.Run` has it)."""

    @property
    def id(self) -> str: ...
    @property
    def path(self) -> Path: ...
    @property
    def params(self) -> dict[str, Any]: ...
    @property
    def summary(self) -> pd.Series: ...
    @property
    def rounds(self) -> pd.DataFrame: ...
    @property
    def clients(self) -> pd.DataFrame: ...
    @property
    def timeline(self) -> pd.DataFrame: ...


R = TypeVar("R", bound=RunTables)


class Runs(Sequence[R]):
    """Several runs, with their tables concatenated and their parameters as columns.

    Concatenated tables (``rounds``, ``clients``, ``timeline``) get a ``run`` column (the
    run's id) and one column per *varying* parameter (dotted scenario keys whose value
    differs between the runs, plus ``seed``). ``params`` has every parameter.
    """

    def __init__(self, runs: Iterable[R]) -> None:
        self.runs = list(runs)
        names = [r.id for r in self.runs]
        unique = len(set(names)) == len(names)
        self.ids = names if unique else [str(r.path) for r in self.runs]

    @overload
    def __getitem__(self, index: int) -> R: ...
    @overload
    def __getitem__(self, index: slice) -> Runs[R]: ...
    def __getitem__(self, index: int | slice) -> R | Runs[R]:
        if isinstance(index, slice):
            return Runs(self.runs[index])
        return self.runs[index]

    def __len__(self) -> int:
        return len(self.runs)

    def __iter__(self) -> Iterator[R]:
        return iter(self.runs)

    def __repr__(self) -> str:
        return f"Runs({len(self)} runs)"

    @cached_property
    def params(self) -> pd.DataFrame:
        """One row per run (index: run id), one column per flattened scenario key."""
        rows = [r.params for r in self.runs]
        # convert_dtypes keeps a flag absent in some runs boolean (<NA>), not float.
        return pd.DataFrame(rows, index=pd.Index(self.ids, name="run")).convert_dtypes()

    @cached_property
    def varying(self) -> list[str]:
        """Scenario keys whose value differs between the runs (NaN = key absent)."""
        params = self.params
        keys = []
        for key in params.columns:
            column = params[key].map(lambda v: "<absent>" if _missing(v) else repr(v))
            if column.nunique() > 1:
                keys.append(key)
        return keys

    @property
    def config_keys(self) -> list[str]:
        """Varying keys that define a configuration (the seed, name and output left out)."""
        return [k for k in self.varying if not k.startswith(NON_CONFIG_PREFIXES)]

    def configuration(self) -> pd.Series:
        """Per run, a label of its configuration: ``"key=value, ..."`` over :attr:`config_keys`
        that the run sets; a run that sets none of them (a baseline without the section the
        others add) is ``"key unset, ..."``; and when every run has one configuration, the
        runs' scenario ``name`` (``"one configuration"`` if they differ in it)."""
        keys = self.config_keys
        params = self.params
        if not keys:
            names = {str(v) for v in params["name"]} if "name" in params else set()
            common = names.pop() if len(names) == 1 else "one configuration"
            return pd.Series(common, index=params.index, name="configuration")
        labels = []
        for i in params.index:
            present = [k for k in keys if not _missing(params.at[i, k])]
            shown = [f"{k}={_show(params.at[i, k])}" for k in present]
            labels.append(", ".join(shown) or ", ".join(f"{k} unset" for k in keys))
        return pd.Series(labels, index=params.index, name="configuration")

    def _tag(self, frames: list[pd.DataFrame]) -> pd.DataFrame:
        keys = list(dict.fromkeys(["seed", *self.varying]))
        params = self.params
        tagged = []
        for position, (run_id, frame) in enumerate(zip(self.ids, frames, strict=True)):
            frame = frame.copy()
            frame["run"] = run_id
            # The run's value on every row, by position: a label lookup per row is slow
            # for timelines of millions of rows.
            rows = np.full(len(frame), position)
            for key in keys:
                frame[key] = params[key].iloc[rows].array
            tagged.append(frame)
        if not tagged:
            return pd.DataFrame()
        out = pd.concat(tagged, ignore_index=True)
        first = ["run", *[k for k in keys if k in out.columns]]
        return out[first + [c for c in out.columns if c not in first]]

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row per run: ``run``, the configuration, varying parameters and ``summary.json``."""
        frames = [r.summary.to_frame().T.reset_index(drop=True) for r in self.runs]
        out = self._tag(frames)
        if len(out):
            out.insert(1, "configuration", self.configuration().to_numpy())
        return out

    @cached_property
    def rounds(self) -> pd.DataFrame:
        return self._tag([r.rounds for r in self.runs])

    @cached_property
    def clients(self) -> pd.DataFrame:
        return self._tag([r.clients for r in self.runs])

    @cached_property
    def timeline(self) -> pd.DataFrame:
        return self._tag([r.timeline for r in self.runs])


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _show(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
