"""NCCB's privacy-preserving data contexts, computed on each device from its own data.

Every device summarises its local data (per-class feature means, unit norm:
:func:`netfl.selection.context.data_summary`) and hashes the summary with the LSH of eq. (5)
in Cao et al. 2022, using hashing parameters the server broadcasts (one seeded
draw shared by all devices). Only the integer codes leave the device: ``N_HASHES`` values
of ``BITS_PER_CONTEXT_VALUE`` bits, sent with the client's first resource response.

The quantisation step is ``ETA_FRACTION / sqrt(PROJECTION_DIM)``: a projected coordinate
of a unit-norm summary has a standard deviation of about ``1/sqrt(PROJECTION_DIM)``, so
clients holding the same classes share most buckets while clients whose labels differ
rarely do.
"""

from __future__ import annotations

import math

import numpy as np

from netfl.errors import ScenarioError
from netfl.selection.context import QuantisedLSH, client_contexts

N_HASHES = 16
PROJECTION_DIM = 16
ETA_FRACTION = 0.5


def summary_problem(x: np.ndarray, y: np.ndarray, n_classes: int) -> str | None:
    """Why per-class feature means cannot be computed from ``(x, y)``, or None."""
    if not np.issubdtype(y.dtype, np.integer):
        return f"its labels are {y.dtype}, not class indices"
    if len(y) and (y.min() < 0 or y.max() >= n_classes):
        return f"its labels run from {y.min()} to {y.max()}, outside 0..{n_classes - 1}"
    if not np.issubdtype(x.dtype, np.number) or not np.isfinite(x).all():
        return "its inputs are not all finite numbers"
    return None


def device_contexts(learner: object, rng: np.random.Generator) -> np.ndarray:
    """Contexts of every client, ``(n_clients, N_HASHES)``, from the learner's partition."""
    data = getattr(learner, "data", None)
    partition = getattr(learner, "partition", None)
    if data is None or partition is None:
        raise ScenarioError.single(
            "selection.name",
            "this strategy needs data contexts computed from the devices' data; it needs"
            " learning with a dataset (not learning: none)",
        )
    x = data.x_train.detach().cpu().numpy().reshape(len(data.x_train), -1)
    y = data.y_train.detach().cpu().numpy()
    problem = summary_problem(x, y, data.n_classes)
    if problem:
        raise ScenarioError.single(
            "learning.dataset",
            f"{data.name} cannot provide the data contexts this strategy needs (the LSH of"
            f" each device's per-class feature means): {problem}",
        )
    hasher = QuantisedLSH.create(
        input_dim=data.n_classes * x.shape[1],
        n_hashes=N_HASHES,
        eta=ETA_FRACTION / math.sqrt(PROJECTION_DIM),
        rng=rng,
        projection_dim=PROJECTION_DIM,
    )
    return client_contexts(x, y, partition.train, data.n_classes, hasher)
