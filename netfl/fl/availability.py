"""When devices are available: always, Bernoulli per round, an on/off Markov process, a trace.

Each model answers two questions for a group's devices (indexed from 0 within the group):
``available(local, now_s)``: which are available now; and, for available ones,
``leaves_at(local, now_s)``: when each will next become unavailable (``inf`` if not before
the end of the round as the model sees it). The server drops a selected client at that time:
its work is lost. Queries must come in non-decreasing time.

The Markov model is sampled lazily and exactly: between queries only the two-state
transition probability over the elapsed time is needed,
P(on at t + d | on at t) = pi + (1 - pi) e^{-(a + b) d}, P(on at t + d | off at t) =
pi (1 - e^{-(a + b) d}), with a = 1 / mean_on, b = 1 / mean_off and pi = b / (a + b); and an
available device's remaining on-time is exponential (memoryless), drawn when asked for.
"""

from __future__ import annotations

import csv
import itertools
import math
from pathlib import Path
from typing import Protocol

import numpy as np

from netfl.config.devices import (
    AlwaysAvailable,
    BernoulliAvailability,
    MarkovAvailability,
    TraceAvailability,
)
from netfl.errors import ScenarioError


class AvailabilityModel(Protocol):
    def start_round(self) -> None:
        """Redraw per-round availability (Bernoulli)."""
        ...

    def available(self, local: np.ndarray, now_s: float) -> np.ndarray:
        """Boolean mask: which of the devices ``local`` are available at ``now_s``."""
        ...

    def leaves_at(self, local: np.ndarray, now_s: float) -> np.ndarray:
        """For devices available at ``now_s``: when they next become unavailable."""
        ...


class AlwaysOn:
    def start_round(self) -> None:
        return None

    def available(self, local: np.ndarray, now_s: float) -> np.ndarray:
        return np.ones(len(local), dtype=bool)

    def leaves_at(self, local: np.ndarray, now_s: float) -> np.ndarray:
        return np.full(len(local), math.inf)


class BernoulliPerRound:
    """Available in a round with probability p, independently (Huang et al. 2021 Sec. 6.1: p =
    0.8)."""

    def __init__(self, p: float, count: int, rng: np.random.Generator) -> None:
        self.p = p
        self.count = count
        self.rng = rng
        self.on = np.ones(count, dtype=bool)

    def start_round(self) -> None:
        # Drawn for every device, selected or not, so the draws do not depend on the strategy.
        self.on = self.rng.random(self.count) < self.p

    def available(self, local: np.ndarray, now_s: float) -> np.ndarray:
        return self.on[local]

    def leaves_at(self, local: np.ndarray, now_s: float) -> np.ndarray:
        return np.full(len(local), math.inf)


class MarkovOnOff:
    """Two-state continuous-time Markov chain per device, stationary at time 0."""

    def __init__(
        self, mean_on_s: float, mean_off_s: float, count: int, rng: np.random.Generator
    ) -> None:
        self.mean_on_s = mean_on_s
        self.rate_sum = 1 / mean_on_s + 1 / mean_off_s
        self.pi_on = mean_on_s / (mean_on_s + mean_off_s)
        self.rng = rng
        self.t_known = np.zeros(count)
        self.on = rng.random(count) < self.pi_on
        self.t_leave = np.full(count, math.nan)  # drawn end of the current on-period

    def start_round(self) -> None:
        return None

    def available(self, local: np.ndarray, now_s: float) -> np.ndarray:
        local = np.asarray(local, dtype=np.int64)
        leave = self.t_leave[local]
        still_on = leave > now_s  # NaN compares False
        left = leave <= now_s
        gone = local[left]
        self.t_known[gone] = leave[left]
        self.on[gone] = False
        self.t_leave[gone] = math.nan
        free = local[~still_on]
        decay = np.exp(-self.rate_sum * (now_s - self.t_known[free]))
        p_on = self.pi_on + (self.on[free] - self.pi_on) * decay
        self.on[free] = self.rng.random(len(free)) < p_on
        self.t_known[free] = now_s
        return np.asarray(self.on[local], dtype=bool)

    def leaves_at(self, local: np.ndarray, now_s: float) -> np.ndarray:
        local = np.asarray(local, dtype=np.int64)
        if not np.all(self.on[local]):
            raise ValueError("leaves_at() asked for devices that are not available")
        undrawn = local[np.isnan(self.t_leave[local])]
        self.t_leave[undrawn] = now_s + self.rng.exponential(self.mean_on_s, len(undrawn))
        return np.asarray(self.t_leave[local], dtype=float)


class TraceOnOff:
    """Availability intervals from a trace: available in [start, end) of each interval."""

    def __init__(self, intervals: list[tuple[np.ndarray, np.ndarray]]) -> None:
        self.intervals = intervals

    def start_round(self) -> None:
        return None

    def _current(self, client: int, now_s: float) -> float:
        """End of the interval containing ``now_s``, or NaN if none does."""
        starts, ends = self.intervals[client]
        i = int(np.searchsorted(starts, now_s, side="right")) - 1
        return float(ends[i]) if i >= 0 and now_s < ends[i] else math.nan

    def available(self, local: np.ndarray, now_s: float) -> np.ndarray:
        return np.array([not math.isnan(self._current(int(c), now_s)) for c in local], bool)

    def leaves_at(self, local: np.ndarray, now_s: float) -> np.ndarray:
        return np.array([self._current(int(c), now_s) for c in local], dtype=float)


def load_trace(path: str, key: str, first_client: int, count: int) -> TraceOnOff:
    """Read a ``client,start_s,end_s`` CSV for the clients ``first_client .. + count - 1``.

    Raises
    ------
    ScenarioError
        Naming the file, the line and ``key`` for a missing file or column, a value that is
        not a number, a negative or empty interval, overlapping intervals of one client, or
        a client id outside the group.
    """
    rows: list[list[tuple[float, float, int]]] = [[] for _ in range(count)]
    last = first_client + count - 1
    try:
        with Path(path).open(newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = [name.strip() for name in next(reader, [])]
            columns = _columns(header, path, key)
            for row in reader:
                line = reader.line_num
                if not row or all(not cell.strip() for cell in row):
                    continue
                client, start, end = _parse_row(row, columns, path, key, line)
                if not first_client <= client <= last:
                    raise ScenarioError.single(
                        key,
                        f"unknown client id {client}: this group has clients"
                        f" {first_client}..{last}",
                        path,
                        line=line,
                    )
                if start < 0 or end <= start:
                    raise ScenarioError.single(
                        key,
                        f"client {client}: interval [{start:g}, {end:g}) is negative or empty"
                        " (need 0 <= start_s < end_s)",
                        path,
                        line=line,
                    )
                rows[client - first_client].append((start, end, line))
    except OSError as exc:
        raise ScenarioError.single(key, f"cannot read the availability trace: {exc}") from exc
    return TraceOnOff(
        [_sorted_disjoint(r, first_client + i, path, key) for i, r in enumerate(rows)]
    )


def _columns(header: list[str], path: str, key: str) -> tuple[int, int, int]:
    names = {name.lower(): i for i, name in enumerate(header)}
    try:
        client = names["client"]
        start = names["start_s"] if "start_s" in names else names["start"]
        end = names["end_s"] if "end_s" in names else names["end"]
    except KeyError:
        raise ScenarioError.single(
            key,
            f"the header must name the columns client, start_s, end_s; got {header}",
            path,
            line=1,
        ) from None
    return client, start, end


def _parse_row(
    row: list[str], columns: tuple[int, int, int], path: str, key: str, line: int
) -> tuple[int, float, float]:
    try:
        cells = [row[i].strip() for i in columns]
        client = int(cells[0])
        start, end = float(cells[1]), float(cells[2])
    except (IndexError, ValueError):
        raise ScenarioError.single(
            key, f"expected client,start_s,end_s as numbers, got {row}", path, line=line
        ) from None
    if not (math.isfinite(start) and math.isfinite(end)):
        raise ScenarioError.single(key, "start_s and end_s must be finite", path, line=line)
    return client, start, end


def _sorted_disjoint(
    intervals: list[tuple[float, float, int]], client: int, path: str, key: str
) -> tuple[np.ndarray, np.ndarray]:
    intervals.sort()
    for (s0, e0, line0), (s1, e1, line1) in itertools.pairwise(intervals):
        if s1 < e0:
            raise ScenarioError.single(
                key,
                f"client {client}: interval [{s1:g}, {e1:g}) overlaps [{s0:g}, {e0:g}) of"
                f" line {line0}",
                path,
                line=line1,
            )
    starts = np.array([s for s, _, _ in intervals], dtype=float)
    ends = np.array([e for _, e, _ in intervals], dtype=float)
    return starts, ends


def build_availability(
    config: AlwaysAvailable | BernoulliAvailability | MarkovAvailability | TraceAvailability,
    key: str,
    first_client: int,
    count: int,
    rng: np.random.Generator,
) -> AvailabilityModel:
    """The availability model of one group (``key`` names it in errors)."""
    if isinstance(config, BernoulliAvailability):
        return BernoulliPerRound(config.p, count, rng)
    if isinstance(config, MarkovAvailability):
        return MarkovOnOff(config.mean_on_s, config.mean_off_s, count, rng)
    if isinstance(config, TraceAvailability):
        return load_trace(config.file, f"{key}.file", first_client, count)
    return AlwaysOn()
