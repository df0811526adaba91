"""A model builder: a small CNN for small greyscale images."""

from __future__ import annotations

from torch import nn


def small_cnn(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """Two 3x3 convolutions (8 and 16 channels, 'same' padding), each followed by ReLU and
    2x2 max pooling, then a linear layer to ``n_classes`` logits.

    ``input_shape`` is one sample's shape, (channels, height, width); for 8x8 images,
    16 x 2 x 2 = 64 features reach the linear layer (1,544 parameters with 4 classes).
    """
    if len(input_shape) != 3:
        raise ValueError(f"small_cnn takes images (C, H, W); this dataset gives {input_shape}")
    channels, height, width = input_shape
    return nn.Sequential(
        nn.Conv2d(channels, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * (height // 4) * (width // 4), n_classes),
    )
