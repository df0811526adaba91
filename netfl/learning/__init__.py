"""Real training: datasets, partitions, models, local SGD and FedAvg.

The tables below register datasets and models by name (imported only when used).
"""

from netfl.registry import Entry

DATASETS: dict[str, Entry] = {
    "digits": Entry(
        "netfl.learning.datasets:load_digits",
        "scikit-learn's bundled 8x8 handwritten digits (1,797 images, 10 classes); no download",
    ),
}

MODELS: dict[str, Entry] = {
    "digits_mlp": Entry(
        "netfl.learning.models:digits_mlp",
        "MLP 64-64-10 with ReLU for 8x8 digits (4,810 parameters)",
    ),
}
