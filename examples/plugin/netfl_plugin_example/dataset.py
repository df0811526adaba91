"""A dataset loader: your own numpy arrays, from an ``.npz`` file in ``learning.data_root``.

The file holds ``x`` (N samples of any shape, e.g. (N, 1, 8, 8) images) and ``y`` (N
integer labels 0 .. C - 1). The loader holds out ``learning.test_fraction`` of each class
as the test set, drawing from the generator netfl passes (so a run is reproducible).

``python -m netfl_plugin_example.dataset DIR`` writes a demo file, ``DIR/arrays.npz``:
600 8x8 images of a bar in one of four places (top, bottom, left, right half), with noise.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from netfl.config.learning import LearningConfig
from netfl.errors import DatasetError
from netfl.learning.datasets import Dataset, from_numpy, stratified_split

FILE_NAME = "arrays.npz"


def load_npz(config: LearningConfig, rng: np.random.Generator, n_clients: int) -> Dataset:
    """``x`` and ``y`` from ``learning.data_root``/arrays.npz, split into train and test."""
    if config.data_root is None:
        raise DatasetError(f"npz: set learning.data_root to the folder holding {FILE_NAME}")
    path = Path(config.data_root).expanduser() / FILE_NAME
    try:
        with np.load(path) as arrays:
            x, y = arrays["x"].astype(np.float32), arrays["y"].astype(np.int64)
    except (OSError, KeyError, ValueError) as exc:
        raise DatasetError(f"npz: cannot read x and y from {path} ({exc})") from None
    train, test = stratified_split(y, config.test_fraction, rng)
    n_classes = int(y.max()) + 1
    return from_numpy("npz", (x[train], y[train]), (x[test], y[test]), n_classes=n_classes)


def make_bars(folder: str | Path, n: int = 600, noise: float = 0.3, seed: int = 0) -> Path:
    """Write the demo ``arrays.npz``: class 0/1 a row in the top/bottom half, 2/3 a column
    in the left/right half, plus Gaussian noise of standard deviation ``noise``."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    x = rng.normal(0.0, noise, (n, 1, 8, 8)).astype(np.float32)
    line = rng.integers(0, 4, n) + np.where(y % 2 == 1, 4, 0)  # which row or column
    for i in range(n):
        if y[i] < 2:
            x[i, 0, line[i], :] += 1.0
        else:
            x[i, 0, :, line[i]] += 1.0
    path = Path(folder) / FILE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, x=x, y=y)
    return path


if __name__ == "__main__":  # pragma: no cover
    print(make_bars(sys.argv[1] if len(sys.argv) > 1 else "data"))
