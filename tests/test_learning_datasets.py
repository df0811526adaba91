"""Datasets: tiny fixture files in the publishers' exact formats, and the Synthetic generator."""

from __future__ import annotations

import gzip
import json
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from netfl.config.learning import LearningConfig, SyntheticParams
from netfl.errors import DatasetError
from netfl.learning.datasets import load_synthetic, synthetic_device
from netfl.learning.files import load_cifar10, load_fashion_mnist, load_femnist, load_mnist


def _idx_bytes(array: np.ndarray) -> bytes:
    """LeCun's IDX: 0 0 0x08 ndim, big-endian int32 dimensions, unsigned bytes."""
    header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}i", *array.shape)
    return header + array.astype(np.uint8).tobytes()


def _write_idx(root: Path, n_train: int = 12, n_test: int = 5, gz: bool = False) -> None:
    rng = np.random.default_rng(0)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 28, 28)),
        "train-labels-idx1-ubyte": np.arange(n_train) % 10,
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28)),
        "t10k-labels-idx1-ubyte": np.arange(n_test) % 10,
    }
    for name, array in arrays.items():
        data = _idx_bytes(array)
        if gz:
            (root / (name + ".gz")).write_bytes(gzip.compress(data))
        else:
            (root / name).write_bytes(data)


def _config(root: Path, **kw) -> LearningConfig:
    return LearningConfig(data_root=str(root), **kw)


@pytest.mark.parametrize("gz", [False, True])
def test_mnist_idx_files_are_read(tmp_path, gz):
    _write_idx(tmp_path, gz=gz)
    data = load_mnist(_config(tmp_path), np.random.default_rng(0), 3)
    assert data.x_train.shape == (12, 1, 28, 28) and data.x_test.shape == (5, 1, 28, 28)
    assert data.y_train.tolist() == [i % 10 for i in range(12)]
    assert float(data.x_train.min()) >= 0.0 and float(data.x_train.max()) <= 1.0


def test_torchvision_layout_is_found(tmp_path):
    raw = tmp_path / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    _write_idx(raw)
    data = load_fashion_mnist(_config(tmp_path), np.random.default_rng(0), 3)
    assert data.name == "fashion_mnist" and len(data.y_test) == 5


def test_missing_idx_file_names_path_layout_and_source(tmp_path):
    _write_idx(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(DatasetError) as info:
        load_mnist(_config(tmp_path), np.random.default_rng(0), 3)
    message = str(info.value)
    assert str(tmp_path / "t10k-labels-idx1-ubyte") in message
    assert "train-images-idx3-ubyte" in message  # the expected layout
    assert "yann.lecun.com" in message  # where the files come from
    assert "\n" not in message


def test_truncated_idx_file_is_reported(tmp_path):
    _write_idx(tmp_path)
    path = tmp_path / "train-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-7])
    with pytest.raises(DatasetError, match="does not match its header"):
        load_mnist(_config(tmp_path), np.random.default_rng(0), 3)


def test_data_root_must_be_set(tmp_path):
    with pytest.raises(DatasetError, match=r"learning\.data_root is not set"):
        load_mnist(LearningConfig(), np.random.default_rng(0), 3)


def _write_cifar(folder: Path, per_batch: int = 4) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {
            b"batch_label": name.encode(),
            b"labels": [int(v) for v in rng.integers(0, 10, per_batch)],
            b"data": rng.integers(0, 256, (per_batch, 3072)).astype(np.uint8),
            b"filenames": [b"x.png"] * per_batch,
        }
        (folder / name).write_bytes(pickle.dumps(batch, protocol=2))


def test_cifar10_python_batches_are_read_and_standardised(tmp_path):
    _write_cifar(tmp_path / "cifar-10-batches-py")
    data = load_cifar10(_config(tmp_path), np.random.default_rng(0), 3)
    assert data.x_train.shape == (20, 3, 32, 32) and data.x_test.shape == (4, 3, 32, 32)
    channel_means = data.x_train.mean(dim=(0, 2, 3))
    assert np.allclose(channel_means.numpy(), 0.0, atol=1e-5)


def test_cifar10_pickle_with_code_is_refused(tmp_path):
    _write_cifar(tmp_path)

    class Evil:
        def __reduce__(self):
            return (print, ("owned",))

    (tmp_path / "test_batch").write_bytes(pickle.dumps({b"data": Evil()}))
    with pytest.raises(DatasetError, match=r"refusing to load builtins\.print"):
        load_cifar10(_config(tmp_path), np.random.default_rng(0), 3)


def test_cifar10_missing_batch(tmp_path):
    _write_cifar(tmp_path)
    (tmp_path / "data_batch_3").unlink()
    with pytest.raises(DatasetError, match=r"data_batch_3 is missing.*cifar-10-python"):
        load_cifar10(_config(tmp_path), np.random.default_rng(0), 3)


def _leaf_file(path: Path, users: dict[str, int], offset: int = 0) -> None:
    rng = np.random.default_rng(offset)
    content = {"users": list(users), "num_samples": list(users.values()), "user_data": {}}
    for user, n in users.items():
        content["user_data"][user] = {
            "x": rng.random((n, 784)).round(3).tolist(),
            "y": [int(v) for v in rng.integers(0, 62, n)],
        }
    path.write_text(json.dumps(content))


def test_femnist_leaf_json_keeps_writers(tmp_path):
    (tmp_path / "train").mkdir()
    (tmp_path / "test").mkdir()
    _leaf_file(tmp_path / "train" / "all_data_0.json", {"f0001": 3, "f0002": 5})
    _leaf_file(tmp_path / "train" / "all_data_1.json", {"f0003": 2})
    _leaf_file(tmp_path / "test" / "all_data_0.json", {"f0002": 1, "f0003": 2}, offset=9)
    data = load_femnist(_config(tmp_path), np.random.default_rng(0), 3)
    assert data.n_classes == 62 and data.x_train.shape == (10, 1, 28, 28)
    assert data.train_owner.tolist() == [0, 0, 0, 1, 1, 1, 1, 1, 2, 2]
    assert data.test_owner.tolist() == [1, 2, 2]


def test_femnist_bad_json_is_reported(tmp_path):
    (tmp_path / "train").mkdir()
    (tmp_path / "test").mkdir()
    (tmp_path / "train" / "a.json").write_text("{not json")
    with pytest.raises(DatasetError, match=r"a\.json is unreadable.*LEAF"):
        load_femnist(_config(tmp_path), np.random.default_rng(0), 3)


def test_synthetic_covariance_is_diagonal_power_law():
    """x ~ N(v_k, diag(j^-1.2)) within one device (FedProx Sec. 5.1)."""
    x, y = synthetic_device(SyntheticParams(), 40_000, np.random.default_rng(2))
    variance = x.var(axis=0)
    expected = np.arange(1, 61) ** -1.2
    assert np.allclose(variance, expected, rtol=0.05)
    assert set(np.unique(y)) <= set(range(10))


def test_synthetic_labels_are_one_linear_model_per_device():
    """y = argmax(W x + b): a multinomial linear fit separates one device's data."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    x, y = synthetic_device(SyntheticParams(n_features=10), 3000, rng)
    while len(np.unique(y)) < 3:  # a device's labels can be all one class; take a richer one
        x, y = synthetic_device(SyntheticParams(n_features=10), 3000, rng)
    fit = LogisticRegression(C=1e4, max_iter=5000).fit(x, y)
    assert fit.score(x, y) > 0.97


def test_synthetic_devices_sizes_and_owners():
    config = LearningConfig(dataset="synthetic", dataset_params={"size_offset": 50})
    data = load_synthetic(config, np.random.default_rng(4), 30)
    sizes = np.bincount(data.train_owner, minlength=30) + np.bincount(data.test_owner, minlength=30)
    assert sizes.min() >= 50
    test_share = np.bincount(data.test_owner, minlength=30) / sizes
    # round(0.2 n) test rows per device: |share - 0.2| <= 0.5 / n <= 0.01 for n >= 50.
    assert np.allclose(test_share, 0.2, atol=0.011)
    again = load_synthetic(config, np.random.default_rng(4), 30)
    assert np.array_equal(data.x_train.numpy(), again.x_train.numpy())


# -- digits: scikit-learn's file, read without importing scikit-learn ---------------------


def test_digits_are_scikit_learns_digits():
    from sklearn.datasets import load_digits as sk_load_digits

    from netfl.learning.datasets import digits_arrays

    images, labels = digits_arrays()
    bunch = sk_load_digits()
    assert images.dtype == np.float32 and labels.dtype == np.int64
    assert np.array_equal(images, bunch.images) and np.array_equal(labels, bunch.target)
    assert images.shape == (1797, 8, 8) and np.bincount(labels).tolist() == [
        178, 182, 177, 183, 181, 182, 181, 179, 174, 180
    ]  # fmt: skip


def test_digits_load_without_importing_scikit_learn():
    import subprocess
    import sys

    probe = (
        "import sys, numpy as np\n"
        "from netfl.config.learning import LearningConfig\n"
        "from netfl.learning.datasets import load_digits\n"
        "data = load_digits(LearningConfig(), np.random.default_rng(0), 4)\n"
        "print(len(data.y_train) + len(data.y_test), 'sklearn' in sys.modules,"
        " 'scipy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1797", "False", "False"]


def test_digits_without_scikit_learn_say_what_to_install(monkeypatch):
    import importlib.util

    from netfl.learning.datasets import digits_arrays

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(DatasetError, match="pip install scikit-learn"):
        digits_arrays()
