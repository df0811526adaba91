"""CPU threads of a run (issue 16 item 10): torch's and numpy BLAS's, from learning.threads."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import torch

from netfl.scenario import scenario_from_data
from netfl.selection.base import SelectionContext
from netfl.simulation import simulate
from tests.protocol_helpers import Recorder, group, scenario


class BlasProbe(Recorder):
    """Records the BLAS thread limits in force while it selects."""

    seen: ClassVar[list[int]] = []

    def select(self, ctx: SelectionContext) -> Sequence[int]:
        from threadpoolctl import threadpool_info

        blas = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
        BlasProbe.seen.extend(blas)
        return super().select(ctx)


def test_strategies_run_with_the_blas_threads_of_learning_threads(tmp_path: Path) -> None:
    BlasProbe.seen = []
    data = scenario([group("a", 4)], selection={"name": "tests.test_threads:BlasProbe"})
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=2, user_api="blas"):  # the process allows 2
        simulate(scenario_from_data(data), tmp_path / "run")
    assert BlasProbe.seen and set(BlasProbe.seen) == {1}


def test_training_uses_learning_threads_torch_threads(tmp_path: Path) -> None:
    before = torch.get_num_threads()
    try:
        data = scenario(
            [group("a", 4, n_samples=20)],
            learning={"dataset": "digits", "model": "digits_mlp", "threads": 2, "batch_size": 10},
            fl={"rounds": 1, "clients_per_round": 2},
            selection={"name": "random"},
        )
        simulate(scenario_from_data(data), tmp_path / "run")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
