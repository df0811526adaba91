"""The rows a run writes beyond the protocol's: background transfers, moving devices'
positions, and the strategy's scores.

- Background transfers (``traffic.record_flows``): a ``background_flow_start`` and
  ``_end`` row per FTP file, ``λ`` files a second in every cell; a start row per
  full-buffer user and cell (:mod:`netfl.radio.traffic`).
- Positions: a ``position`` row per moving device every ``output.trajectory_every_s``
  (:mod:`netfl.radio.motion`). Handovers and radio link failures are left out (a few a
  device and minute at vehicle speeds).
- ``strategy.parquet``: one row per (round, score, client) a strategy reports
  (:mod:`netfl.recorder.strategy`); :data:`SCORES` says how many a round each strategy
  writes, per candidate and per device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from netfl.config import Scenario
from netfl.config.traffic import FtpSource, FullBufferSource

#: Scores a round, (per candidate, per device), of the strategies that report any
#: (``scores()`` of netfl/selection/*.py); a strategy not listed reports none.
SCORES: dict[str, tuple[int, int]] = {
    "rbcs_f": (2, 1),  # tau_hat, tau_bar of the candidates; every client's backlog
    "fedcs": (1, 0),
    "fedcs_deadline": (1, 0),
    "gpfl": (2, 0),
    "k_linucb": (1, 0),
    "mab_cs": (3, 0),
    "nccb": (2, 0),
    "oort": (2, 0),
    "pow_d": (1, 0),
    "ucb_cs": (1, 0),
}


@dataclass(frozen=True)
class Rows:
    """Rows of the whole run beyond the protocol's, by kind."""

    background: int
    positions: int
    strategy: int
    background_flows: float
    """Background transfers over the run (each costs the radio work, recorded or not)."""
    moving_updates: float = 0.0
    """Moving devices times the radio updates that advance them."""

    @property
    def extra(self) -> int:
        """Timeline rows beyond the protocol's."""
        return self.background + self.positions


def rows_of(scenario: Scenario, rounds: float, sim_time_s: float | None) -> Rows:
    """The :class:`Rows` of a run of ``rounds`` rounds and ``sim_time_s`` simulated
    seconds (None: not estimated, then the rows that follow time are not counted)."""
    cell = scenario.cell
    n_cells = cell.sites * cell.sectors
    time_s = sim_time_s or 0.0
    flows = 0.0
    starts = 0
    for source in scenario.traffic.sources:
        if isinstance(source, FtpSource):
            flows += source.arrival_rate_hz * n_cells * time_s
        elif isinstance(source, FullBufferSource):
            starts += source.users * n_cells
    background = 2 * flows + starts if scenario.traffic.record_flows else 0
    every = scenario.output.trajectory_every_s
    moving = sum(g.count for g in scenario.devices.groups if g.mobility.model != "static")
    positions = moving * (math.floor(time_s / every) + 1) if every and moving and time_s else 0
    interval = getattr(scenario.radio, "update_interval_s", None)
    return Rows(
        background=math.ceil(background),
        positions=positions,
        strategy=math.ceil(strategy_rows_per_round(scenario) * rounds),
        background_flows=flows,
        moving_updates=moving * time_s / interval if moving and interval else 0.0,
    )


def strategy_rows_per_round(scenario: Scenario) -> float:
    """``strategy.parquet`` rows a round: the strategy's scores of its candidates (the
    available share of the clients asked) and of every device."""
    per_candidate, per_device = SCORES.get(scenario.selection.name, (0, 0))
    n = scenario.devices.n_clients
    asked = math.ceil(n * scenario.fl.request_fraction)
    return per_candidate * asked * scenario.devices.mean_availability + per_device * n
