"""Memory a scenario needs, estimated before anything is built, against what the machine has.

``netfl validate`` and ``simulate`` refuse a scenario whose estimate exceeds the machine's
physical memory (so a run does not die after minutes with ``MemoryError: Unable to allocate
745 GiB``) and warn when it exceeds the memory available now; ``netfl validate --print``
shows the estimate. The three terms that grow with a scenario:

- the population: per-device arrays (groups, compute rates, data sizes, availability,
  positions and link budgets) at :data:`BYTES_PER_DEVICE`;
- the timeline rows held in memory: about ``2 C n + 7 m + 4`` rows a round (each asked
  device adds its request and response; each selected client its selection, download,
  compute and upload rows; counted in ``docs/benchmarks.md``, "Protocol"), all of them
  until the run has :data:`TIMELINE_PART_ROWS`, then at most that and one round's (the
  timeline is written out in parts as the run goes, :mod:`netfl.trace.streaming`), at
  :data:`BYTES_PER_TIMELINE_ROW`;
- model copies for training: the global model, its aggregate, and one update per selected
  client (the batched backend trains them side by side), sized by ``fl.model_size_bits``
  when given.

Plus :data:`BASE_BYTES` for Python and the libraries. The constants are measured (see each);
the estimate is meant to be right within a factor of two, which is what refusing a run that
cannot fit needs.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from netfl.config import Scenario
from netfl.errors import Problem

BYTES_PER_DEVICE = 450
"""Resident bytes per device after the world is built (single LTE cell, timing only):
434 B measured with tracemalloc at 400,000 devices, 520 B at 100,000."""

BYTES_PER_TIMELINE_ROW = 150
"""Peak resident bytes per timeline row including the copies made when writing: issue 16's
runs (10,000 devices, 100 per round, 1,000 rounds) peaked at 2.9 GB with C = 1 and 0.76 GB
with C = 0.1, about 20.7 and 2.7 million rows over a 0.3 GB base: 125 and 170 B a row.
Streamed (:data:`TIMELINE_PART_ROWS`), the C = 1 run peaks at 369 MiB with about a million
rows held: 200 B a row over the 170 MiB of a run with a small timeline."""

TIMELINE_PART_ROWS = 1_000_000
"""Rows the timeline holds before a round's end writes them out:
:data:`netfl.trace.streaming.PART_ROWS` (repeated here so that ``netfl validate`` does not
import pyarrow and pandas; a test keeps the two equal)."""

BASE_BYTES = 300 * 2**20
"""Python with numpy, pydantic, SimPy and pyarrow before the first round (torch adds more)."""

ROWS_PER_ASKED_DEVICE = 2
ROWS_PER_SELECTED_CLIENT = 7
ROWS_PER_ROUND = 4
ROWS_PER_RUN = 1


@dataclass(frozen=True)
class MemoryEstimate:
    """Estimated peak resident bytes of a run, by term."""

    population_bytes: int
    timeline_bytes: int
    model_bytes: int
    timeline_rows: int
    """Rows of the whole run's timeline."""
    timeline_rows_held: int
    """The most rows held in memory at once (the timeline is written out in parts)."""

    @property
    def total_bytes(self) -> int:
        return BASE_BYTES + self.population_bytes + self.timeline_bytes + self.model_bytes

    def describe(self) -> str:
        """One line: the total and its terms."""
        model = f", model copies {format_bytes(self.model_bytes)}" if self.model_bytes else ""
        held = ""
        if self.timeline_rows_held < self.timeline_rows:
            held = f", {self.timeline_rows_held:,} held at a time"
        return (
            f"about {format_bytes(self.total_bytes)} (population"
            f" {format_bytes(self.population_bytes)}, timeline {self.timeline_rows:,} rows"
            f"{held} {format_bytes(self.timeline_bytes)}{model}, Python and libraries"
            f" {format_bytes(BASE_BYTES)})"
        )


def format_bytes(n_bytes: float) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= size:
            return f"{n_bytes / size:,.1f} {unit}"
    return f"{n_bytes:,.0f} B"


def estimate_memory(scenario: Scenario) -> MemoryEstimate:
    """The :class:`MemoryEstimate` of ``scenario`` (nothing is built or drawn)."""
    n_devices = scenario.devices.n_clients
    fl = scenario.fl
    selected = min(math.ceil(fl.clients_per_round * (1 + fl.over_selection)), n_devices)
    asked = math.ceil(n_devices * fl.request_fraction)
    rows_per_round = (
        ROWS_PER_ASKED_DEVICE * asked + ROWS_PER_SELECTED_CLIENT * selected + ROWS_PER_ROUND
    )
    rounds = fl.rounds if fl.rounds is not None else 1
    if fl.is_async:
        # A round is a version of buffer_in_force updates; the request goes out once per
        # concurrency client starts (netfl.fl.asynchronous), the selected clients' rows
        # come per update and the round rows per version.
        selected = min(fl.concurrency_in_force, n_devices)
        requests = ROWS_PER_ASKED_DEVICE * asked * fl.buffer_in_force / selected
        rows_per_round = math.ceil(
            ROWS_PER_SELECTED_CLIENT * fl.buffer_in_force + ROWS_PER_ROUND + requests
        )
    model_bytes = 0
    if scenario.learning is not None and fl.model_size_bits is not None:
        model_bytes = math.ceil(fl.model_size_bits / 8) * (selected + 2)
    rows = rows_per_round * rounds + ROWS_PER_RUN
    # Rows are written out at a round's end once TIMELINE_PART_ROWS are held (the last
    # round's rows, and the final evaluation's, stay until the end).
    held = min(rows, TIMELINE_PART_ROWS - 1 + rows_per_round + ROWS_PER_RUN)
    return MemoryEstimate(
        population_bytes=n_devices * BYTES_PER_DEVICE,
        timeline_bytes=held * BYTES_PER_TIMELINE_ROW,
        model_bytes=model_bytes,
        timeline_rows=rows,
        timeline_rows_held=held,
    )


def machine_memory() -> tuple[int, int | None]:
    """(physical bytes, bytes available now or None where the system does not say)."""
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return physical, int(line.split()[1]) * 1024
    except OSError:
        pass
    return physical, None


def _largest_term_key(scenario: Scenario, estimate: MemoryEstimate, physical: int) -> str:
    """The key to change: the device count when the population alone cannot fit (or is the
    largest term), else the term that grows most."""
    largest = max(estimate.timeline_bytes, estimate.model_bytes)
    if estimate.population_bytes > physical or estimate.population_bytes >= largest:
        counts = [group.count for group in scenario.devices.groups]
        return f"devices.groups.{counts.index(max(counts))}.count"
    if estimate.timeline_bytes >= estimate.model_bytes:
        # Streamed (more rows than held), the rows held grow with a round's, not the rounds.
        streamed = estimate.timeline_rows_held < estimate.timeline_rows
        return (
            "fl.rounds"
            if scenario.fl.rounds is not None and not streamed
            else "fl.request_fraction"
        )
    return "fl.model_size_bits"


def memory_problems(
    scenario: Scenario, memory: tuple[int, int | None] | None = None
) -> tuple[list[Problem], list[str]]:
    """``(problems, warnings)``: a problem when the estimate exceeds the physical memory,
    a warning (key: message) when it exceeds what is available now. ``memory`` as
    :func:`machine_memory` returns it (default: this machine's)."""
    estimate = estimate_memory(scenario)
    physical, available = memory or machine_memory()
    key = _largest_term_key(scenario, estimate, physical)
    if estimate.total_bytes > physical:
        return [
            Problem(
                key,
                f"the run needs {estimate.describe()}, more than this machine's"
                f" {format_bytes(physical)} of memory",
            )
        ], []
    if available is not None and estimate.total_bytes > available:
        return [], [
            f"{key}: the run needs {estimate.describe()}, more than the"
            f" {format_bytes(available)} of memory available now"
        ]
    return [], []
