"""The air interface of a cell: what differs between the LTE and NR radio models.

Everything else -- geometry, path loss, link budget, rate mapping, fluid scheduler,
background traffic -- is shared. Per direction an :class:`AirInterface` gives:

- ``rb_bandwidth_hz``: one resource block: 180 kHz (LTE) or 12 x SCS (NR, TS 38.211
  Sec. 4.4.4.1); the noise per RB and the rate per RB use it.
- ``rate_factor``: what multiplies ``rb_bandwidth_hz x spectral efficiency``:
  ``time_share x (1 - overhead)``. LTE: 1. NR: the overhead fraction (TS 38.306 Sec.
  4.1.2 defaults) and, in TDD, the direction's symbol share of the slot pattern; the
  fluid scheduler then serves the direction at that share of its rate.
- ``access_delay_s``: the TDD wait for the direction's slots (0 in FDD and LTE). A
  transfer's bits are delivered at the share-scaled rate, which is exact on average for
  transfers much longer than a pattern period; a short one instead waits for its
  direction's next symbol and then runs at the full rate. Both limits are kept by
  delaying each transfer by ``max(0, W - T (1 - s))`` before it joins the scheduler,
  ``W`` the expected wait from a random instant to the direction's next symbol, ``T``
  the transfer's time alone at the share-scaled rate and ``s`` the share: alone it then
  takes ``max(W + T s, T)`` -- the wait plus its on-air time when short, the fluid time
  when long. One timeout per transfer: the cost stays per flow event, never per slot.
- ``first_grant_s``: an upload's wait for its first uplink grant (scheduling request,
  grant, PUSCH timing), once per upload before its first bit
  (:meth:`netfl.radio.cellular.CellularNetwork._upload`). LTE with the standard link
  abstraction (``rate_mapping: lte_tbs``): ``ul_first_grant_latency_s``; 0 otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from channel_models import nr
from netfl.config.radio import RB_BANDWIDTH_HZ, LteRadioConfig, LteTbsConfig, NrRadioConfig

DIRECTIONS = ("uplink", "downlink")
_SHORT = {"uplink": "ul", "downlink": "dl"}


@dataclass(frozen=True)
class AirInterface:
    """Per-direction numbers that turn a spectral efficiency into a scheduler rate."""

    rb_bandwidth_hz: float = RB_BANDWIDTH_HZ
    time_share: dict[str, float] = field(default_factory=lambda: dict.fromkeys(DIRECTIONS, 1.0))
    overhead: dict[str, float] = field(default_factory=lambda: dict.fromkeys(DIRECTIONS, 0.0))
    expected_wait_s: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(DIRECTIONS, 0.0)
    )
    first_grant_s: float = 0.0

    def rate_factor(self, direction: str) -> float:
        return self.time_share[direction] * (1.0 - self.overhead[direction])

    def access_delay_s(self, direction: str, alone_time_s: float) -> float:
        """``max(0, W - T (1 - s))`` for a transfer taking ``alone_time_s`` alone."""
        wait = self.expected_wait_s[direction]
        if wait <= 0.0:
            return 0.0
        return max(0.0, wait - alone_time_s * (1.0 - self.time_share[direction]))


def air_interface(config: LteRadioConfig) -> AirInterface:
    """LTE: 180 kHz RBs, no overhead, no TDD (the standard link abstraction's overheads are
    in its rate mapping), its first-grant latency; NR: numerology, duplex and overheads."""
    if not isinstance(config, NrRadioConfig):
        if isinstance(config.rate_mapping, LteTbsConfig):
            return AirInterface(first_grant_s=config.rate_mapping.ul_first_grant_latency_s)
        return AirInterface()
    mu = config.numerology
    fr = nr.frequency_range(config.carrier_frequency_hz)
    links = {"uplink": config.uplink, "downlink": config.downlink}
    overhead = {
        d: (
            link.overhead_fraction
            if link.overhead_fraction is not None
            else nr.OVERHEAD_TS38306[(fr, _SHORT[d])]
        )
        for d, link in links.items()
    }
    pattern = config.tdd
    if pattern is None:
        return AirInterface(nr.prb_bandwidth_hz(mu), overhead=overhead)
    return AirInterface(
        nr.prb_bandwidth_hz(mu),
        time_share={d: pattern.share(_SHORT[d]) for d in DIRECTIONS},
        overhead=overhead,
        expected_wait_s={d: pattern.expected_wait_s(_SHORT[d], mu) for d in DIRECTIONS},
    )
