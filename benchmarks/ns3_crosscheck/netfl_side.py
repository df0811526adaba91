"""netfl's side of a :class:`~benchmarks.ns3_crosscheck.cases.Case`: the same cell through
netfl's radio (fast; no ns-3).

The case's path losses go through netfl's link budget (:class:`netfl.radio.link.Budget`),
its rate mapping of each direction (:func:`netfl.radio.build.rate_mapping`), the air
interface (:func:`netfl.radio.air.air_interface`: the first uplink grant) and the fluid
scheduler of an :class:`netfl.radio.lte.LteNetwork`; each device's file is one transfer
requested at its start time. Returns the per-device transfer time and rate, measured as ns-3
measures them (from the request to the last bit).

What the case fixes that netfl's defaults would not (ns-3 LENA has none of them, see
docs/radio.md "What differs"): no PUCCH RBs and no SRS symbol taken from the PUSCH, and the
case's UDP packets (IPv4 20 + UDP 8 bytes, plus netfl's 6 bytes of PDCP, RLC and MAC headers).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import simpy

from benchmarks.ns3_crosscheck.cases import Case
from netfl.config.radio import LteRadioConfig, LteTbsConfig
from netfl.radio.air import air_interface
from netfl.radio.build import rate_mapping
from netfl.radio.link import Budget, rate_per_rb_bps
from netfl.radio.lte import Channels, LteNetwork
from netfl.radio.scheduler import FluidScheduler

#: IPv4 + UDP headers of the case's packets.
UDP_IP_HEADER_BYTES = 28
#: netfl's PDCP + RLC + MAC header bytes per packet (channel_models.lte.HEADER_BYTES less
#: IPv4 and TCP).
L2_HEADER_BYTES = 6
POLICY = {"rr": "equal", "pf": "proportional_fair"}


def radio_config(case: Case, mapping: dict[str, Any] | None = None) -> LteRadioConfig:
    """netfl's radio section for the case: the standard link abstraction (or ``mapping``)."""
    c = case.cell
    if mapping is None:
        mapping = LteTbsConfig(
            ul_pucch_rb_fraction=0.0,
            ul_srs_period_ms=0,
            packet_payload_bytes=case.packet_bytes,
            packet_header_bytes=UDP_IP_HEADER_BYTES + L2_HEADER_BYTES,
        ).model_dump()
    link = {"bandwidth_hz": 10e6, "scheduler": POLICY[case.scheduler]}
    return LteRadioConfig.model_validate(
        {
            "rate_mapping": mapping,
            "shadowing": False,
            "uplink": {
                **link,
                "tx_power_dbm": c.ue_power_rb_dbm + 10 * math.log10(c.n_rb),
                "noise_figure_db": c.enb_noise_figure_db,
            },
            "downlink": {
                **link,
                "tx_power_dbm": c.enb_power_dbm,
                "noise_figure_db": c.ue_noise_figure_db,
            },
        }
    )


def snr_db(config: LteRadioConfig, case: Case) -> np.ndarray:
    """Each device's SNR per RB through netfl's link budget."""
    link = config.uplink if case.direction == "uplink" else config.downlink
    budget = Budget(link.tx_power_dbm, link.power_rbs, 0.0, 0.0, link.noise_figure_db)
    return budget.snr_db(np.asarray(case.pathloss_db))


def transfer_times_s(case: Case, mapping: dict[str, Any] | None = None) -> np.ndarray:
    """Each device's time from request to the end of its file, netfl's fluid radio."""
    config = radio_config(case, mapping)
    env = simpy.Environment()
    sinr = snr_db(config, case)
    rates = {
        d: rate_per_rb_bps(rate_mapping(config, d), sinr, "none") for d in ("uplink", "downlink")
    }
    channels = Channels(sinr, sinr, rates["uplink"], rates["downlink"])
    schedulers = {
        d: FluidScheduler(env, getattr(config, d).rb_count, getattr(config, d).scheduler)
        for d in ("uplink", "downlink")
    }
    network = LteNetwork(
        env,
        uplink=schedulers["uplink"],
        downlink=schedulers["downlink"],
        channels=channels,
        mappings={d: rate_mapping(config, d) for d in ("uplink", "downlink")},
        rb_cap_ul=config.uplink.flow_rb_cap,
        rb_cap_dl=config.downlink.flow_rb_cap,
        air=air_interface(config),
    )
    bits = 8.0 * case.file_bytes
    done = np.full(case.n_devices, np.nan)

    def device(i: int) -> Any:
        yield env.timeout(case.start_s[i])
        send = network.upload if case.direction == "uplink" else network.download
        yield send(env, i, bits)
        done[i] = env.now - case.start_s[i]

    for i in range(case.n_devices):
        env.process(device(i))
    env.run()
    return done


def rates_bps(case: Case, mapping: dict[str, Any] | None = None) -> np.ndarray:
    return 8.0 * case.file_bytes / transfer_times_s(case, mapping)
