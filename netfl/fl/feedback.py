"""What the server tells strategies: reported resources and per-round feedback."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from netfl.fl.exchange import Outcome
from netfl.selection.base import RoundFeedback
from netfl.trace.tables import RoundRecord


class ReportedTimes:
    """Each client's last observed update and upload times, reported in resource requests.

    A client that never completed a round reports 0 s for both (002_27b575cdfe8e08e6.txt
    Sec. II: "clients participating in FL for the first time notify the server that their
    model update time and model upload time are 0 s").
    """

    def __init__(self, n_clients: int) -> None:
        self.update_s = np.zeros(n_clients)
        self.upload_s = np.zeros(n_clients)

    def observe(self, outcomes: list[Outcome]) -> None:
        for out in outcomes:
            if out.completed and out.upload is not None:
                self.update_s[out.client] = out.update_time_s
                self.upload_s[out.client] = out.upload.duration_s


def _transfer_time(out: Outcome, which: str) -> float:
    transfer = out.download if which == "download" else out.upload
    return transfer.duration_s if transfer is not None else math.nan


def round_feedback(
    record: RoundRecord,
    outcomes: list[Outcome],
    distribution_start_s: float,
    local_loss: Mapping[int, float],
    features: Mapping[str, np.ndarray],
    signals: Mapping[str, np.ndarray],
) -> RoundFeedback:
    """Build the strategy's feedback from the round's outcomes (in selection order)."""
    exchange = [
        out.upload.end_s - distribution_start_s if out.upload is not None else math.nan
        for out in outcomes
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
    )
