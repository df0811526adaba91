"""Dropout whose masks come from each client's own seed, the same in every trainer.

``nn.Dropout`` draws its masks from torch's global generator. Under
``torch.func.vmap(..., randomness="different")`` the K clients of a batch then draw from
one stream in turn, so client k's masks would depend on which clients train beside it,
and the batched and sequential trainers would draw different masks. :class:`ClientDropout`
replaces every ``nn.Dropout`` and ``nn.Dropout1d/2d/3d`` in the trainers' working copies:
its keep mask is a counter-based hash, in integer arithmetic (exact on every device), of

- the client's key (from its local-SGD seed, a function of the run seed, the round and
  the client),
- the layer (its position among the model's dropout layers),
- the local step, and the element's position in the step's minibatch (sample slot times
  the sample's size plus the element's index within it; Dropout1d/2d/3d: one draw per
  channel).

So a client's masks depend on its seed alone: not on the other clients of the batch, the
chunk it trains in (``learning.max_parallel_clients``), the backend or the device. The
batched and sequential trainers draw the same masks, and their updates agree within
floating-point tolerance, as without dropout. Element u of a mask keeps its input when
the hash's top 24 bits, read as a fraction of 2^24, are at least p (probability
1 - p up to 2^-24), and scales kept inputs by 1 / (1 - p), as ``nn.Dropout`` does.

The hash is Thomas Mueller's 32-bit integer mixer (``x ^= x >> 16; x *= 0x45d9f3b``,
twice, then ``x ^= x >> 16``), kept in int64 so that no product overflows (a 32-bit value
times a 27-bit constant). Random operations the model calls itself
(``torch.nn.functional.dropout`` in ``forward``) still draw from torch's global generator
(``vmap`` with ``randomness="different"``): reproducible for a run, not per client.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

KEY = "dropout_key"
STEP = "dropout_step"
_MASK32 = 0xFFFFFFFF
_MULTIPLIER = 0x45D9F3B
_TYPES = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d)


def mix32(x: torch.Tensor) -> torch.Tensor:
    """Mueller's 32-bit mixer on int64 tensors holding values in [0, 2^32); a bijection."""
    x = ((x >> 16) ^ x) * _MULTIPLIER & _MASK32
    x = ((x >> 16) ^ x) * _MULTIPLIER & _MASK32
    return (x >> 16) ^ x


def client_key(seed: int) -> int:
    """A client's 32-bit dropout key from its 63-bit local-SGD seed."""
    seed = int(seed)
    return (seed ^ (seed >> 32)) & _MASK32


class ClientDropout(nn.Module):
    """Dropout (element-wise, or per channel for Dropout1d/2d/3d) drawn from the
    non-persistent buffers ``dropout_key`` and ``dropout_step`` (int64 scalars; given per
    client through ``functional_call`` in the batched trainer, set with :func:`set_draws`
    in the sequential one)."""

    def __init__(self, p: float, layer: int, per_channel: bool) -> None:
        super().__init__()
        self.p = float(p)
        self.layer = int(layer)
        self.per_channel = per_channel
        self.threshold = round(self.p * 2**24)
        self.register_buffer(KEY, torch.zeros((), dtype=torch.int64), persistent=False)
        self.register_buffer(STEP, torch.zeros((), dtype=torch.int64), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        shape = tuple(x.shape[:2]) + (1,) * (x.dim() - 2) if self.per_channel else x.shape
        position = torch.arange(math.prod(shape), device=x.device)
        key, step = getattr(self, KEY), getattr(self, STEP)
        base = mix32(mix32(mix32(key ^ self.layer) ^ (step & _MASK32)) ^ 0x2545F491)
        draw = mix32(position.view(shape) ^ base) >> 8
        keep = (draw >= self.threshold).to(x.dtype)
        return x * keep / (1.0 - self.p) if self.p < 1.0 else x * keep

    def extra_repr(self) -> str:
        return f"p={self.p}, layer={self.layer}, per_channel={self.per_channel}"


def with_client_dropout(model: nn.Module) -> nn.Module:
    """``model`` itself if it has no dropout layer, else a copy with every ``nn.Dropout``
    and ``nn.Dropout1d/2d/3d`` replaced by :class:`ClientDropout` (numbered in module
    order)."""
    if not any(isinstance(m, _TYPES) for m in model.modules()):
        return model
    model = copy.deepcopy(model)
    layer = 0
    for parent in list(model.modules()):
        for name, child in parent.named_children():
            if isinstance(child, _TYPES):
                per_channel = type(child) is not nn.Dropout
                setattr(parent, name, ClientDropout(child.p, layer, per_channel))
                layer += 1
    return model


def dropout_layers(model: nn.Module) -> list[ClientDropout]:
    return [m for m in model.modules() if isinstance(m, ClientDropout)]


@torch.no_grad()
def set_draws(layers: list[ClientDropout], key: int, step: int) -> None:
    """Point the layers at client ``key``'s draws of local step ``step``."""
    for layer in layers:
        getattr(layer, KEY).fill_(key)
        getattr(layer, STEP).fill_(step)
