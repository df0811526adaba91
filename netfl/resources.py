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
  timeline is written out in parts as the run goes, :mod:`netfl.recorder.streaming`), at
  :data:`BYTES_PER_TIMELINE_ROW`;
- model copies for training: the global model, its aggregate, and one update per selected
  client (the batched backend trains them side by side), sized by ``fl.model_size_bits``
  when given.

Plus :data:`BASE_BYTES` for Python and the libraries. The constants are measured (see each);
the estimate is meant to be right within a factor of two, which is what refusing a run that
cannot fit needs. The population term counts the radio layout's arrays
(:func:`layout_bytes_per_device`: every device's gain to every cell), and a synthetic
dataset's samples are counted; moving devices add their channel and handover state
(:func:`moving_bytes_per_device`: 4.2 kB a device on 19 x 3 cells).

The run directory is estimated beside the memory (:func:`estimate_disk`): the whole run's
timeline rows (the parts and the final Parquet file are both on disk at the end), one row
of ``rounds.parquet`` a round and one of ``clients.parquet`` a device; ``netfl validate``
and ``simulate`` refuse a run whose directory the output disk cannot hold.
"""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from netfl.config import Scenario
from netfl.config.cell import CellConfig
from netfl.config.learning import SyntheticParams
from netfl.errors import Problem

BYTES_PER_DEVICE = 450
"""Resident bytes per device after the world is built, besides its gains to the cells
(:data:`LAYOUT_BYTES_PER_DEVICE_CELL`): 434 B measured with tracemalloc at 400,000 devices
and 520 B at 100,000 on the single LTE cell; 460 B on the one engine's layouts."""

LAYOUT_BYTES_PER_DEVICE_CELL = 8
"""Resident bytes per device and cell once the radio is built: the coupling gain of every
(device, cell) link (float64, :class:`netfl.radio.propagation.LinkGains`). Measured with
tracemalloc on the one engine (issue 27): the build's resident memory grows by 460 + 8 x
cells bytes a device on 1 x 1, 1 x 3, 7 x 1, 7 x 3, 19 x 1 and 19 x 3 layouts (40,000 to
80,000 devices), nothing per site."""

LAYOUT_TEMPORARY_BYTES_PER_DEVICE_CELL = 68
"""Peak temporaries of the propagation draw per device of a block and cell: the links are
drawn :data:`netfl.radio.propagation.BLOCK_DEVICES` devices at a time, each block's
devices x sites and devices x cells arrays (distances, angles, antenna gains, losses)
alive at once: 3.4 kB a device on 19 x 3 cells, 0.8 kB on 19 x 1 (8.5 float64 a cell
covers both)."""

MOVING_BYTES_PER_DEVICE_SITE = 90
"""A moving device's channel state per site (:mod:`netfl.radio.motion`): its LOS and
shadowing path processes (float32 values, float64 odometer readings and decorrelation
distances, sigma, LOS state), LOS probability and wrap-around image, 74 B counted from
the arrays, and the link indices of a cell search, 16 B."""

MOVING_BYTES_PER_DEVICE_CELL = 28
"""A moving device's gain to each cell in mW (float32, 4 B) and a cell search's RSRP of
every cell (two float64 copies and an argpartition's int64 indices, 24 B)."""

MOVING_BYTES_PER_DEVICE = 900
"""A moving device's handover registers (its 8 measured cells, their filtered RSRP and A3
counts; serving cell, timers, counters), odometers and mobility model. With the two terms
above: 4.2 kB on 19 x 3 cells, against 4.3 kB measured (tracemalloc, the peak of building
and running 20,000 moving devices for 3 s over that of the same devices static)."""

PROPAGATION_BLOCK_DEVICES = 16384
"""Devices per propagation block (:data:`netfl.radio.propagation.BLOCK_DEVICES`; repeated
so that ``netfl validate`` does not import the radio; a test keeps the two equal)."""

DISK_BYTES_PER_TIMELINE_ROW = 18
"""Bytes on disk per timeline row at the run's end, when the streamed parts (Arrow IPC,
LZ4: 8.9 B a row) and ``timeline.parquet`` (zstd: 8.6 B a row) are both there: measured on
271,201 rows of client events (quickstart's cell, 10,000 devices, 100 a round; issue 27).
Rows of asked devices (sequential ids, one time) compress to about 1 B."""

DISK_BYTES_PER_ROUND_ROW = 110
"""``rounds.parquet``: about 110 B a round (5 clients a round, measured; the lists of
selected and completed ids add 8 B a client, counted apart)."""

DISK_BYTES_PER_CLIENT_ROW = 112
"""``clients.parquet``: 112 B a device (10,000 devices, measured)."""

BYTES_PER_TIMELINE_ROW = 150
"""Peak resident bytes per timeline row including the copies made when writing: issue 16's
runs (10,000 devices, 100 per round, 1,000 rounds) peaked at 2.9 GB with C = 1 and 0.76 GB
with C = 0.1, about 20.7 and 2.7 million rows over a 0.3 GB base: 125 and 170 B a row.
Streamed (:data:`TIMELINE_PART_ROWS`), the C = 1 run peaks at 369 MiB with about a million
rows held: 200 B a row over the 170 MiB of a run with a small timeline."""

TIMELINE_PART_ROWS = 1_000_000
"""Rows the timeline holds before a round's end writes them out:
:data:`netfl.recorder.streaming.PART_ROWS` (repeated here so that ``netfl validate`` does not
import pyarrow and pandas; a test keeps the two equal)."""

BASE_BYTES = 300 * 2**20
"""Python with numpy, pydantic, SimPy and pyarrow before the first round (torch adds more)."""

LEARNING_BYTES = 130 * 2**20
"""What real training adds before the first round: torch, the dataset and the learner
(measured: ``netfl simulate quickstart`` peaks at 430 MiB, against 300 MiB for a run
without learning of the same cell; docs/benchmarks.md, "How long, how much")."""

BYTES_PER_EXTRA_ROW = 400
"""Peak resident bytes per timeline row of a background transfer or a position, with the
copies made when writing: their three or four value columns are stored per row
(async_compare with 200 devices over 2,400 s: 637,000 rows, 450,000 of them background
transfers, peaked at 684 MiB)."""

BYTES_PER_STRATEGY_ROW = 26
"""Resident bytes per row of the strategy's scores held (:mod:`netfl.recorder.strategy`)."""

DISK_BYTES_PER_STRATEGY_ROW = 6
"""``strategy.parquet``, bytes a row (RBCS-F's scores on compare_selection: 6.2 B; its
backlogs of 2,000 devices, mostly 0: 1.3 B)."""

DISK_BYTES_PER_ASKED_ROW = 2
"""A ``request`` or ``response`` row of the timeline on disk: sequential ids at one time
compress to about 1 B a row in Parquet, and as much again in the streamed parts (a run
asking 500 of 2,000 devices a round: 3.8 B a row in all, most of them asked devices')."""

ROWS_PER_ASKED_DEVICE = 2
ROWS_PER_SELECTED_CLIENT = 7
ROWS_PER_COLD_START = 2
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
    moving_bytes: int = 0
    """The moving devices' channel and handover state (:func:`moving_bytes_per_device`)."""

    base_bytes: int = BASE_BYTES
    """Python and the libraries (with torch, the dataset and the learner under learning)."""

    @property
    def total_bytes(self) -> int:
        return (
            self.base_bytes
            + self.population_bytes
            + self.timeline_bytes
            + self.model_bytes
            + self.moving_bytes
        )

    def describe(self) -> str:
        """One line: the total and its terms."""
        model = f", model copies {format_bytes(self.model_bytes)}" if self.model_bytes else ""
        if self.moving_bytes:
            model += f", moving devices {format_bytes(self.moving_bytes)}"
        held = ""
        if self.timeline_rows_held < self.timeline_rows:
            held = f", {self.timeline_rows_held:,} held at a time"
        return (
            f"about {format_bytes(self.total_bytes)} peak (population"
            f" {format_bytes(self.population_bytes)}, timeline {self.timeline_rows:,} rows"
            f"{held} {format_bytes(self.timeline_bytes)}{model}, Python and libraries"
            f" {format_bytes(self.base_bytes)})"
        )


def format_bytes(n_bytes: float) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= size:
            return f"{n_bytes / size:,.1f} {unit}"
    return f"{n_bytes:,.0f} B"


def layout_bytes_per_device(cell: CellConfig, n_devices: int) -> float:
    """Peak bytes per device of the radio layout as the engine builds it today: every
    device's coupling gain to every cell kept (devices x cells float64), the propagation
    draw's temporaries for one block of devices, and the population's own arrays
    (:data:`BYTES_PER_DEVICE`, which the 1 x 1 layout's 460 B include). A layout of one
    omni site is the single cell."""
    cells = cell.sites * cell.sectors
    block = min(n_devices, PROPAGATION_BLOCK_DEVICES)
    kept = BYTES_PER_DEVICE + LAYOUT_BYTES_PER_DEVICE_CELL * cells
    temporaries = LAYOUT_TEMPORARY_BYTES_PER_DEVICE_CELL * cells * block
    return kept + temporaries / max(n_devices, 1)


def moving_bytes_per_device(cell: CellConfig) -> int:
    """Peak bytes of a moving device's channel and handover state on ``cell``'s layout."""
    return (
        MOVING_BYTES_PER_DEVICE
        + MOVING_BYTES_PER_DEVICE_SITE * cell.sites
        + MOVING_BYTES_PER_DEVICE_CELL * cell.sites * cell.sectors
    )


def synthetic_dataset_bytes(scenario: Scenario) -> int:
    """The synthetic dataset's samples (FedProx's Synthetic: float64 features, a label):
    each device's expected size exp(mu + sigma^2 / 2) + offset (a lognormal's mean)."""
    learning = scenario.learning
    if learning is None or learning.dataset != "synthetic":
        return 0
    params = SyntheticParams.model_validate(learning.dataset_params)
    samples = scenario.devices.n_clients * params.mean_size
    return math.ceil(min(samples * (params.n_features + 1) * 8, 2.0**80))


def rows_per_round(scenario: Scenario) -> tuple[int, int]:
    """(timeline rows a round, clients selected a round): a round of the synchronous
    protocols, a version of the asynchronous ones, a cloud round of the hierarchical."""
    n_devices = scenario.devices.n_clients
    fl = scenario.fl
    selected = min(math.ceil(fl.clients_per_round * (1 + fl.over_selection)), n_devices)
    asked = math.ceil(n_devices * fl.request_fraction)
    per_client = ROWS_PER_SELECTED_CLIENT + ROWS_PER_COLD_START * _cold_share(scenario)
    rows_per_round = math.ceil(
        ROWS_PER_ASKED_DEVICE * asked + per_client * selected + ROWS_PER_ROUND
    )
    if fl.protocol == "hierarchical":
        # kappa2 edge rounds, each a request and every edge's selection (an edge a cell).
        edges = scenario.cell.sites * scenario.cell.sectors
        selected = min(fl.clients_per_round * edges, n_devices)
        edge_round = ROWS_PER_ASKED_DEVICE * asked + ROWS_PER_SELECTED_CLIENT * selected
        rows_per_round = fl.kappa2 * (edge_round + ROWS_PER_ROUND) + ROWS_PER_ROUND
    if fl.is_async:
        # A round is a version of buffer_in_force updates; the request goes out once per
        # concurrency client starts (netfl.fl.asynchronous), the selected clients' rows
        # come per update and the round rows per version.
        selected = min(fl.concurrency_in_force, n_devices)
        requests = ROWS_PER_ASKED_DEVICE * asked * fl.buffer_in_force / selected
        rows_per_round = math.ceil(
            ROWS_PER_SELECTED_CLIENT * fl.buffer_in_force + ROWS_PER_ROUND + requests
        )
    return rows_per_round, selected


def _asked_a_round(scenario: Scenario) -> float:
    """Devices asked a round (a version: once every concurrency starts)."""
    fl = scenario.fl
    asked = math.ceil(scenario.devices.n_clients * fl.request_fraction)
    if fl.is_async:
        starts = min(fl.concurrency_in_force, scenario.devices.n_clients)
        return asked * fl.buffer_in_force / starts
    if fl.protocol == "hierarchical":
        return asked * fl.kappa2
    return asked


def _cold_share(scenario: Scenario) -> float:
    """The share of selected clients that pay a cold start (its two rows): those not
    selected in the previous round, where any group has one."""
    if not any(_may_be_positive(g.cold_start_s) for g in scenario.devices.groups):
        return 0.0
    return unselected_share(scenario)


def unselected_share(scenario: Scenario) -> float:
    """The share of the population a round of ``fl.clients_per_round`` leaves out."""
    return 1.0 - min(1.0, scenario.fl.clients_per_round / scenario.devices.n_clients)


def _may_be_positive(dist: object) -> bool:
    value = getattr(dist, "value", None)
    return value is None or value > 0


def estimate_memory(
    scenario: Scenario,
    rounds: float | None = None,
    extra_rows: int = 0,
    model_bits: float | None = None,
    strategy_rows: int = 0,
) -> MemoryEstimate:
    """The :class:`MemoryEstimate` of ``scenario`` (nothing is built or drawn): over
    ``rounds`` rounds (default ``fl.rounds``, or one), with ``extra_rows`` timeline rows
    besides the protocol's over the run (background transfers, positions) and
    ``strategy_rows`` of scores; ``model_bits`` the model's size when ``fl.model_size_bits``
    does not say."""
    n_devices = scenario.devices.n_clients
    fl = scenario.fl
    rows_per_round_, selected = rows_per_round(scenario)
    rounds = rounds if rounds is not None else (fl.rounds if fl.rounds is not None else 1)
    bits = fl.model_size_bits if fl.model_size_bits is not None else model_bits
    model_bytes = 0
    if scenario.learning is not None and bits is not None:
        model_bytes = math.ceil(bits / 8) * (selected + 2)
    protocol = math.ceil(rows_per_round_ * rounds)
    rows = protocol + extra_rows + ROWS_PER_RUN
    # Rows are written out at a round's end once TIMELINE_PART_ROWS are held (the last
    # round's rows, and the final evaluation's, stay until the end).
    extra_a_round = extra_rows / max(rounds, 1.0)
    held = min(
        rows, math.ceil(TIMELINE_PART_ROWS - 1 + rows_per_round_ + extra_a_round) + ROWS_PER_RUN
    )
    extra_held = math.ceil(held * extra_rows / rows) if rows else 0
    timeline = (held - extra_held) * BYTES_PER_TIMELINE_ROW + extra_held * BYTES_PER_EXTRA_ROW
    scores = min(strategy_rows, TIMELINE_PART_ROWS) * BYTES_PER_STRATEGY_ROW
    layout = math.ceil(n_devices * layout_bytes_per_device(scenario.cell, n_devices))
    moving = sum(g.count for g in scenario.devices.groups if g.mobility.model != "static")
    return MemoryEstimate(
        population_bytes=layout + synthetic_dataset_bytes(scenario),
        timeline_bytes=timeline + scores,
        model_bytes=model_bytes,
        timeline_rows=rows,
        timeline_rows_held=held,
        base_bytes=BASE_BYTES + (LEARNING_BYTES if scenario.learning is not None else 0),
        moving_bytes=moving * moving_bytes_per_device(scenario.cell),
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
        data = synthetic_dataset_bytes(scenario)
        if data > estimate.population_bytes - data:
            return "learning.dataset_params"
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


@dataclass(frozen=True)
class DiskEstimate:
    """Estimated size of a run directory at its end, by table."""

    timeline_bytes: int
    rounds_bytes: int
    clients_bytes: int
    timeline_rows: int
    rounds_known: bool
    """False when the rounds are neither set (a time budget) nor estimated: one round is
    counted."""
    strategy_bytes: int = 0

    @property
    def total_bytes(self) -> int:
        return self.timeline_bytes + self.rounds_bytes + self.clients_bytes + self.strategy_bytes

    def describe(self) -> str:
        per = "" if self.rounds_known else " for the first round (fl.rounds not set)"
        scores = f", strategy {format_bytes(self.strategy_bytes)}" if self.strategy_bytes else ""
        return (
            f"about {format_bytes(self.total_bytes)}{per} (timeline {self.timeline_rows:,}"
            f" rows {format_bytes(self.timeline_bytes)}, rounds"
            f" {format_bytes(self.rounds_bytes)}, clients {format_bytes(self.clients_bytes)}"
            f"{scores})"
        )


def estimate_disk(
    scenario: Scenario,
    rounds: float | None = None,
    extra_rows: int = 0,
    strategy_rows: int = 0,
) -> DiskEstimate:
    """The :class:`DiskEstimate` of ``scenario``'s run directory (nothing is built): over
    ``rounds`` rounds (default ``fl.rounds``, or the first round), with ``extra_rows``
    timeline rows besides the protocol's and ``strategy_rows`` of scores."""
    fl = scenario.fl
    rows_per_round_, selected = rows_per_round(scenario)
    known = rounds is not None or fl.rounds is not None
    rounds = rounds if rounds is not None else (fl.rounds if fl.rounds is not None else 1)
    rows = math.ceil(rows_per_round_ * rounds) + extra_rows + ROWS_PER_RUN
    asked = math.ceil(ROWS_PER_ASKED_DEVICE * _asked_a_round(scenario) * rounds)
    return DiskEstimate(
        timeline_bytes=(rows - asked) * DISK_BYTES_PER_TIMELINE_ROW
        + asked * DISK_BYTES_PER_ASKED_ROW,
        rounds_bytes=math.ceil(rounds * (DISK_BYTES_PER_ROUND_ROW + 16 * selected)),
        clients_bytes=scenario.devices.n_clients * DISK_BYTES_PER_CLIENT_ROW,
        timeline_rows=rows,
        rounds_known=known,
        strategy_bytes=strategy_rows * DISK_BYTES_PER_STRATEGY_ROW,
    )


def free_disk_bytes(out_dir: Path) -> int:
    """Free bytes on the filesystem that holds (or will hold) ``out_dir``."""
    here = Path(out_dir).absolute()
    while not os.path.isdir(here) and here != here.parent:  # False for a name too long
        here = here.parent
    return shutil.disk_usage(here).free


def disk_problems(
    scenario: Scenario, out_dir: Path, free_bytes: int | None = None
) -> list[Problem]:
    """A problem when the run directory at ``out_dir`` would not fit on its disk
    (``free_bytes``: the free space, default the disk's now)."""
    estimate = estimate_disk(scenario)
    free = free_disk_bytes(out_dir) if free_bytes is None else free_bytes
    if estimate.total_bytes <= free:
        return []
    fl = scenario.fl
    key = "fl.rounds" if fl.rounds is not None and fl.rounds > 1 else "fl.request_fraction"
    return [
        Problem(
            key,
            f"the run directory needs {estimate.describe()}, more than the"
            f" {format_bytes(free)} free on the disk of {out_dir}",
        )
    ]
