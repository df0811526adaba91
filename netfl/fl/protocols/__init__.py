"""How an asynchronous server turns arrived updates into the next global model.

A rule says how many arrivals make an aggregation (``buffer_size``) and, for those
arrivals, the coefficient c_i of each update and what it is a change from: the server then
sets w <- w + sum_i c_i (w_i - b_i), with b_i the model the client downloaded
(``relative_to = "download"``: FedBuff's deltas) or the current global model
(``"current"``: FedAsync's mixing). One protocol per module.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from netfl.config.fl import FLConfig


class AggregationRule(Protocol):
    """The asynchronous protocol's aggregation."""

    @property
    def buffer_size(self) -> int: ...

    @property
    def relative_to(self) -> str: ...

    def coefficients(self, n_samples: np.ndarray, staleness: np.ndarray) -> np.ndarray:
        """c_i for the buffered updates (data sizes and stalenesses, arrival order)."""
        ...


def aggregation_rule(fl: FLConfig) -> AggregationRule:
    """The rule of ``fl.protocol`` (fedasync or fedbuff)."""
    from netfl.fl.staleness import StalenessWeight

    weight = StalenessWeight.from_config(fl)
    if fl.protocol == "fedasync":
        from netfl.fl.protocols.fedasync import FedAsync

        return FedAsync(fl.mixing_alpha, weight)
    if fl.protocol == "fedbuff":
        from netfl.fl.protocols.fedbuff import FedBuff

        return FedBuff(fl.buffer_in_force, fl.server_lr, weight)
    raise ValueError(f"fl.protocol {fl.protocol} is not asynchronous")
