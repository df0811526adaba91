"""How long a round takes in simulated time, from the scenario alone.

A client's exchange is its download, cold start, local update and upload
(docs/protocol.md, "A client's phases"); the round is what the protocol makes of its
clients' exchanges:

- ``fedavg``: the slowest of the selected clients (the m-th fastest of ceil(m (1 + o))
  under over-selection), cut at ``deadline_s``;
- ``fedcs``: the model multicast at the slowest selected client's rate, then the uploads
  one after another in the selection order (Yoshida et al. 2020 eqs. (1)-(2));
- ``fedasync``, ``fedbuff``: ``concurrency`` clients in flight, each starting its next
  exchange when one ends, so a version of ``buffer_size`` updates takes ``buffer x E[T]
  / concurrency`` (FedAsync: a buffer of one);
- ``hierarchical``: ``kappa2`` edge rounds of ``kappa1`` local updates each (every cell's
  slowest client), and the cloud's round trip over the edge -> cloud link.

Plus the request, selection and aggregation times. Clients are drawn as the run draws
them (their groups' distributions; random selection), a drop of the scenario's devices
at a time, and the median drop's round is the estimate. A strategy that weighs exchange
times (:data:`TIME_AWARE`; RBCS-F while its fairness queues can be stable) makes rounds
shorter: its round is estimated at the geometric mean of random selection's and that of
the fastest of the candidates. A device computes ``update samples / (capability x CPU ratio)``,
slowed by its background jobs (``1 / (1 - rho)`` under processor sharing, Kleinrock's
M/G/1-PS; FIFO's Pollaczek-Khinchine wait ``lambda E[S^2] / (2 (1 - rho))``). A transfer
of ``M`` bits costs its RB-seconds a bit at the cells' operating point
(:mod:`netfl.radio.background_load`) over the RBs it holds alone, stretched by ``1 / (1 -
rho)`` for the background's share (a job's sojourn in M/G/1-PS) and shared with the other
FL transfers of its cell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from netfl.config import Scenario
from netfl.config.devices import DeviceGroup
from netfl.config.radio import FixedRadioConfig, LteRadioConfig
from netfl.resources import unselected_share

#: Strategies that weigh the clients' exchange times (their rounds run between random
#: selection's and the fastest candidates').
TIME_AWARE = frozenset({"rbcs_f", "fedcs", "fedcs_deadline", "mab_cs", "oort"})
#: Devices drawn to stand for the population, drops of the scenario's devices from them
#: (a run meets its own devices: with a few dozen, seldom the rare ones at the cell edge
#: whose transfers dominate the population's mean), and rounds sampled a drop.
SAMPLE_DEVICES, DROPS, SAMPLE_ROUNDS = 2048, 15, 128
#: Training samples of the embedded datasets before the test split (scikit-learn's digits;
#: the file datasets' training sets, whose test sets are apart).
DATASET_SAMPLES = {"digits": 1797, "mnist": 60_000, "fashion_mnist": 60_000, "cifar10": 50_000}
_SEED = 12345


@dataclass(frozen=True)
class RoundTime:
    """Expected simulated seconds of a round (a version under asynchrony, a cloud round
    under HierFAVG), and of a client's phases, averaged over the clients drawn."""

    round_s: float
    compute_s: float
    upload_s: float
    download_s: float
    clients: float
    """Clients that take part in a round (updates aggregated, all cells)."""


def round_time(scenario: Scenario, model_bits: float | None) -> RoundTime | None:
    """The :class:`RoundTime` of ``scenario`` (None when its clients' data sizes are not
    known before the dataset is loaded: a plug-in or a file dataset without
    ``n_samples``): the median over :data:`DROPS` drops of the scenario's devices."""
    rng = np.random.default_rng(_SEED)
    work = _update_samples(scenario, rng)
    if work is None:
        return None
    samples, groups = work
    compute = _compute_s(scenario, samples, groups, rng)
    upload, download = _transfer_s(scenario, model_bits, len(samples), rng)
    size = min(scenario.devices.n_clients, len(samples))
    drops = []
    for _ in range(DROPS):
        mine = rng.choice(len(samples), size, replace=False)
        drops.append(_drop_round(scenario, compute[mine], upload[mine], download[mine], rng))
    drops.sort(key=lambda timing: timing.round_s)
    return drops[len(drops) // 2]


def _drop_round(
    scenario: Scenario,
    compute: np.ndarray,
    upload: np.ndarray,
    download: np.ndarray,
    rng: np.random.Generator,
) -> RoundTime:
    """The round of one drop of devices (their phases, seconds)."""
    fl = scenario.fl
    n = len(compute)
    fixed_s = fl.request_time_s + fl.selection_time_s + fl.aggregation_time_s
    if fl.protocol == "hierarchical":
        return _hierarchical(scenario, compute, upload, download, fixed_s, rng)
    concurrent = min(fl.concurrency_in_force, n)
    if not fl.is_async:
        concurrent = min(math.ceil(fl.clients_per_round * (1 + fl.over_selection)), n)
    up, down = _shared(scenario, concurrent, compute, upload, download)
    if fl.is_async:
        exchange = down + compute + up
        if fl.deadline_s is not None:
            exchange = np.minimum(exchange, fl.deadline_s)
        version_s = fl.buffer_in_force * float(np.mean(exchange)) / concurrent
        return RoundTime(
            version_s + fl.aggregation_time_s,
            float(np.mean(compute)),
            float(np.mean(up)),
            float(np.mean(down)),
            float(fl.buffer_in_force),
        )
    aggregated = min(fl.clients_per_round, concurrent)
    random = np.stack([rng.choice(n, concurrent, replace=False) for _ in range(SAMPLE_ROUNDS)])
    ends = _round_ends(scenario, random, compute, up, down, download, aggregated)
    if _weighs_time(scenario):
        # Between random selection and the fastest candidates (module doc).
        exchange = down + compute + up
        pool = min(n, max(concurrent, round(_candidates(scenario))))
        drawn = np.stack([rng.choice(n, pool, replace=False) for _ in range(SAMPLE_ROUNDS)])
        order = np.argsort(exchange[drawn], axis=1)[:, :concurrent]
        fastest = np.take_along_axis(drawn, order, axis=1)
        quick = _round_ends(scenario, fastest, compute, up, down, download, aggregated)
        ends = np.full(1, math.sqrt(float(np.mean(ends)) * float(np.mean(quick))))
    return RoundTime(
        float(np.mean(ends)) + fixed_s,
        float(np.mean(compute)),
        float(np.mean(up)),
        float(np.mean(down)),
        float(aggregated),
    )


def _round_ends(
    scenario: Scenario,
    picks: np.ndarray,
    compute: np.ndarray,
    up: np.ndarray,
    down: np.ndarray,
    download_alone: np.ndarray,
    aggregated: int,
) -> np.ndarray:
    """When each sampled round (a row of ``picks``, its clients in selection order) ends."""
    fl = scenario.fl
    rounds = len(picks)
    if _multicast(scenario):  # at the slowest one's rate
        start = np.max(download_alone[picks], axis=1, keepdims=True)
    elif fl.distribution == "instant":
        start = np.zeros((rounds, 1))
    else:
        start = down[picks]
    ready = start + compute[picks]
    done = _scheduled_uploads(ready, up[picks]) if fl.protocol == "fedcs" else ready + up[picks]
    ends = np.sort(done, axis=1)[:, aggregated - 1]
    if fl.deadline_s is not None:
        ends = np.minimum(ends, fl.deadline_s)
    return ends


def _weighs_time(scenario: Scenario) -> bool:
    """Whether the strategy weighs exchange times: one of :data:`TIME_AWARE`, and RBCS-F
    only while its fairness queues can be stable (else their backlogs decide)."""
    name = scenario.selection.name
    if name == "rbcs_f":
        from netfl.selection.rbcs_f import stable_fairness

        return stable_fairness(scenario)
    return name in TIME_AWARE


def _candidates(scenario: Scenario) -> float:
    """The round's candidates: the available among the clients asked."""
    asked = math.ceil(scenario.devices.n_clients * scenario.fl.request_fraction)
    return asked * scenario.devices.mean_availability


def _shared(
    scenario: Scenario,
    concurrent: int,
    compute: np.ndarray,
    upload: np.ndarray,
    download: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The transfers stretched by the other FL transfers of their cell and direction: of
    the ``concurrent`` clients in flight, spread over the cells that hold FL devices, each
    is in a direction's transfer for that phase's share of its exchange (alone), and
    processor sharing splits the RBs among those present."""
    cell = scenario.cell
    if isinstance(scenario.radio, FixedRadioConfig) or concurrent <= 1:
        return upload, download
    cells = cell.sites * cell.sectors if cell.device_sites == "all" else cell.sectors
    others = (concurrent - 1) / min(cells, cell.sites * cell.sectors)
    exchange = max(float(np.mean(upload + compute + download)), 1e-12)
    up = upload * (1 + others * float(np.mean(upload)) / exchange)
    down = download * (1 + others * float(np.mean(download)) / exchange)
    return up, down


def _hierarchical(
    scenario: Scenario,
    compute: np.ndarray,
    upload: np.ndarray,
    download: np.ndarray,
    fixed_s: float,
    rng: np.random.Generator,
) -> RoundTime:
    """``kappa2`` edge rounds (each the slowest of a cell's clients over ``kappa1`` local
    updates; the busiest cell's share of the devices decides) and the cloud round trip."""
    fl, cell = scenario.fl, scenario.cell
    n_cells = cell.sites * cell.sectors
    per_cell = max(1, min(fl.clients_per_round, math.ceil(scenario.devices.n_clients / n_cells)))
    picks = np.stack([rng.choice(len(compute), per_cell) for _ in range(SAMPLE_ROUNDS)])
    up, down = _shared(scenario, per_cell * n_cells, compute * fl.kappa1, upload, download)
    edge = down[picks] + fl.kappa1 * compute[picks] + up[picks]
    edge_s = float(np.mean(np.max(edge, axis=1))) + fixed_s
    backhaul = cell.backhaul
    edges = n_cells if cell.device_sites == "all" else cell.sectors
    trip = 2 * (backhaul.edge_cloud_latency_s + _edge_bits(scenario) * edges / _capacity(scenario))
    return RoundTime(
        fl.kappa2 * edge_s + trip,
        float(np.mean(compute)) * fl.kappa1,
        float(np.mean(upload)),
        float(np.mean(download)),
        float(per_cell * edges),
    )


def _edge_bits(scenario: Scenario) -> float:
    return float(scenario.fl.model_size_bits or 0.0)


def _capacity(scenario: Scenario) -> float:
    capacity = scenario.cell.backhaul.edge_cloud_capacity_bps
    return float(capacity) if capacity else math.inf


def _multicast(scenario: Scenario) -> bool:
    fl = scenario.fl
    distribution = fl.distribution or ("multicast" if fl.protocol == "fedcs" else "unicast")
    return distribution == "multicast"


def _scheduled_uploads(ready: np.ndarray, upload: np.ndarray) -> np.ndarray:
    """FedCS's uploads one after another in the selection order: each starts when its
    client is ready and the previous upload has ended (Yoshida et al. 2020 eq. (1))."""
    done = np.empty_like(ready)
    end = np.zeros(len(ready))
    for k in range(ready.shape[1]):
        end = np.maximum(end, ready[:, k]) + upload[:, k]
        done[:, k] = end
    return done


def _update_samples(
    scenario: Scenario, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray] | None:
    """Training samples of one local update of each drawn device, and its group."""
    devices = scenario.devices
    learning = scenario.learning
    n = devices.n_clients
    counts = [max(1, round(SAMPLE_DEVICES * g.count / n)) for g in devices.groups]
    parts, groups = [], []
    for index, (group, count) in enumerate(zip(devices.groups, counts, strict=True)):
        if group.n_samples is not None:
            size = np.maximum(np.round(group.n_samples.sample(rng, count)), 1.0)
        else:
            mean = _mean_data_size(scenario)
            if mean is None:
                return None
            size = np.full(count, mean)
        if learning is not None and learning.local_steps is not None:
            size = learning.local_steps * np.minimum(learning.batch_size, size)
        elif learning is not None:
            size = (learning.local_epochs or 1) * size
        parts.append(size)
        groups.append(np.full(count, index))
    return np.concatenate(parts), np.concatenate(groups)


def _mean_data_size(scenario: Scenario) -> float | None:
    """A client's mean number of training samples when the partition decides it."""
    from netfl.config.learning import SyntheticParams

    learning = scenario.learning
    if learning is None:
        return None
    n = scenario.devices.n_clients
    if learning.dataset == "synthetic":
        params = SyntheticParams.model_validate(learning.dataset_params)
        return params.mean_size * (1 - learning.test_fraction)
    total = DATASET_SAMPLES.get(learning.dataset)
    if total is None:
        return None
    split = 1 - learning.test_fraction if learning.dataset == "digits" else 1.0
    return total * split / n


def _compute_s(
    scenario: Scenario, samples: np.ndarray, groups: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Each drawn device's cold start and local update, seconds."""
    out = np.empty(len(samples))
    for index, group in enumerate(scenario.devices.groups):
        mine = groups == index
        k = int(mine.sum())
        if group.base_train_time_s is not None:
            seconds = group.base_train_time_s.sample(rng, k)
        else:
            ratio = group.available_cpu_ratio.sample(rng, k)
            seconds = samples[mine] / (group.compute_sps.sample(rng, k) * ratio)
        out[mine] = _behind_background(group, seconds) + _cold_start_s(scenario, group, rng, k)
    return out


def _behind_background(group: DeviceGroup, seconds: np.ndarray) -> np.ndarray:
    load = group.background
    if load is None or load.arrival_rate_hz == 0:
        return seconds
    rho = load.utilization
    if load.discipline == "ps":
        return seconds / (1 - rho)
    mean = load.job_work_s.expected()
    second = float(np.mean(load.job_work_s.sample(np.random.default_rng(_SEED), 4096) ** 2))
    return seconds + load.arrival_rate_hz * max(second, mean**2) / (2 * (1 - rho))


def _cold_start_s(
    scenario: Scenario, group: DeviceGroup, rng: np.random.Generator, k: int
) -> np.ndarray:
    """The cold start of a client not selected in the previous round (the share of the
    population a round leaves out)."""
    cold = group.cold_start_s.sample(rng, k)
    if not cold.any():
        return cold
    return cold * unselected_share(scenario)


def _transfer_s(
    scenario: Scenario, model_bits: float | None, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Each drawn device's upload and download of the model, seconds."""
    if not model_bits:
        return np.zeros(n), np.zeros(n)
    radio = scenario.radio
    if isinstance(radio, FixedRadioConfig):
        up = model_bits / radio.rate_ul_bps.sample(rng, n)
        down = model_bits / radio.rate_dl_bps.sample(rng, n)
        return up, down
    assert isinstance(radio, LteRadioConfig)
    from netfl.radio.background_load import background_load

    loads = background_load(scenario, link_bits=model_bits)
    out = []
    for direction in ("uplink", "downlink"):
        load = loads[direction]
        per_bit = load.fl_rb_seconds_per_bit
        if per_bit is None or not len(per_bit):
            out.append(np.full(n, math.inf))
            continue
        free = max(1.0 - load.over_fl_cells(load.expected), 0.02)
        seconds = model_bits * rng.choice(per_bit, n) / load.fl_rbs / free
        out.append(seconds)
    return out[0], out[1]


def mean_update_samples(scenario: Scenario) -> float:
    """Training samples of a client's job, on average (HierFAVG: its ``kappa1`` local
    updates; 0 when the data sizes are not known before the dataset is loaded)."""
    work = _update_samples(scenario, np.random.default_rng(_SEED))
    if work is None:
        return 0.0
    repeats = scenario.fl.kappa1 if scenario.fl.protocol == "hierarchical" else 1
    return float(np.mean(work[0])) * repeats
