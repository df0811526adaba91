"""Evaluating a model: accuracy and loss, per-client losses, fairness, and when to evaluate."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

#: Rows per forward pass when evaluating (bounds memory on large test sets).
EVAL_CHUNK = 4096


@dataclass(frozen=True)
class Evaluation:
    """The global model on the test set; ``client_loss`` per device where asked.

    Loss fairness (Jain's index, UCB-CS eq. (3) in Cho et al. 2020) is
    ``netfl.trace.metrics.jain_index`` of ``client_loss`` (F_k(w) with ``train``).
    """

    accuracy: float
    loss: float
    client_loss: np.ndarray | None = None


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


@dataclass
class EvalSchedule:
    """When the server evaluates the global model.

    Every ``every_rounds`` rounds, and/or at the end of the first round that ends at or
    after each multiple of ``every_s`` simulated seconds; the last round (of a fixed
    round count) always.
    """

    every_rounds: int | None = 1
    every_s: float | None = None
    rounds: int | None = None
    _next_s: float = math.nan

    def due(self, round: int, now_s: float) -> bool:
        """Whether to evaluate at the end of ``round``, ending at ``now_s``."""
        by_rounds = self.every_rounds is not None and (round + 1) % self.every_rounds == 0
        last = self.rounds is not None and round + 1 == self.rounds
        by_time = False
        if self.every_s is not None:
            if math.isnan(self._next_s):
                self._next_s = self.every_s
            if now_s >= self._next_s:
                by_time = True
                self._next_s = (math.floor(now_s / self.every_s) + 1) * self.every_s
        return by_rounds or by_time or last
