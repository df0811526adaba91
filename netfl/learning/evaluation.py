"""Evaluating a model: accuracy and loss, per-client losses, fairness, and when to evaluate."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

#: Rows per forward pass when evaluating (bounds memory on large test sets).
EVAL_CHUNK = 4096


@torch.no_grad()
def per_sample_losses(
    model: nn.Module, state: Mapping[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy and correctness of every row, model in eval mode (batch-norm running stats)."""
    model.load_state_dict(state)
    model.eval()
    losses, correct = [], []
    for start in range(0, len(y), EVAL_CHUNK):
        logits = model(x[start : start + EVAL_CHUNK])
        target = y[start : start + EVAL_CHUNK]
        losses.append(F.cross_entropy(logits, target, reduction="none"))
        correct.append(logits.argmax(dim=1) == target)
    if not losses:
        return torch.empty(0, device=x.device), torch.empty(0, dtype=torch.bool, device=x.device)
    return torch.cat(losses), torch.cat(correct)


def group_means(values: torch.Tensor, groups: torch.Tensor, n_groups: int) -> np.ndarray:
    """Mean of ``values`` per group id in 0..n_groups-1 (NaN for an empty group)."""
    sums = torch.zeros(n_groups, dtype=torch.float64, device=values.device)
    counts = torch.zeros(n_groups, dtype=torch.float64, device=values.device)
    sums.index_add_(0, groups, values.double())
    counts.index_add_(0, groups, torch.ones_like(values, dtype=torch.float64))
    means = (sums / counts).cpu().numpy()
    means[counts.cpu().numpy() == 0] = np.nan
    return means


def mixture_losses(class_loss: np.ndarray, label_counts: np.ndarray) -> np.ndarray:
    """Per client: sum_c p_kc L_c, p_k its label mix, over classes the test set has."""
    known = ~np.isnan(class_loss)
    counts = label_counts[:, known].astype(float)
    totals = counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, counts @ class_loss[known] / totals, np.nan)
