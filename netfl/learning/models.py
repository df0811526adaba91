"""The papers' networks, built by name: ``model(input_shape, n_classes) -> nn.Module``.

Where a paper leaves a detail open (padding, where the last pooling sits), the choice is
documented on the builder and pinned by a parameter-count test. None uses dropout (models
with dropout train in both backends with the same per-client masks:
:mod:`netfl.learning.dropout`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from torch import nn


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def _mlp(n_inputs: int, hidden: Sequence[int], n_classes: int) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Flatten()]
    width = n_inputs
    for units in hidden:
        layers += [nn.Linear(width, units), nn.ReLU()]
        width = units
    layers.append(nn.Linear(width, n_classes))
    return nn.Sequential(*layers)


def _image_shape(input_shape: tuple[int, ...], model: str) -> tuple[int, int, int]:
    if len(input_shape) != 3:
        raise ValueError(f"{model} takes images (C, H, W); this dataset gives {input_shape}")
    channels, height, width = input_shape
    return channels, height, width


def _conv_out(size: int, kernel: int, padding: int) -> int:
    return size + 2 * padding - kernel + 1


def digits_mlp(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """A small MLP for 8x8 digits: flatten -> 64 ReLU -> n_classes (4,810 parameters)."""
    return _mlp(math.prod(input_shape), [64], n_classes)


def logistic_regression(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """Multinomial logistic regression, UCB-CS's model for Synthetic(1,1).

    Cho et al. 2020 Sec. IV; with 60 features and 10 classes, 610 parameters.
    """
    return _mlp(math.prod(input_shape), [], n_classes)


def mlp_64_30(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """MLP with two hidden ReLU layers of 64 and 30 units.

    GPFL's FEMNIST model (Na et al. 2024 Sec. V-B1) and UCB-CS's FMNIST "deep
    multi-layer perceptron network with two hidden layers" (Cho et al. 2020
    Sec. IV, widths not stated there; 64-30 is the FMNIST MLP of the same setting in the
    FedCor/pow-d code that GPFL cites, with UCB-CS's b = 64 and eta = 0.005). FedCor's
    dropout is left out. 28x28 input: 52,500 parameters for 10 classes, 54,112 for 62.
    """
    return _mlp(math.prod(input_shape), [64, 30], n_classes)


def fedcs_cifar_cnn(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """The FedCS / MAB-CS CIFAR-10 CNN (Yoshida et al. 2020 Sec. IV).

    Six 3x3 convolutions (32, 32, 64, 64, 128, 128 channels, 'same' padding), each
    followed by ReLU then batch norm; FC 512 and 192 with ReLU, then n_classes.

    The paper says every two convolutions are followed by 2x2 max pooling, which on 32x32
    input would flatten 128x4x4 = 2,048 features and give 1.44 M parameters, yet it states
    about 4.6 M parameters (18.3 MB in fp32). Only a 128x8x8 = 8,192 flatten gives that,
    so the pooling sits after the first two pairs only: 4,583,146 parameters = 18.33 MB.
    """
    channels, height, width = _image_shape(input_shape, "fedcs_cifar_cnn")
    layers: list[nn.Module] = []
    widths = [32, 32, 64, 64, 128, 128]
    previous = channels
    for index, units in enumerate(widths):
        layers += [nn.Conv2d(previous, units, 3, padding=1), nn.ReLU(), nn.BatchNorm2d(units)]
        previous = units
        if index in (1, 3):
            layers.append(nn.MaxPool2d(2))
            height, width = height // 2, width // 2
    flat = previous * height * width
    layers += [nn.Flatten(), nn.Linear(flat, 512), nn.ReLU(), nn.Linear(512, 192), nn.ReLU()]
    layers.append(nn.Linear(192, n_classes))
    return nn.Sequential(*layers)


def rbcsf_fmnist_cnn(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """RBCS-F's Fashion-MNIST CNN (Huang et al. 2021 Sec. 6.2).

    Two 5x5 convolutions with 20 and 50 channels, each followed by 2x2 max pooling, FC 500
    with ReLU, softmax output. Padding is not stated; unpadded (the classic LeNet of this
    shape) gives 50x4x4 after the second pooling and 431,080 parameters on 28x28 input.
    As in that LeNet and in the paper's text, the only activation is the FC layer's ReLU
    (none after the convolutions).
    """
    channels, height, width = _image_shape(input_shape, "rbcsf_fmnist_cnn")
    for _ in range(2):
        height, width = _conv_out(height, 5, 0) // 2, _conv_out(width, 5, 0) // 2
    return nn.Sequential(
        nn.Conv2d(channels, 20, 5),
        nn.MaxPool2d(2),
        nn.Conv2d(20, 50, 5),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(50 * height * width, 500),
        nn.ReLU(),
        nn.Linear(500, n_classes),
    )


def rbcsf_cifar_cnn(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """RBCS-F's CIFAR-10 CNN (Huang et al. 2021 Sec. 6.2).

    Two 5x5 convolutions with 64 channels, each followed by 2x2 max pooling, FC 384 and
    192, softmax output. ReLU after each convolution and hidden FC layer and 'same'
    padding, as in the TensorFlow CIFAR-10 tutorial model this describes (its local
    response normalisation left out): 64x8x8 flatten, 1,756,426 parameters on 32x32 input.
    """
    channels, height, width = _image_shape(input_shape, "rbcsf_cifar_cnn")
    flat = 64 * (height // 4) * (width // 4)
    return nn.Sequential(
        nn.Conv2d(channels, 64, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(64, 64, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(flat, 384),
        nn.ReLU(),
        nn.Linear(384, 192),
        nn.ReLU(),
        nn.Linear(192, n_classes),
    )


def gpfl_cifar_cnn(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """GPFL's CIFAR-10 CNN (Na et al. 2024 Sec. V-B2).

    Three convolutions with 32, 64 and 64 kernels and an FC layer of 64 units. Kernel size,
    padding and pooling follow the FedCor code GPFL took its baselines from (3x3,
    unpadded, 2x2 max pooling after the first two): 64x4x4 flatten, 122,570 parameters.
    """
    channels, height, width = _image_shape(input_shape, "gpfl_cifar_cnn")
    for _ in range(2):
        height, width = _conv_out(height, 3, 0) // 2, _conv_out(width, 3, 0) // 2
    height, width = _conv_out(height, 3, 0), _conv_out(width, 3, 0)
    return nn.Sequential(
        nn.Conv2d(channels, 32, 3),
        nn.MaxPool2d(2),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3),
        nn.MaxPool2d(2),
        nn.ReLU(),
        nn.Conv2d(64, 64, 3),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(64 * height * width, 64),
        nn.ReLU(),
        nn.Linear(64, n_classes),
    )
