"""What the server tells strategies: reported resources and per-round feedback."""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping
from typing import Protocol

import numpy as np

from netfl.fl.exchange import Outcome
from netfl.recorder.tables import RoundRecord
from netfl.selection.base import RoundFeedback

#: Readers registered before the dead among them are first pruned.
_PRUNE_AT = 64


class Frozen(Protocol):
    """Something that reads the reports later and can read them all at once now."""

    def freeze(self) -> None: ...


class ReportedTimes:
    """The update and upload times each client reports in the resource request.

    A client that completes a round reports the times measured in it. A client that was
    selected and left without completing (deadline miss, drop, cancellation) raises each
    report to at least what it was seen to spend in that step (``Outcome.observed_*``): a
    straggler must not keep reporting the 0 s of a newcomer, or FedCS schedules it first
    in every round. A client never observed in a step reports 0 s for it (Yoshida et al.
    2020, Sec. II: "clients participating in FL for the first time notify the server that
    their model update time and model upload time are 0 s"). ``misses`` counts each
    client's deadline misses and drops. The rule is documented in ``docs/protocol.md``.
    """

    def __init__(self, n_clients: int) -> None:
        self.update_s = np.zeros(n_clients)
        self.upload_s = np.zeros(n_clients)
        self.misses = np.zeros(n_clients, dtype=np.int64)
        # Weak references to the readers since the reports last changed (plain ones: an
        # asynchronous server registers one a selection), the dead pruned now and then.
        self._readers: list[weakref.ref[Frozen]] = []
        self._prune_at = _PRUNE_AT

    def read_later(self, reader: Frozen) -> None:
        """``reader`` reads the reports as they are now, later: it is frozen (reads them)
        before they next change, if it still exists then."""
        readers = self._readers
        readers.append(weakref.ref(reader))
        if len(readers) > self._prune_at:
            self._readers = [ref for ref in readers if ref() is not None]
            self._prune_at = 2 * len(self._readers) + _PRUNE_AT

    def __getstate__(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_readers", "_prune_at")}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._readers, self._prune_at = [], _PRUNE_AT

    def observe(self, outcomes: list[Outcome], exchange_start_s: float) -> None:
        if self._readers:  # contexts that read the reports later, if still alive
            for ref in self._readers:
                reader = ref()
                if reader is not None:
                    reader.freeze()
            self._readers, self._prune_at = [], _PRUNE_AT
        for out in outcomes:
            c = out.client
            if out.completed and out.upload is not None:
                self.update_s[c] = out.update_time_s
                self.upload_s[c] = out.upload.duration_s
                continue
            update_s = out.observed_update_s(exchange_start_s)
            upload_s = out.observed_upload_s()
            if not math.isnan(update_s):
                self.update_s[c] = max(self.update_s[c], update_s)
            if not math.isnan(upload_s):
                self.upload_s[c] = max(self.upload_s[c], upload_s)
            self.misses[c] += out.status in ("deadline_miss", "dropped")


def _transfer_time(out: Outcome, which: str) -> float:
    transfer = out.download if which == "download" else out.upload
    return transfer.duration_s if transfer is not None else math.nan


def round_feedback(
    record: RoundRecord,
    outcomes: list[Outcome],
    distribution_start_s: float | np.ndarray,
    local_loss: Mapping[int, float],
    features: Mapping[str, np.ndarray],
    signals: Mapping[str, np.ndarray],
) -> RoundFeedback:
    """Build the strategy's feedback from the round's outcomes (in selection order).

    ``distribution_start_s``: when the model started going down, one time for the round or
    one per outcome (asynchronous protocols start each client on its own)."""
    starts = np.broadcast_to(np.asarray(distribution_start_s, dtype=float), (len(outcomes),))
    exchange = [
        out.upload.end_s - start if out.upload is not None else math.nan
        for out, start in zip(outcomes, starts.tolist(), strict=True)
    ]
    return RoundFeedback(
        round=record.round,
        selected=np.array([o.client for o in outcomes], dtype=np.int64),
        completed=np.array([o.completed for o in outcomes], dtype=bool),
        download_time_s=np.array([_transfer_time(o, "download") for o in outcomes]),
        update_time_s=np.array([o.update_time_s for o in outcomes]),
        upload_time_s=np.array([_transfer_time(o, "upload") for o in outcomes]),
        exchange_time_s=np.array(exchange),
        round_time_s=record.t_end_s - record.t_start_s,
        local_loss=np.array([local_loss.get(o.client, math.nan) for o in outcomes]),
        global_accuracy=record.accuracy,
        global_loss=record.loss,
        signals=signals,
        status=np.array([o.status for o in outcomes], dtype=str),
        deadline_met=np.array([o.status != "deadline_miss" for o in outcomes], dtype=bool),
        cold_start_s=np.array([o.cold_start_s for o in outcomes]),
        queue_wait_s=np.array([o.queue_wait_s for o in outcomes]),
        compute_time_s=np.array([o.compute_s for o in outcomes]),
        upload_wait_s=np.array([o.upload_wait_s for o in outcomes]),
        features=features,
        observed_update_time_s=np.array(
            [o.observed_update_s(start) for o, start in zip(outcomes, starts.tolist(), strict=True)]
        ),
        observed_upload_time_s=np.array([o.observed_upload_s() for o in outcomes]),
    )
