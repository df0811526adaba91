"""Scenario section `learning`: dataset, partition, model, local training and evaluation."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from netfl.config.base import (
    INPUT_PATH,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    PositiveSeconds,
    Probability,
    StrictModel,
)
from netfl.errors import Problem

if TYPE_CHECKING:
    from netfl.config.devices import DevicesConfig
    from netfl.config.fl import FLConfig


class SyntheticParams(StrictModel):
    """Synthetic(alpha, beta) of FedProx (Li et al., MLSys 2020), as used by UCB-CS.

    One device k draws u_k ~ N(0, alpha), B_k ~ N(0, beta), W_k, b_k ~ N(u_k, 1),
    v_k ~ N(B_k, 1) per feature and x ~ N(v_k, diag(j^-1.2)); y = argmax(W_k x + b_k).
    The sample count of device k is floor(lognormal(size_log_mean, size_log_sigma)) +
    size_offset (FedProx's "power law" sizes).
    """

    alpha: NonNegativeFloat = Field(
        default=1.0, description="Spread of the devices' models (std of u_k, as in FedProx's code)."
    )
    beta: NonNegativeFloat = Field(
        default=1.0, description="Spread of the devices' features (std of B_k)."
    )
    n_features: PositiveInt = Field(
        default=60, le=10_000, description="Input dimension d (at most 10,000)."
    )
    n_classes: int = Field(
        default=10, ge=2, le=1000, description="Number of classes (at most 1,000)."
    )
    size_log_mean: float = Field(
        default=4.0,
        le=20.0,
        description="Mean of the log of a device's size (at most 20: a median device of"
        " e^20, half a billion samples).",
    )
    size_log_sigma: NonNegativeFloat = Field(
        default=2.0,
        le=10.0,
        description="Standard deviation of the log of a device's size (at most 10).",
    )
    size_offset: int = Field(
        default=50,
        ge=0,
        le=10**9,
        description="Samples added to every device (at most a billion).",
    )

    @property
    def mean_size(self) -> float:
        """A device's expected sample count, exp(mu + sigma^2 / 2) + offset (a lognormal's
        mean; the floor is left out)."""
        return math.exp(self.size_log_mean + self.size_log_sigma**2 / 2) + self.size_offset


#: The largest learning rate, proximal weight or weight decay taken: beyond any stable
#: setting (issue 34: 1e308 overflowed the float32 training with no key named).
MAX_RATE = 1000.0

#: Per-dataset parameter models for ``learning.dataset_params`` (netfl's other datasets
#: take none, which :func:`netfl.registry.registry_checks` enforces; a plug-in's loader
#: receives the mapping unvalidated).
DATASET_PARAMS: dict[str, type[StrictModel]] = {"synthetic": SyntheticParams}

_PARAMS_HELP = "; ".join(
    f"{name}: " + ", ".join(f"{key} (default {f.default})" for key, f in model.model_fields.items())
    for name, model in DATASET_PARAMS.items()
)

PartitionKind = Literal["iid", "dirichlet", "shards", "power_law", "natural", "clustered"]

#: Partition parameter -> the kind it belongs to.
_PARTITION_PARAMS = {
    "alpha": "dirichlet",
    "shards_per_client": "shards",
    "exponent": "power_law",
    "min_samples": "power_law",
    "clusters": "clustered",
    "labels_per_cluster": "clustered",
}
#: Kind -> the parameters it cannot do without.
_PARTITION_REQUIRED = {
    "dirichlet": ("alpha",),
    "shards": ("shards_per_client",),
    "power_law": ("exponent",),
    "clustered": ("clusters", "labels_per_cluster"),
}
#: Kinds that decide every device's data size themselves.
SIZE_SETTING_KINDS = frozenset({"shards", "power_law", "natural"})


class PartitionConfig(StrictModel):
    """How the training set is split among the devices (one kind, with its parameters)."""

    kind: PartitionKind = Field(
        default="iid",
        description=(
            "iid: with the devices' n_samples set, each device draws that many samples"
            " uniformly without replacement from the whole training set (devices may share"
            " samples, as in MAB-CS); without it, the training set is dealt out evenly."
            " dirichlet: label skew of Hsu et al. (2019): device k's label mix q_k ~"
            " Dir(alpha p), sizes from n_samples (or even), samples disjoint."
            " shards: sort by label, cut into shards_per_client x devices equal shards, deal"
            " them out at random (GPFL's 1SPC / 2SPC). power_law: IID labels, sizes"
            " min_samples + Pareto(exponent) shares of the rest. natural: the dataset's own"
            " split (Synthetic: one generated device each; FEMNIST: one writer each)."
            " clustered: the devices fall at random into `clusters` equal-sized groups, and"
            " every device of a group holds the same labels_per_cluster labels (label skew"
            " by cluster, as NCCB assumes); sizes from n_samples (or even), samples disjoint."
            " shards, power_law and natural set the sizes themselves (no n_samples)."
        ),
    )
    alpha: PositiveFloat | None = Field(
        default=None, description="dirichlet: concentration alpha (smaller = more skewed)."
    )
    shards_per_client: PositiveInt | None = Field(
        default=None, description="shards: shards per device (1 = 1SPC, 2 = 2SPC)."
    )
    exponent: PositiveFloat | None = Field(
        default=None,
        description="power_law: Pareto shape a of the size shares (smaller = heavier).",
    )
    min_samples: PositiveInt | None = Field(
        default=None, description="power_law: samples every device gets at least (default 1)."
    )
    clusters: PositiveInt | None = Field(
        default=None, description="clustered: number of device clusters C (at most the devices)."
    )
    labels_per_cluster: PositiveInt | None = Field(
        default=None,
        description=(
            "clustered: labels each cluster holds; cluster c takes the labels at positions"
            " c L .. c L + L - 1 (mod the number of classes) of a random order of the classes:"
            " disjoint sets when clusters x labels_per_cluster <= classes, overlapping otherwise."
        ),
    )

    @model_validator(mode="after")
    def _params_fit_kind(self) -> PartitionConfig:
        for key, kind in _PARTITION_PARAMS.items():
            if getattr(self, key) is not None and kind != self.kind:
                raise ValueError(f"{key} applies to kind {kind}, not {self.kind}")
        for key in _PARTITION_REQUIRED.get(self.kind, ()):
            if getattr(self, key) is None:
                raise ValueError(f"kind {self.kind} needs {key}")
        return self


class LearningConfig(StrictModel):
    """Real training with PyTorch: dataset, partition, model, local SGD and evaluation."""

    dataset: str = Field(default="digits", description="Dataset name (`netfl list`).")
    dataset_params: dict[str, Any] = Field(
        default_factory=dict,
        description=f"Parameters of the dataset, by dataset. {_PARAMS_HELP}.",
    )
    data_root: str | None = Field(
        default=None,
        description=(
            "Folder with the dataset's files, for file-based datasets (mnist, fashion_mnist,"
            " cifar10, femnist; plug-ins read it too); a relative path is taken from the"
            " scenario file's folder (docs/scenario.md, 'Paths')."
        ),
        json_schema_extra=INPUT_PATH,
    )
    test_fraction: Probability = Field(
        default=0.2,
        description="Share held out for evaluation, for datasets without a test split.",
    )
    partition: PartitionConfig = Field(default_factory=PartitionConfig, description="Partition.")
    model: str = Field(default="digits_mlp", description="Model name (`netfl list`).")
    local_epochs: PositiveInt | None = Field(
        default=1,
        le=1000,
        description="Local epochs per round (null when local_steps is set). At most 1,000:"
        " every epoch is real training of each selected client's data.",
    )
    local_steps: PositiveInt | None = Field(
        default=None,
        le=100_000,
        description=(
            "Local iterations per round instead of epochs (UCB-CS's tau): each is one"
            " minibatch, drawn epoch-wise without replacement; excludes local_epochs. At most"
            " 100,000: every step is real training."
        ),
    )
    batch_size: PositiveInt = Field(default=10, description="Local minibatch size.")
    lr: PositiveFloat = Field(
        default=0.05,
        le=MAX_RATE,
        description="Initial learning rate of local SGD (at most 1,000: far beyond a stable"
        " step for any model; netfl validate warns where the step is unstable).",
    )
    lr_decay: PositiveFloat = Field(
        default=1.0, le=1.0, description="Learning rate multiplied by this every round."
    )
    lr_milestones: list[PositiveInt] = Field(
        default_factory=list,
        description="Rounds at which the learning rate is multiplied by lr_milestone_factor.",
    )
    lr_milestone_factor: PositiveFloat = Field(
        default=0.5, le=1.0, description="Factor applied at each milestone (UCB-CS: halved)."
    )
    momentum: NonNegativeFloat = Field(
        default=0.0, lt=1.0, description="SGD momentum of local training (torch.optim.SGD)."
    )
    weight_decay: NonNegativeFloat = Field(
        default=0.0,
        le=MAX_RATE,
        description="SGD weight decay (L2), at most 1,000 (lr x (prox_mu + weight_decay)"
        " of 2 (1 + momentum) or more makes every local step unstable: validate warns).",
    )
    prox_mu: NonNegativeFloat = Field(
        default=0.0,
        le=MAX_RATE,
        description=(
            "FedProx's proximal term (Li et al., MLSys 2020, eq. (2)): each client minimises"
            " F_k(w) + (mu / 2) ||w - w_t||^2 from the global model w_t, so each local step's"
            " gradient gains mu (w - w_t); 0: plain local SGD (FedAvg). The paper uses"
            " mu = 1 on Synthetic(1,1). At most 1,000; lr x (prox_mu + weight_decay) of"
            " 2 (1 + momentum) or more makes every local step unstable (validate warns)."
        ),
    )
    eval_every_rounds: PositiveInt | None = Field(
        default=1, description="Evaluate the global model every N rounds (null: not by rounds)."
    )
    eval_every_s: PositiveSeconds | None = Field(
        default=None,
        description=(
            "Also evaluate at the end of the first round that ends at or after each multiple"
            " of this simulated time (null: not by time). The last round is always evaluated."
        ),
    )
    fairness_loss: Literal["none", "train", "test"] = Field(
        default="none",
        description=(
            "At each evaluation, also compute every device's loss of the global model (train:"
            " on its training data, F_k(w) of UCB-CS eq. (3); test: on test data with its"
            " label mix), recorded as client_loss timeline events."
        ),
    )
    target_accuracy: Probability | None = Field(
        default=None, description="Accuracy whose first reach is reported as time_to_target_s."
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        default="auto", description="Torch device: auto picks cuda when available."
    )
    threads: PositiveInt | None = Field(
        default=1,
        le=1024,
        description=(
            "CPU threads for training (torch intra-op, also on a GPU run for its host side)"
            " and for numpy's BLAS during the run"
            " (strategies' linear algebra): 1 suits the small models netfl trains per client,"
            " where OpenMP workers spin-waiting on a shared CPU cost 10x (docs/benchmarks.md,"
            " 'CPU threads'); null keeps the libraries' defaults (all cores). At most 1,024:"
            " threads beyond the cores only wait for one."
        ),
    )
    backend: Literal["batched", "dense", "sequential"] = Field(
        default="batched",
        description=(
            "batched: a round's clients train together; on CPU, Flatten/Linear/ReLU stacks"
            " (logistic regression, MLPs) take the dense path, models with convolutions the"
            " sequential loop (faster there), other models torch.func vmap, as on a GPU."
            " dense: the hand-written forward and backward pass of Linear and ReLU layers for"
            " all clients at once (refused for other models). sequential: one client after"
            " another (the reference). All give the same updates up to float rounding;"
            " summary.json's training_path says which ran."
        ),
    )
    max_parallel_clients: PositiveInt | None = Field(
        default=None,
        description="batched: train at most this many clients at once (memory; null: all).",
    )
    bf16: bool = Field(
        default=False,
        description=(
            "batched, cuda only: bf16 autocast of the forward pass, and with it of the"
            " backward's matrix products and convolutions; parameters, their updates and"
            " batch-norm statistics stay fp32. A GPU without bf16 is refused."
        ),
    )
    cuda_graphs: bool = Field(
        default=True,
        description=(
            "batched, cuda only: capture each chunk's training step once as a CUDA graph"
            " and replay it (one launch a step, no host synchronisation inside a round;"
            " netfl/learning/capture.py). A step that cannot be captured trains eagerly,"
            " with a warning; summary.json's training_path says which ran. false: eager."
        ),
    )

    @field_validator("dataset_params")
    @classmethod
    def _dataset_params(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        dataset = info.data.get("dataset", "")
        model = DATASET_PARAMS.get(dataset)
        if model is None:
            # A plug-in's loader validates its own parameters; netfl's datasets without
            # parameters are known to the registry, which refuses them there.
            return value
        try:
            return model.model_validate(value).model_dump()
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"])
            message = first["msg"]
            raise PydanticCustomError(
                "dataset_params",
                "{where}{message}",
                {"where": f"{where}: " if where else "", "message": message},
            ) from None

    @model_validator(mode="before")
    @classmethod
    def _time_based_evaluation_only(cls, data: Any) -> Any:
        # eval_every_s alone means "by time only", not "by time and every round";
        # local_steps alone means "no epochs".
        if isinstance(data, dict) and data.get("eval_every_s") is not None:
            data = {"eval_every_rounds": None, **data}
        if isinstance(data, dict) and data.get("local_steps") is not None:
            data = {"local_epochs": None, **data}
        return data

    @model_validator(mode="after")
    def _steps_or_epochs(self) -> LearningConfig:
        if (self.local_steps is None) == (self.local_epochs is None):
            raise ValueError("set exactly one of local_epochs and local_steps")
        if self.eval_every_rounds is None and self.eval_every_s is None:
            raise ValueError("set eval_every_rounds, eval_every_s, or both")
        if self.bf16 and self.device == "cpu":
            raise ValueError("bf16 autocast is for cuda; set device to auto or cuda")
        if self.bf16 and self.backend != "batched":
            raise ValueError("bf16 autocast is a feature of the batched backend")
        return self


def learning_problems(
    learning: LearningConfig | None, fl: FLConfig, devices: DevicesConfig
) -> list[Problem]:
    """Constraints between ``learning`` and the ``fl`` and ``devices`` sections (called by
    the scenario's ``cross_checks``)."""
    if learning is None:
        return _without_learning(fl)
    if learning.partition.kind not in SIZE_SETTING_KINDS:
        return []
    return [
        Problem(
            f"devices.groups.{index}.n_samples",
            f"learning.partition.kind {learning.partition.kind} sets every device's data"
            " size itself; remove n_samples (the sizes appear in clients.parquet)",
        )
        for index, group in enumerate(devices.groups)
        if group.n_samples is not None
    ]


def _without_learning(fl: FLConfig) -> list[Problem]:
    """``learning: none`` has no local steps to cut short and no models to aggregate."""
    problems = []
    if fl.partial_work:
        problems.append(
            Problem(
                "fl.partial_work",
                "partial work counts local SGD steps, and learning is none; set learning",
            )
        )
    if fl.aggregation.name != "fedavg":
        problems.append(
            Problem(
                "fl.aggregation.name",
                f"'{fl.aggregation.name}' aggregates models, and learning is none;"
                " set learning or use fedavg",
            )
        )
    return problems
