"""Reading learning signals from a context or a feedback, with a clear error when absent.

A learning-aware strategy declares the signals it needs in ``Strategy.requires``; the
server and the learner provide them. When one is missing, the strategy cannot make the
decision its paper describes, so it stops with :class:`MissingSignalError` naming the
signal rather than silently degrading to a different algorithm.
"""

from __future__ import annotations

import numpy as np

from netfl.errors import NetflError
from netfl.selection.base import RoundFeedback, SelectionContext


class MissingSignalError(NetflError):
    """The server did not provide a learning signal that the strategy declared."""


def feature(ctx: SelectionContext, name: str, strategy: str) -> np.ndarray:
    """``ctx.features[name]`` as a float array, aligned with ``ctx.candidates``.

    One row per candidate: a value, or a vector (``"context"``, ``"update_vector"``).
    """
    if name not in ctx.features:
        raise MissingSignalError(
            f"{strategy} needs ctx.features[{name!r}] in round {ctx.round}, but the server"
            f" did not provide it (features present: {sorted(ctx.features) or 'none'})"
        )
    values = np.asarray(ctx.features[name], dtype=float)
    if len(values) != len(ctx.candidates):
        raise MissingSignalError(
            f"{strategy}: ctx.features[{name!r}] has {len(values)} rows for"
            f" {len(ctx.candidates)} candidates"
        )
    return values


def signal(feedback: RoundFeedback, name: str, strategy: str) -> np.ndarray:
    """``feedback.signals[name]`` as a float array."""
    if name not in feedback.signals:
        raise MissingSignalError(
            f"{strategy} needs feedback.signals[{name!r}] after round {feedback.round}, but"
            f" the server did not provide it (signals present:"
            f" {sorted(feedback.signals) or 'none'})"
        )
    return np.asarray(feedback.signals[name], dtype=float)
