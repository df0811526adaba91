"""Scenario section `learning`: dataset, partition, model and local training."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from netfl.config.base import PositiveFloat, PositiveInt, Probability, StrictModel


class PartitionConfig(StrictModel):
    """How the training set is split among the devices."""

    kind: Literal["iid"] = Field(
        default="iid",
        description=(
            "iid: with the devices' n_samples set, each device draws that many training"
            " samples uniformly without replacement from the whole training set (devices may"
            " share samples, as in MAB-CS); without it, the training set is dealt out evenly."
        ),
    )


class LearningConfig(StrictModel):
    """Real training with PyTorch: dataset, partition, model and local SGD."""

    dataset: str = Field(default="digits", description="Dataset name (`netfl list`).")
    data_root: str | None = Field(
        default=None, description="Folder with the dataset's files, for file-based datasets."
    )
    test_fraction: Probability = Field(
        default=0.2, description="Share of an unsplit dataset held out for evaluation."
    )
    partition: PartitionConfig = Field(default_factory=PartitionConfig, description="Partition.")
    model: str = Field(default="digits_mlp", description="Model name (`netfl list`).")
    local_epochs: PositiveInt = Field(default=1, description="Local epochs per round.")
    batch_size: PositiveInt = Field(default=10, description="Local minibatch size.")
    lr: PositiveFloat = Field(default=0.05, description="Initial learning rate of local SGD.")
    lr_decay: PositiveFloat = Field(
        default=1.0, le=1.0, description="Learning rate multiplied by this every round."
    )
    eval_every_rounds: PositiveInt = Field(
        default=1, description="Evaluate the global model every N rounds (and after the last)."
    )
    target_accuracy: Probability | None = Field(
        default=None, description="Accuracy whose first reach is reported as time_to_target_s."
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        default="auto", description="Torch device: auto picks cuda when available."
    )
