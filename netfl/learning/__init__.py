"""Real training: datasets, partitions, models, local SGD and server aggregation.

The tables below register datasets, models and aggregation rules by name (imported only
when used).
"""

from netfl.registry_entry import Entry

DATASETS: dict[str, Entry] = {
    "digits": Entry(
        "netfl.learning.datasets:load_digits",
        "scikit-learn's bundled 8x8 handwritten digits (1,797 images, 10 classes); no download",
    ),
    "synthetic": Entry(
        "netfl.learning.datasets:load_synthetic",
        "FedProx's Synthetic(alpha, beta) logistic-regression data, one device per client,"
        " generated from the seed (UCB-CS)",
    ),
    "mnist": Entry(
        "netfl.learning.files:load_mnist",
        "MNIST 28x28 digits from its IDX files in learning.data_root (60k/10k)",
    ),
    "fashion_mnist": Entry(
        "netfl.learning.files:load_fashion_mnist",
        "Fashion-MNIST 28x28 from its IDX files in learning.data_root (60k/10k)",
    ),
    "cifar10": Entry(
        "netfl.learning.files:load_cifar10",
        "CIFAR-10 32x32 colour from the python batches in learning.data_root (50k/10k)",
    ),
    "femnist": Entry(
        "netfl.learning.files:load_femnist",
        "LEAF FEMNIST 28x28 characters, 62 classes, one owner per writer (JSON in data_root)",
    ),
}

#: Datasets generated or shipped with a package: they read nothing from learning.data_root.
EMBEDDED_DATASETS = frozenset({"digits", "synthetic"})

MODELS: dict[str, Entry] = {
    "digits_mlp": Entry(
        "netfl.learning.models:digits_mlp",
        "MLP 64-64-10 with ReLU for 8x8 digits (4,810 parameters)",
    ),
    "logistic_regression": Entry(
        "netfl.learning.models:logistic_regression",
        "multinomial logistic regression, UCB-CS on Synthetic(1,1) (610 parameters for 60x10)",
    ),
    "mlp_64_30": Entry(
        "netfl.learning.models:mlp_64_30",
        "MLP with hidden layers 64-30, GPFL FEMNIST and UCB-CS FMNIST (52,500 params, 28x28->10)",
    ),
    "fedcs_cifar_cnn": Entry(
        "netfl.learning.models:fedcs_cifar_cnn",
        "FedCS / MAB-CS CIFAR-10 CNN: six 3x3 convs + BN, FC 512-192 (4,583,146 params = 18.3 MB)",
    ),
    "rbcsf_fmnist_cnn": Entry(
        "netfl.learning.models:rbcsf_fmnist_cnn",
        "RBCS-F Fashion-MNIST CNN: 5x5 convs 20-50, FC 500 (431,080 params)",
    ),
    "rbcsf_cifar_cnn": Entry(
        "netfl.learning.models:rbcsf_cifar_cnn",
        "RBCS-F CIFAR-10 CNN: 5x5 convs 64-64, FC 384-192 (1,756,426 params)",
    ),
    "gpfl_cifar_cnn": Entry(
        "netfl.learning.models:gpfl_cifar_cnn",
        "GPFL CIFAR-10 CNN: 3x3 convs 32-64-64, FC 64 (122,570 params)",
    ),
}

#: Server aggregation rules (``fl.aggregation.name``), one per module of
#: :mod:`netfl.learning.aggregation`.
AGGREGATIONS: dict[str, Entry] = {
    "fedavg": Entry(
        "netfl.learning.aggregation.fedavg:federated_averaging",
        "FedAvg: the data-size-weighted average of the client models (McMahan et al. 2017)",
    ),
    "fednova": Entry(
        "netfl.learning.aggregation.fednova:fednova",
        "FedNova: updates normalised by their local steps, rescaled by tau_eff (Wang et al."
        " 2020); for heterogeneous local work such as partial work",
    ),
    "fedavgm": Entry(
        "netfl.learning.aggregation.fedavgm:fedavgm",
        "FedAvgM: server momentum on the averaged update (Hsu et al. 2019)",
    ),
    "fedadagrad": Entry(
        "netfl.learning.aggregation.fedadagrad:fedadagrad",
        "FedAdagrad: Adagrad on the server (Reddi et al. 2021, Alg. 2)",
    ),
    "fedadam": Entry(
        "netfl.learning.aggregation.fedadam:fedadam",
        "FedAdam: Adam on the server, no bias correction (Reddi et al. 2021, Alg. 2)",
    ),
    "fedyogi": Entry(
        "netfl.learning.aggregation.fedyogi:fedyogi",
        "FedYogi: Yogi on the server (Reddi et al. 2021, Alg. 2)",
    ),
}


def is_plugin(name: str) -> bool:
    """Whether a dataset or model name is a plug-in (``package.module:Name``, or an entry
    point), not one of netfl's own (which the test suite runs the conformance checks on,
    :mod:`netfl.learning.check`)."""
    return name not in DATASETS and name not in MODELS
