"""Dropout per client (issue 32 item 2): models with dropout train batched, reproducibly.

Both trainers draw a client's masks from its own seed (netfl/learning/dropout.py), so the
batched backend's update of a client equals the sequential reference's within the
tolerance of the runs without dropout, and does not depend on the clients beside it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from netfl.learning.batched import BatchedTrainer
from netfl.learning.dropout import ClientDropout, client_key, mix32, set_draws
from netfl.learning.trainer import SequentialTrainer
from tests.test_learning_trainer import SGDS, SIZES, _data

CPU = torch.device("cpu")


def dropout_mlp(input_shape: tuple[int, ...] = (1, 8, 8), n_classes: int = 3) -> nn.Module:
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(math.prod(input_shape), 24),
        nn.ReLU(),
        nn.Dropout(0.3),
        nn.Linear(24, 12),
        nn.ReLU(),
        nn.Dropout(0.5),
        nn.Linear(12, n_classes),
    )


def dropout_cnn(input_shape: tuple[int, ...] = (1, 8, 8), n_classes: int = 3) -> nn.Module:
    channels, height, width = input_shape
    return nn.Sequential(
        nn.Conv2d(channels, 4, 3, padding=1),
        nn.ReLU(),
        nn.Dropout2d(0.25),
        nn.BatchNorm2d(4),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * (height // 2) * (width // 2), 16),
        nn.ReLU(),
        nn.Dropout(0.5),
        nn.Linear(16, n_classes),
    )


def _train(trainer, model, sizes, sgd, seeds=None, steps=None):
    x, y, indices = _data(sizes)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    seeds = seeds or [11 + k for k in range(len(sizes))]
    return state, trainer.train(state, x, y, indices, seeds, sgd, steps)


def _close(a, b, atol=1e-5):
    states_a, means_a, stds_a = a
    states_b, means_b, stds_b = b
    for name in states_a:
        assert torch.allclose(states_a[name].float(), states_b[name].float(), atol=atol), name
    assert np.allclose(means_a, means_b, atol=atol, equal_nan=True)
    assert np.allclose(stds_a, stds_b, atol=atol, equal_nan=True)


@pytest.mark.parametrize("sgd", SGDS)
@pytest.mark.parametrize("make", [dropout_mlp, dropout_cnn])
def test_batched_with_dropout_equals_sequential(make, sgd):
    """Seeded equivalence: the same masks in both trainers, so the same updates."""
    torch.manual_seed(3)
    model = make()
    _, reference = _train(SequentialTrainer(model, CPU), model, SIZES, sgd)
    _, batched = _train(BatchedTrainer(model, CPU, vectorize_convolutions=True), model, SIZES, sgd)
    _close(batched, reference)


def test_dropout_changes_the_update_and_repeats_with_the_seed():
    torch.manual_seed(3)
    model = dropout_mlp()
    sgd = SGDS[2]
    plain = nn.Sequential(*[m for m in model if not isinstance(m, nn.Dropout)])
    trainer = BatchedTrainer(model, CPU)
    state, first = _train(trainer, model, SIZES, sgd)
    _, again = _train(BatchedTrainer(model, CPU), model, SIZES, sgd)
    for name in state:
        assert torch.equal(first[0][name], again[0][name])
    renamed = {k.replace("4.", "3.").replace("7.", "5.") for k in first[0]}
    assert renamed == set(plain.state_dict())
    _, other_seeds = _train(trainer, model, SIZES, sgd, seeds=[21, 22, 23, 24, 25])
    assert not torch.allclose(first[0]["4.weight"], other_seeds[0]["4.weight"])


def test_a_clients_update_does_not_depend_on_the_clients_beside_it():
    """Client 3 (64 samples) alone, with the others, and in chunks of two: same update."""
    torch.manual_seed(3)
    model = dropout_mlp()
    sgd = SGDS[0]
    x, y, indices = _data(SIZES)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    seeds = [11 + k for k in range(len(SIZES))]
    together = BatchedTrainer(model, CPU).train(state, x, y, indices, seeds, sgd)
    chunked = BatchedTrainer(model, CPU, max_parallel_clients=2).train(
        state, x, y, indices, seeds, sgd
    )
    alone = BatchedTrainer(model, CPU).train(state, x, y, [indices[3]], [seeds[3]], sgd)
    for name in state:
        assert torch.allclose(together[0][name][3], alone[0][name][0], atol=1e-6)
        assert torch.allclose(chunked[0][name][3], alone[0][name][0], atol=1e-6)


def test_masks_keep_one_minus_p_independently_per_client_and_step():
    """Keep rate 1 - p within 5 sigma; two clients' (and two steps') masks uncorrelated;
    kept inputs scaled by 1 / (1 - p); the layer is the identity in eval mode."""
    layer = ClientDropout(0.3, layer=0, per_channel=False)
    x = torch.ones(64, 1000)
    masks = []
    for key, step in ((client_key(11), 0), (client_key(12), 0), (client_key(11), 1)):
        set_draws([layer], key, step)
        out = layer(x)
        kept = out[out != 0]
        assert torch.allclose(kept, torch.full_like(kept, 1 / 0.7))
        masks.append((out > 0).double().flatten())
    n = masks[0].numel()
    for mask in masks:
        assert abs(float(mask.mean()) - 0.7) < 5 * math.sqrt(0.7 * 0.3 / n)
    for other in masks[1:]:
        assert abs(float(torch.corrcoef(torch.stack([masks[0], other]))[0, 1])) < 5 / math.sqrt(n)
    set_draws([layer], client_key(11), 0)
    assert torch.equal(layer(x), layer(x))  # a function of (key, step), not of a state
    layer.eval()
    assert torch.equal(layer(x), x)


def test_channel_dropout_drops_whole_channels():
    layer = ClientDropout(0.5, layer=1, per_channel=True)
    set_draws([layer], client_key(5), 3)
    out = layer(torch.ones(8, 16, 4, 4))
    per_channel = out.flatten(2)
    assert torch.equal(per_channel.amin(2), per_channel.amax(2))
    assert 0 < int((per_channel[:, :, 0] == 0).sum()) < 8 * 16


def test_mix32_is_a_bijection_on_a_range():
    values = mix32(torch.arange(1 << 16, dtype=torch.int64))
    assert int(values.min()) >= 0 and int(values.max()) < 1 << 32
    assert len(torch.unique(values)) == 1 << 16
