"""CIFAR-shaped synthetic data in CIFAR-10's own file layout, for machines without the files.

``python -m benchmarks.synthetic_cifar FOLDER [--train N] [--test N]`` writes
``data_batch_1`` ... ``data_batch_5`` and ``test_batch`` (python pickles of uint8 rows of
3 x 32 x 32 pixels and labels 0-9, as https://www.cs.toronto.edu/~kriz/cifar.html
describes them), so that ``learning.dataset: cifar10`` with ``learning.data_root: FOLDER``
reads them like the real set: ``netfl simulate mab_cs_paper --set
learning.data_root=FOLDER`` runs end to end. Each class has its own mean image (a smooth
random pattern) plus noise, so a CNN learns it: the accuracy rises over the rounds, which
tells a broken training loop from a working one; the figures are not CIFAR-10's.
The GPU check (benchmarks/gpu_check.sh) and tests/test_gpu.py generate their data here.
"""

from __future__ import annotations

import argparse
import pickle
from pathlib import Path

import numpy as np

PIXELS = 3 * 32 * 32
TRAIN_BATCHES = 5


def images(n: int, rng: np.random.Generator, means: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """``n`` rows of uint8 pixels and their labels: class mean plus noise, clipped."""
    labels = rng.integers(0, len(means), n)
    noise = rng.normal(0.0, 48.0, (n, PIXELS)).astype(np.float32)
    pixels = np.clip(means[labels] + noise, 0, 255).astype(np.uint8)
    return pixels, [int(v) for v in labels]


def class_means(rng: np.random.Generator, n_classes: int = 10) -> np.ndarray:
    """A smooth mean image per class: low-frequency random patterns around grey."""
    coarse = rng.normal(0.0, 1.0, (n_classes, 3, 4, 4))
    fine = coarse.repeat(8, axis=2).repeat(8, axis=3)  # 4x4 blocks of 8x8 pixels
    return (128.0 + 40.0 * fine).reshape(n_classes, PIXELS).astype(np.float32)


def write_cifar(folder: Path, n_train: int = 50_000, n_test: int = 10_000, seed: int = 0) -> Path:
    """Write the six batch files into ``folder`` (created); return it."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    means = class_means(rng)
    per_batch = -(-n_train // TRAIN_BATCHES)
    sizes = [min(per_batch, n_train - i * per_batch) for i in range(TRAIN_BATCHES)]
    for name, size in [
        *((f"data_batch_{i + 1}", s) for i, s in enumerate(sizes)),
        ("test_batch", n_test),
    ]:
        pixels, labels = images(max(size, 1), rng, means)
        batch = {b"batch_label": name.encode(), b"labels": labels, b"data": pixels}
        (folder / name).write_bytes(pickle.dumps(batch, protocol=2))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--train", type=int, default=50_000, help="training images")
    parser.add_argument("--test", type=int, default=10_000, help="test images")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(write_cifar(args.folder, args.train, args.test, args.seed))


if __name__ == "__main__":
    main()
