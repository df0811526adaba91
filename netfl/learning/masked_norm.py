"""Batch norm for the batched trainer: statistics over a client's real samples only.

The batched trainer pads each client's minibatch to a common width; a padded sample has
weight 0 in the loss, and :class:`MaskedBatchNorm` leaves it out of the batch statistics
too, so each client's normalisation is the one of its real minibatch (and its running
statistics its own).
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.nn import functional as F

MASK = "sample_mask"


class MaskedBatchNorm(nn.Module):
    """Batch norm whose training statistics skip samples with mask 0.

    Takes over a ``nn.BatchNorm1d/2d``'s parameters and buffers under the same names, so
    state dicts are interchangeable. The per-sample mask is the non-persistent buffer
    ``sample_mask`` (shape (B,)), given per client through ``functional_call``. With every
    sample real it computes exactly what ``nn.BatchNorm*`` computes in training mode.
    """

    running_mean: torch.Tensor | None
    running_var: torch.Tensor | None
    num_batches_tracked: torch.Tensor | None

    def __init__(self, bn: nn.modules.batchnorm._BatchNorm) -> None:
        super().__init__()
        self.eps = bn.eps
        self.momentum = bn.momentum
        self.weight = bn.weight
        self.bias = bn.bias
        self.register_buffer("running_mean", bn.running_mean)
        self.register_buffer("running_var", bn.running_var)
        self.register_buffer("num_batches_tracked", bn.num_batches_tracked)
        self.register_buffer(MASK, torch.ones(1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        channel = (1, -1) + (1,) * (x.dim() - 2)
        if not self.training:
            return F.batch_norm(
                x, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0, self.eps
            )
        # Statistics in fp32 also under bf16 autocast, as nn.BatchNorm* computes them there
        # (in bf16 the running variance was off by about 0.3%); the output in the input's
        # dtype, as cuDNN's batch norm gives it (bf16 stays bf16 into the next layer).
        dtype = x.dtype
        x = x.float()
        reduce = [0, *range(2, x.dim())]
        mask = getattr(self, MASK)
        if mask.shape[0] != x.shape[0]:  # used on its own, without a mask: every sample
            mask = torch.ones(x.shape[0], device=x.device)
        weight = mask.to(x.dtype).view((-1,) + (1,) * (x.dim() - 1))
        count = weight.sum() * (x[0, 0].numel())
        mean = (x * weight).sum(reduce) / count.clamp_min(1)
        centred = x - mean.view(channel)
        var = (centred * centred * weight).sum(reduce) / count.clamp_min(1)
        out = centred * torch.rsqrt(var + self.eps).view(channel)
        if self.weight is not None and self.bias is not None:
            out = out * self.weight.view(channel) + self.bias.view(channel)
        if self.running_mean is not None and self.running_var is not None:
            self._track(mean.detach(), var.detach(), count)
        return out.to(dtype)

    @torch.no_grad()
    def _track(self, mean: torch.Tensor, var: torch.Tensor, count: torch.Tensor) -> None:
        assert self.running_mean is not None and self.running_var is not None
        assert self.num_batches_tracked is not None
        seen = count > 0
        self.num_batches_tracked.add_(seen.to(self.num_batches_tracked.dtype))
        if self.momentum is None:  # cumulative moving average
            factor = 1.0 / self.num_batches_tracked.clamp_min(1).to(mean.dtype)
        else:
            factor = torch.full_like(count, self.momentum)
        unbiased = var * count / (count - 1).clamp_min(1)
        for buffer, value in ((self.running_mean, mean), (self.running_var, unbiased)):
            buffer.copy_(torch.where(seen, (1 - factor) * buffer + factor * value, buffer))


def with_masked_batch_norm(model: nn.Module) -> nn.Module:
    """A copy of ``model`` with every ``nn.BatchNorm*`` replaced by MaskedBatchNorm."""
    model = copy.deepcopy(model)
    for parent in list(model.modules()):
        for name, child in parent.named_children():
            if isinstance(child, nn.modules.batchnorm._BatchNorm):
                setattr(parent, name, MaskedBatchNorm(child))
    return model
