"""Divergence: a model or a loss that is no longer finite.

A run whose global model or training loss becomes NaN or infinite cannot recover: every
later round averages NaN. The learner notes a non-finite training loss among the updates
it aggregates (and then leaves the model as it was), and checks the global model once a
round; the server then stops the run at that round (:class:`netfl.errors.Diverged`, status
``diverged`` in ``summary.json``). ``netfl validate`` warns beforehand where the settings
make training unstable by construction (:mod:`netfl.learning.stability`).
"""

from __future__ import annotations

import numpy as np
import torch

from netfl.learning.interface import LocalResult


def nonfinite_loss(result: LocalResult, mask: np.ndarray | None = None) -> str | None:
    """Which client of ``result`` (those flagged in ``mask``, default all) that took a local
    step has a non-finite mean training loss, as a phrase; None if none has."""
    losses = np.asarray(result.loss_mean, dtype=float)
    trained = np.ones(len(losses), bool) if mask is None else np.asarray(mask, bool)
    if result.steps is not None:
        trained = trained & (np.asarray(result.steps) > 0)
    bad = np.flatnonzero(trained & ~np.isfinite(losses))
    if not len(bad):
        return None
    k = int(bad[0])
    return f"client {int(result.clients[k])}'s local training loss is {losses[k]:g}"


def nonfinite_tensor(state: dict[str, torch.Tensor]) -> str | None:
    """The first floating-point tensor of ``state`` holding a NaN or an infinity, as a
    phrase; None if all are finite (one device synchronisation)."""
    floats = [(name, t) for name, t in state.items() if t.is_floating_point()]
    if not floats:
        return None
    finite = torch.stack([torch.isfinite(t).all() for _, t in floats]).cpu()
    if bool(finite.all()):
        return None
    name = floats[int(torch.nonzero(~finite)[0, 0])][0]
    return f"the global model's {name} holds NaN or infinite values"
