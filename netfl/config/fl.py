"""Scenario section `fl`: the federated-learning protocol, rounds and deadlines."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from netfl.config.base import (
    Bits,
    NonNegativeBits,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    PositiveSeconds,
    Probability,
    Seconds,
    StrictModel,
)

#: The distribution step each protocol uses unless ``fl.distribution`` says otherwise.
DEFAULT_DISTRIBUTION = {
    "fedcs": "multicast",
    "fedavg": "unicast",
    "fedasync": "unicast",
    "fedbuff": "unicast",
    "hierarchical": "unicast",
}

#: Protocols that keep clients training concurrently and aggregate as updates arrive.
ASYNC_PROTOCOLS = frozenset({"fedasync", "fedbuff"})

#: Bounds of the hierarchical counts (issue 27: 10^12 validated and then ran for ever).
MAX_LOCAL_REPEATS = 1000
MAX_EDGE_ROUNDS = 1000
#: Bound of kappa1 x kappa2, the local updates of every selected client in one
#: hierarchical round (issue 34: each bound alone let 1000 x 1000 through, a round of
#: days): ten times what a single count may reach.
MAX_ROUND_UPDATES = 10 * MAX_LOCAL_REPEATS

#: Keys that only some protocols read. A value other than the default under another
#: protocol is refused, naming the key (a resolved scenario writes every default out, so
#: "written" cannot mean "set").
_PROTOCOL_KEYS: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        (
            "concurrency",
            "staleness_weight",
            "staleness_exponent",
            "staleness_hinge_a",
            "staleness_hinge_b",
        ),
        ASYNC_PROTOCOLS,
    ),
    "buffer_size": frozenset({"fedbuff"}),
    "server_lr": frozenset({"fedbuff"}),
    "mixing_alpha": frozenset({"fedasync"}),
    "kappa1": frozenset({"hierarchical"}),
    "kappa2": frozenset({"hierarchical"}),
}

#: Protocols whose rounds start their selected clients together (over-selection and
#: multicast distribution need that).
_TOGETHER = frozenset({"fedavg", "fedcs"})


class AggregationConfig(StrictModel):
    """The server's aggregation rule (``netfl list``; docs/aggregation.md)."""

    name: str = Field(
        default="fedavg",
        description=(
            "Registered aggregation rule: fedavg, fednova (Wang et al. 2020), fedavgm (Hsu et"
            " al. 2019), fedadagrad, fedadam, fedyogi (Reddi et al. 2021, Alg. 2); `netfl show"
            " RULE` prints its parameters. Rules other than fedavg need learning; fednova runs"
            " under fedavg, fedcs and hierarchical (at the edges), the server optimizers under"
            " fedavg, fedcs, fedasync and fedbuff (on the protocol's aggregated update)."
        ),
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="The rule's parameters (checked against its signature), e.g. {eta: 0.01,"
        " beta1: 0.9, beta2: 0.99, tau: 0.001} for fedadam.",
    )


class FLConfig(StrictModel):
    """The federated-learning protocol: rounds, budgets and deadlines."""

    protocol: Literal["fedavg", "fedcs", "fedasync", "fedbuff", "hierarchical"] = Field(
        default="fedavg",
        description=(
            "fedavg: synchronous FedAvg, selected clients upload in parallel as soon as they"
            " are ready. fedcs: the FedCS protocol (Yoshida et al. 2020 Sec. II), uploads one"
            " after another in"
            " the selection order (scheduled upload). fedasync: asynchronous FedAsync (Xie,"
            " Koyejo, Gupta 2019), each arriving update is mixed into the global model at"
            " once. fedbuff: buffered asynchronous FedBuff (Nguyen et al. 2022), the server"
            " applies the average of every buffer_size arrived updates. The asynchronous"
            " protocols keep fl.concurrency clients training and count rounds as global"
            " model versions (docs/protocol.md). hierarchical: HierFAVG (Liu et al. 2020),"
            " an edge aggregator per cell aggregates its clients after every kappa1 local"
            " updates and the cloud aggregates the edges every kappa2 edge rounds over the"
            " edge -> cloud backhaul; a round is a cloud round."
        ),
    )
    rounds: PositiveInt | None = Field(
        default=20,
        description="Number of rounds to run (null: until time_budget_s); for fedasync and"
        " fedbuff, the number of global model versions (aggregations).",
    )
    time_budget_s: PositiveSeconds | None = Field(
        default=None,
        description="Simulated-time budget T_final; no round starts after it and a running"
        " round is cut at it (null: none).",
    )
    clients_per_round: PositiveInt = Field(
        default=5,
        description="Updates aggregated per round (S_round, m); the strategy selects"
        " ceil(m (1 + over_selection)).",
    )
    over_selection: NonNegativeFloat = Field(
        default=0.0,
        le=100.0,
        description="Over-selection fraction o: select ceil(m (1 + o)) clients and close the"
        " round when the first m updates have arrived (the others are cancelled). At most"
        " 100 (101 m selected to keep m).",
    )
    request_fraction: Probability = Field(
        default=1.0,
        gt=0,
        description=(
            "Fraction C of the population asked in the Resource Request step; ceil(K*C)"
            " random clients are asked and those available become the round's candidates."
        ),
    )
    request_time_s: Seconds = Field(
        default=0.0,
        description="Fixed duration of the Resource Request step (broadcast, processing), s.",
    )
    request_response_bits: NonNegativeBits = Field(
        default=0.0,
        description="Size of each candidate's resource report, uploaded through the network"
        " in parallel after request_time_s (0: free).",
    )
    selection_time_s: Seconds = Field(
        default=0.0, description="Time the server spends computing the selection, s."
    )
    distribution: Literal["multicast", "unicast", "instant"] | None = Field(
        default=None,
        description="How the model reaches the selected clients: multicast (all at the"
        " slowest one's rate, as in FedCS), unicast (each at its own rate), instant (free)."
        " null: multicast for fedcs, unicast for fedavg.",
    )
    loss_eval_epochs: NonNegativeFloat = Field(
        default=1 / 3,
        description="Device work of evaluating the model's loss on its data when a strategy"
        " polls for it (pow-d), in passes of training over the data (a forward pass costs"
        " about a third of a training pass).",
    )
    oracle_exchange_time: bool = Field(
        default=False,
        description="Report each candidate's expected exchange time this round as the"
        " feature expected_exchange_time_s (oracle knowledge: Huang et al. 2021's FedCS(3)"
        " baseline).",
    )
    aggregation_time_s: Seconds = Field(
        default=0.0, description="Time the server spends aggregating, s."
    )
    deadline_s: PositiveSeconds | None = Field(
        default=None,
        description=(
            "Round deadline T_round, from the round's start; later uploads are discarded"
            " (null: wait for every selected client). For fedasync and fedbuff, each"
            " client's deadline from the start of its download."
        ),
    )
    partial_work: bool = Field(
        default=False,
        description=(
            "Partial work (Li et al., MLSys 2020, FedProx's tolerance of stragglers): a"
            " selected client that cannot finish its local update in time trains only the"
            " local steps its device completes before deadline_s less the upload time it"
            " expects, and uploads that partial update instead of being dropped; the steps"
            " planned and done are recorded (docs/protocol.md, 'Partial work'). Needs"
            " deadline_s and learning."
        ),
    )
    partial_work_upload_factor: float = Field(
        default=1.0,
        ge=1.0,
        description=(
            "partial_work: the client stops at deadline - factor x the upload time it"
            " expects; above 1 leaves room for an upload slower than the last one (a busier"
            " cell, other partial clients stopping at the same time)."
        ),
    )
    aggregation: AggregationConfig = Field(
        default_factory=AggregationConfig,
        description="The server's aggregation rule and its parameters.",
    )
    empty_round_wait_s: PositiveSeconds = Field(
        default=1.0,
        description=(
            "When a round selects nobody (no candidate available), the server waits this"
            " long before the next round (or until the round deadline, if set)."
        ),
    )
    checkpoint_every: PositiveInt | None = Field(
        default=None,
        description=(
            "Write a checkpoint to the run directory's checkpoint/ every this many rounds,"
            " and at the last completed round when the run is interrupted or fails, so"
            " `netfl simulate --resume RUN_DIR` can continue it (null: never)."
        ),
    )
    model_size_bits: Bits | None = Field(
        default=None,
        description=(
            "Size of the model on the air, bits (null: 32 bits times the learning model's"
            " parameter count; required when learning is none)."
        ),
    )

    concurrency: PositiveInt | None = Field(
        default=None,
        description="fedasync, fedbuff: how many clients train at any time; when one"
        " finishes or leaves, the strategy picks whom to start next (null: clients_per_round).",
    )
    buffer_size: PositiveInt | None = Field(
        default=None,
        description="fedbuff: updates buffered before the server applies their average (K in"
        " Nguyen et al. 2022 Alg. 1; null: the concurrency in force). At most the concurrency.",
    )
    mixing_alpha: Probability = Field(
        default=0.6,
        gt=0,
        description="fedasync: the mixing weight alpha in x_t = (1 - alpha_t) x_{t-1} + alpha_t"
        " x_new, alpha_t = alpha s(staleness) (Xie, Koyejo, Gupta 2019, Alg. 1).",
    )
    staleness_weight: Literal["constant", "polynomial", "hinge"] = Field(
        default="polynomial",
        description="fedasync, fedbuff: the staleness function s(t) of an update t global"
        " versions old (Xie, Koyejo, Gupta 2019, Sec. 5): constant 1; polynomial (1 + t)^-a"
        " with a = staleness_exponent (FedBuff's 1/sqrt(1 + t) is a = 0.5); hinge 1 for"
        " t <= b, else 1 / (a (t - b) + 1) with a, b = staleness_hinge_a, staleness_hinge_b.",
    )
    staleness_exponent: NonNegativeFloat = Field(
        default=0.5, description="The exponent a of the polynomial staleness function."
    )
    staleness_hinge_a: NonNegativeFloat = Field(
        default=10.0, description="The slope a of the hinge staleness function."
    )
    staleness_hinge_b: NonNegativeInt = Field(
        default=4, description="The knee b of the hinge staleness function, in versions."
    )
    server_lr: PositiveFloat = Field(
        default=1.0,
        le=1000.0,
        description="fedbuff: the server learning rate eta_g applied to the buffer's average"
        " update (Nguyen et al. 2022 Alg. 1); at most 1,000 (from 2 on, validate warns: the"
        " buffer's step overshoots the optimum by more than it corrects).",
    )

    kappa1: PositiveInt = Field(
        default=1,
        le=MAX_LOCAL_REPEATS,
        description="hierarchical: local updates (each one learning.local_epochs or"
        " local_steps) a client runs between two edge aggregations (kappa_1 of Liu et al."
        " 2020, Alg. 1, counted in local updates). At most 1,000: every local update is real"
        " training of the client's data, so a job's cost grows with kappa1. kappa1 x kappa2"
        " is at most 10,000: a round's local updates.",
    )
    kappa2: PositiveInt = Field(
        default=2,
        le=MAX_EDGE_ROUNDS,
        description="hierarchical: edge aggregations between two cloud aggregations (kappa_2)."
        " At most 1,000: a round (one row of rounds.parquet, one evaluation) is kappa2 edge"
        " rounds of every selected client.",
    )

    @field_validator("kappa2")
    @classmethod
    def _round_of_bounded_work(cls, kappa2: int, info: ValidationInfo) -> int:
        kappa1 = info.data.get("kappa1", 1)
        if kappa1 * kappa2 > MAX_ROUND_UPDATES:
            raise ValueError(
                f"kappa1 x kappa2 = {kappa1 * kappa2:,} local updates of every selected client"
                f" in one hierarchical round: at most {MAX_ROUND_UPDATES:,} (each is real"
                " training; such a round runs for days)"
            )
        return kappa2

    @model_validator(mode="after")
    def _stops(self) -> FLConfig:
        if self.rounds is None and self.time_budget_s is None:
            raise ValueError("set rounds, time_budget_s, or both: otherwise the run never ends")
        return self

    @model_validator(mode="after")
    def _protocol_keys(self) -> FLConfig:
        defaults = type(self).model_fields
        for key, protocols in _PROTOCOL_KEYS.items():
            if self.protocol not in protocols and getattr(self, key) != defaults[key].default:
                raise ValueError(
                    f"fl.{key} applies to fl.protocol {', '.join(sorted(protocols))}, not to"
                    f" {self.protocol}"
                )
        if self.protocol not in _TOGETHER:
            if self.over_selection > 0:
                raise ValueError(
                    "fl.over_selection applies to fl.protocol fedavg, fedcs, not to"
                    f" {self.protocol}"
                )
            if self.distribution == "multicast":
                raise ValueError(
                    f"fl.distribution multicast needs clients that start together; under"
                    f" {self.protocol} use unicast or instant"
                )
        if not self.partial_work and self.partial_work_upload_factor != 1.0:
            raise ValueError("fl.partial_work_upload_factor applies with fl.partial_work: true")
        if self.partial_work and self.deadline_s is None:
            raise ValueError(
                "fl.partial_work needs fl.deadline_s: a client cuts its local work short to"
                " upload before the deadline, and without one it never has to"
            )
        if self.is_async and self.buffer_in_force > self.concurrency_in_force:
            raise ValueError(
                f"fl.buffer_size ({self.buffer_in_force}) is larger than fl.concurrency"
                f" ({self.concurrency_in_force}): the buffer would never fill"
            )
        return self

    @property
    def is_async(self) -> bool:
        """Whether the protocol is asynchronous (fedasync, fedbuff)."""
        return self.protocol in ASYNC_PROTOCOLS

    @property
    def concurrency_in_force(self) -> int:
        """Clients training at any time under an asynchronous protocol."""
        return self.concurrency or self.clients_per_round

    @property
    def buffer_in_force(self) -> int:
        """Updates per aggregation: fedbuff's buffer, 1 for fedasync, m for the others."""
        if self.protocol == "fedasync":
            return 1
        if self.protocol == "fedbuff":
            return self.buffer_size or self.concurrency_in_force
        return self.clients_per_round

    @property
    def distribution_mode(self) -> str:
        """The distribution step in force (the protocol's default when not set)."""
        return self.distribution or DEFAULT_DISTRIBUTION[self.protocol]

    @property
    def selection_budget(self) -> int:
        """How many clients the strategy selects: ceil(m (1 + o))."""
        # The tolerance keeps 10 x (1 + 0.1) at 11, not 12, despite rounding.
        return math.ceil(self.clients_per_round * (1 + self.over_selection) - 1e-9)
