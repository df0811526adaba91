"""The static (capturable) batched step, on CPU (issue 32 item 2).

On a GPU the step of netfl/learning/capture.py is recorded as a CUDA graph and replayed;
here the same static step runs without a graph (``no_graph``), so its numbers (the plan
read through a device counter, the learning rate as a tensor, in-place masked updates,
reuse across rounds and chunks) are checked against the sequential reference on any
machine. tests/test_gpu.py checks the recorded graph itself on CUDA.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from netfl.errors import ScenarioWarning
from netfl.learning.batched import BatchedTrainer
from netfl.learning.capture import CaptureError, no_graph
from netfl.learning.trainer import LocalSGD, SequentialTrainer
from tests.test_learning_dropout import dropout_cnn
from tests.test_learning_trainer import SGDS, SIZES, _bn_cnn, _data, _mlp

CPU = torch.device("cpu")
PROX = LocalSGD(lr=0.1, epochs=2, batch_size=8, momentum=0.5, weight_decay=1e-3, prox_mu=0.3)


def _static(model, **kwargs) -> BatchedTrainer:
    return BatchedTrainer(model, CPU, vectorize_convolutions=True, capture=no_graph, **kwargs)


def _compare(trainer, model, sgd, steps=None, atol=1e-5, data=None):
    x, y, indices = data or _data(SIZES)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    seeds = [11 + k for k in range(len(indices))]
    reference = SequentialTrainer(model, CPU).train(state, x, y, indices, seeds, sgd, steps)
    result = trainer.train(state, x, y, indices, seeds, sgd, steps)
    for name in state:
        assert torch.allclose(result[0][name].float(), reference[0][name].float(), atol=atol)
    assert np.allclose(result[1], reference[1], atol=atol, equal_nan=True)
    assert np.allclose(result[2], reference[2], atol=atol, equal_nan=True)
    return result


@pytest.mark.parametrize("sgd", [*SGDS, PROX])
@pytest.mark.parametrize("make", [_bn_cnn, _mlp, dropout_cnn])
def test_static_step_equals_sequential(make, sgd):
    trainer = _static(make())
    _compare(trainer, make(), sgd)
    assert trainer.path == "batched, captured"


def test_one_static_step_serves_rounds_chunks_and_partial_work():
    """Same shapes, several rounds (the lr decays): one step, reloaded each time; a longer
    plan builds a larger one; chunks of 2 need a step of K = 2 and one of K = 1; new
    training data (another tensor) another."""
    model = _mlp()
    trainer = _static(model)
    data = _data(SIZES)
    for lr in (0.1, 0.05):
        _compare(trainer, model, LocalSGD(lr=lr, epochs=1, batch_size=8), data=data)
    assert len(trainer._captured) == 1
    (step,) = trainer._captured.values()
    longer = LocalSGD(lr=0.1, epochs=2, batch_size=8)
    _compare(trainer, model, longer, steps=[3, 9, 0, 14, 20], data=data)
    assert len(trainer._captured) == 1
    assert next(iter(trainer._captured.values())).capacity > step.capacity
    chunked = _static(model, max_parallel_clients=2)
    _compare(chunked, model, SGDS[0])
    assert sorted(shape.n_clients for shape in chunked._captured) == [1, 2]
    _compare(trainer, model, longer)
    assert len(trainer._captured) == 2


def _refusing(body):
    raise CaptureError("RuntimeError: operation not permitted when stream is capturing")


def test_a_refused_capture_trains_eagerly_and_says_so():
    model = _bn_cnn()
    trainer = BatchedTrainer(model, CPU, vectorize_convolutions=True, capture=_refusing)
    with pytest.warns(ScenarioWarning, match=r"learning\.cuda_graphs: .*training runs eagerly"):
        _compare(trainer, model, SGDS[0])
    assert trainer.path.startswith("batched, eager (capture refused: RuntimeError")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once, not every round
        _compare(trainer, model, SGDS[1])
