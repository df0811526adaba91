"""File-based datasets read from ``learning.data_root``: MNIST, Fashion-MNIST, CIFAR-10, FEMNIST.

netfl never downloads. Each loader reads the files in the layout their publishers
distribute, and a missing or malformed file raises one :class:`~netfl.errors.DatasetError`
naming the path, the expected layout and where the files come from.
"""

from __future__ import annotations

import gzip
import json
import pickle
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from netfl.config.learning import LearningConfig
from netfl.errors import DatasetError
from netfl.learning.datasets import Dataset, from_numpy

_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_IDX_FILES = {
    "train_x": "train-images-idx3-ubyte",
    "train_y": "train-labels-idx1-ubyte",
    "test_x": "t10k-images-idx3-ubyte",
    "test_y": "t10k-labels-idx1-ubyte",
}
_SOURCES = {
    "mnist": "http://yann.lecun.com/exdb/mnist/ (or torchvision's MNIST/raw folder)",
    "fashion_mnist": (
        "https://github.com/zalandoresearch/fashion-mnist (data/fashion; or torchvision's"
        " FashionMNIST/raw folder)"
    ),
    "cifar10": "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz, unpacked",
    "femnist": (
        "LEAF (https://github.com/TalwalkarLab/leaf): data/femnist/preprocess.sh, then its"
        " data/femnist/data folder"
    ),
}


def _error(dataset: str, problem: str, layout: str) -> DatasetError:
    return DatasetError(
        f"{dataset}: {problem}. Expected {layout}. Files come from {_SOURCES[dataset]}"
    )


def data_root(config: LearningConfig, dataset: str, layout: str) -> Path:
    """The folder ``learning.data_root`` names, which must exist."""
    if config.data_root is None:
        raise _error(dataset, "learning.data_root is not set", layout)
    root = Path(config.data_root).expanduser()
    if not root.is_dir():
        raise _error(dataset, f"{root} is not a folder", layout)
    return root


def read_idx(path: Path) -> np.ndarray:
    """An IDX array (LeCun's format: magic 0 0 type ndim, big-endian int32 dims, data)."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] not in _IDX_TYPES:
        raise ValueError("not an IDX file (bad magic number)")
    ndim = raw[3]
    header = 4 + 4 * ndim
    shape = tuple(int(d) for d in np.frombuffer(raw[4:header], dtype=">i4"))
    dtype = np.dtype(_IDX_TYPES[raw[2]])
    expected = header + int(np.prod(shape)) * dtype.itemsize
    if len(shape) != ndim or len(raw) != expected:
        raise ValueError(f"size {len(raw)} bytes does not match its header {shape}")
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)


def _find_idx(root: Path, base: str) -> Path | None:
    folders = [root, root / "raw", root / "MNIST" / "raw", root / "FashionMNIST" / "raw"]
    names = [base, base + ".gz", base.replace("-idx", ".idx"), base.replace("-idx", ".idx") + ".gz"]
    for folder in folders:
        for name in names:
            if (folder / name).is_file():
                return folder / name
    return None


def _load_idx_dataset(config: LearningConfig, dataset: str) -> Dataset:
    layout = (
        "the four IDX files " + ", ".join(f"{n}[.gz]" for n in _IDX_FILES.values()) + " in"
        " learning.data_root"
    )
    root = data_root(config, dataset, layout)
    arrays: dict[str, np.ndarray] = {}
    for key, base in _IDX_FILES.items():
        path = _find_idx(root, base)
        if path is None:
            raise _error(dataset, f"{root / base}[.gz] is missing", layout)
        try:
            arrays[key] = read_idx(path)
        except (OSError, ValueError, EOFError) as exc:
            raise _error(dataset, f"{path} is unreadable ({exc})", layout) from None
    for part in ("train", "test"):
        x, y = arrays[f"{part}_x"], arrays[f"{part}_y"]
        if x.ndim != 3 or y.ndim != 1 or len(x) != len(y) or (len(y) and y.max() > 9):
            raise _error(
                dataset,
                f"{part} images {x.shape} and labels {y.shape} in {root} do not match"
                " (N x 28 x 28 images, N labels 0-9)",
                layout,
            )
    return from_numpy(
        dataset,
        (arrays["train_x"][:, None].astype(np.float32) / 255.0, arrays["train_y"]),
        (arrays["test_x"][:, None].astype(np.float32) / 255.0, arrays["test_y"]),
        n_classes=10,
    )


def load_mnist(config: LearningConfig, rng: np.random.Generator, n_clients: int) -> Dataset:
    """MNIST from its IDX files; pixels scaled to [0, 1]; the official 60k/10k split."""
    return _load_idx_dataset(config, "mnist")


def load_fashion_mnist(config: LearningConfig, rng: np.random.Generator, n_clients: int) -> Dataset:
    """Fashion-MNIST from its IDX files; pixels scaled to [0, 1]; the official split."""
    return _load_idx_dataset(config, "fashion_mnist")


class _ArraysOnly(pickle.Unpickler):
    """Unpickles the CIFAR batches (dicts, lists, numpy arrays) and refuses anything else."""

    _ALLOWED: ClassVar[set[tuple[str, str]]] = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("_codecs", "encode"),  # bytes in protocol-2 pickles written by Python 3
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}")
        return super().find_class(module, name)


def _cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with path.open("rb") as handle:
        batch = _ArraysOnly(handle, encoding="bytes").load()
    data = np.asarray(batch[b"data"], dtype=np.uint8)
    labels = np.asarray(batch[b"labels"], dtype=np.int64)
    if data.ndim != 2 or data.shape[1] != 3072 or len(data) != len(labels):
        raise ValueError(f"data {data.shape} and labels {labels.shape} are not N x 3072 and N")
    return data.reshape(-1, 3, 32, 32), labels


def load_cifar10(config: LearningConfig, rng: np.random.Generator, n_clients: int) -> Dataset:
    """CIFAR-10 from the python pickle batches; per-channel standardised; 50k/10k split."""
    layout = (
        "data_batch_1 ... data_batch_5 and test_batch (python pickles) in"
        " learning.data_root or its cifar-10-batches-py folder"
    )
    root = data_root(config, "cifar10", layout)
    if (root / "cifar-10-batches-py").is_dir():
        root = root / "cifar-10-batches-py"
    parts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        path = root / name
        if not path.is_file():
            raise _error("cifar10", f"{path} is missing", layout)
        try:
            parts[name] = _cifar_batch(path)
        except (OSError, ValueError, KeyError, TypeError, EOFError, pickle.UnpicklingError) as exc:
            raise _error("cifar10", f"{path} is unreadable ({exc})", layout) from None
    train_x = np.concatenate([parts[f"data_batch_{i}"][0] for i in range(1, 6)])
    train_y = np.concatenate([parts[f"data_batch_{i}"][1] for i in range(1, 6)])
    test_x, test_y = parts["test_batch"]
    scaled = train_x.astype(np.float32) / 255.0
    mean = scaled.mean(axis=(0, 2, 3), keepdims=True)
    std = scaled.std(axis=(0, 2, 3), keepdims=True) + 1e-8
    return from_numpy(
        "cifar10",
        ((scaled - mean) / std, train_y),
        ((test_x.astype(np.float32) / 255.0 - mean) / std, test_y),
        n_classes=10,
    )


def _leaf_folder(folder: Path, layout: str) -> tuple[list[str], list[np.ndarray], list[np.ndarray]]:
    files = sorted(folder.glob("*.json"))
    if not files:
        raise _error("femnist", f"no .json files in {folder}", layout)
    users: list[str] = []
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    for path in files:
        try:
            content = json.loads(path.read_text())
            for user in content["users"]:
                record = content["user_data"][user]
                x = np.asarray(record["x"], dtype=np.float32).reshape(-1, 1, 28, 28)
                y = np.asarray(record["y"], dtype=np.int64)
                if len(x) != len(y):
                    raise ValueError(f"user {user} has {len(x)} images and {len(y)} labels")
                users.append(user)
                xs.append(x)
                ys.append(y)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise _error("femnist", f"{path} is unreadable ({exc})", layout) from None
    return users, xs, ys


def load_femnist(config: LearningConfig, rng: np.random.Generator, n_clients: int) -> Dataset:
    """FEMNIST from LEAF's JSON files: 28x28 characters, 62 classes, one owner per writer.

    Writers are numbered in the order of the (sorted) train files; a test sample belongs
    to the writer of the same name. Use ``partition: {kind: natural}`` for one writer per
    device.
    """
    layout = (
        "LEAF's train/ and test/ folders of .json files ({users, num_samples, user_data:"
        " {user: {x: [[784 floats]], y: [labels]}}}) in learning.data_root"
    )
    root = data_root(config, "femnist", layout)
    for part in ("train", "test"):
        if not (root / part).is_dir():
            raise _error("femnist", f"{root / part} is missing", layout)
    users, train_x, train_y = _leaf_folder(root / "train", layout)
    number = {user: i for i, user in enumerate(users)}
    test_users, test_x, test_y = _leaf_folder(root / "test", layout)
    unknown = [u for u in test_users if u not in number]
    if unknown:
        raise _error("femnist", f"test writer {unknown[0]} has no training data", layout)
    train_owner = np.repeat(np.arange(len(users)), [len(y) for y in train_y])
    test_owner = np.repeat([number[u] for u in test_users], [len(y) for y in test_y])
    labels = np.concatenate(train_y + test_y)
    if labels.min() < 0 or labels.max() > 61:
        raise _error("femnist", f"labels outside 0-61 in {root}", layout)
    return from_numpy(
        "femnist",
        (np.concatenate(train_x), np.concatenate(train_y)),
        (np.concatenate(test_x), np.concatenate(test_y)),
        n_classes=62,
        owners=(train_owner, test_owner.astype(np.int64)),
    )
