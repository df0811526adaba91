"""netfl's side of a :class:`~benchmarks.ns3_crosscheck.cases.Case`: the same cell through
netfl's radio engine (fast; no ns-3).

The case's path losses are the coupling losses of an isolated omni cell's devices
(:func:`netfl.radio.build.device_links`: the link budget and the rate mapping of each
direction, :func:`netfl.radio.link.rate_mapping`), carried by the engine's
:class:`netfl.radio.cellular.CellularNetwork` (its fluid schedulers, and an upload's first
uplink grant); each device's file is one transfer requested at its start time. Returns the
per-device transfer time and rate, measured as ns-3 measures them (from the request to the
last bit).

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
from netfl.config.radio import LTE_RB_PER_BANDWIDTH, LteTbsConfig
from netfl.radio.build import cells_of, device_links, radio_system
from netfl.radio.cellular import CellularNetwork
from netfl.radio.propagation import LinkGains
from netfl.scenario import scenario_from_data

#: IPv4 + UDP headers of the case's packets.
UDP_IP_HEADER_BYTES = 28
#: netfl's PDCP + RLC + MAC header bytes per packet (channel_models.lte.HEADER_BYTES less
#: IPv4 and TCP).
L2_HEADER_BYTES = 6
POLICY = {"rr": "equal", "pf": "proportional_fair"}


def scenario_data(case: Case, mapping: dict[str, Any] | None = None) -> dict[str, Any]:
    """netfl's scenario for the case: one omni cell, the case's powers and noise figures,
    the standard link abstraction with LENA's overheads (or ``mapping``)."""
    c = case.cell
    if mapping is None:
        mapping = LteTbsConfig(
            ul_pucch_rb_fraction=0.0,
            ul_srs_period_ms=0,
            packet_payload_bytes=case.packet_bytes,
            packet_header_bytes=UDP_IP_HEADER_BYTES + L2_HEADER_BYTES,
        ).model_dump()
    bandwidth_hz = {n: b for b, n in LTE_RB_PER_BANDWIDTH.items()}[c.n_rb]
    link = {"bandwidth_hz": bandwidth_hz, "scheduler": POLICY[case.scheduler]}
    uplink: dict[str, Any] = {**link, "noise_figure_db": c.enb_noise_figure_db}
    if c.ue_p0_dbm is None:  # a fixed power per RB (alpha 0 in LENA)
        uplink["tx_power_dbm"] = c.ue_power_rb_dbm + 10 * math.log10(c.n_rb)
        control: dict[str, Any] = {"mode": "fixed_per_rb"}
    else:
        control = {"p0_dbm": c.ue_p0_dbm, "alpha": c.ue_alpha, "p_cmax_dbm": c.ue_p_cmax_dbm}
    return {
        "cell": {"sites": 1, "sectors": 1, "wrap_around": False, "indoor_fraction": 0.0},
        "radio": {
            "model": "lte",
            "channel_model": "umi_nlos",  # unused: the case gives the path losses
            "carrier_frequency_hz": 2.5e9,
            "rate_mapping": mapping,
            "shadowing": False,
            "uplink": uplink,
            "downlink": {
                **link,
                "tx_power_dbm": c.enb_power_dbm,
                "noise_figure_db": c.ue_noise_figure_db,
            },
            "uplink_power_control": control,
        },
        "devices": {"groups": [{"count": case.n_devices, "n_samples": 1}]},
        "fl": {"rounds": 1, "clients_per_round": 1, "model_size_bits": 8.0 * case.file_bytes},
        "learning": None,
    }


def network(case: Case, mapping: dict[str, Any] | None = None) -> CellularNetwork:
    """The engine's network of the case's cell, its devices at the case's path losses."""
    scenario = scenario_from_data(scenario_data(case, mapping))
    system = radio_system(scenario)
    env = simpy.Environment()
    n = case.n_devices
    zeros = np.zeros(n)
    gains = LinkGains(
        -np.asarray(case.pathloss_db, dtype=float)[:, None],
        np.zeros(n, dtype=int),
        zeros.astype(bool),
        zeros,
        np.asarray(case.pathloss_db, dtype=float),
        zeros,
        zeros,
    )
    cells = cells_of(env, system)
    return CellularNetwork(env, system, cells, device_links(system, gains, None), [[]])


def transfer_times_s(case: Case, mapping: dict[str, Any] | None = None) -> np.ndarray:
    """Each device's time from request to the end of its file, netfl's fluid radio."""
    net = network(case, mapping)
    env = net.env
    bits = 8.0 * case.file_bytes
    done = np.full(case.n_devices, np.nan)

    def device(i: int) -> Any:
        yield env.timeout(case.start_s[i])
        send = net.upload if case.direction == "uplink" else net.download
        yield send(env, i, bits)
        done[i] = env.now - case.start_s[i]

    for i in range(case.n_devices):
        env.process(device(i))
    env.run()
    return done


def rates_bps(case: Case, mapping: dict[str, Any] | None = None) -> np.ndarray:
    return 8.0 * case.file_bytes / transfer_times_s(case, mapping)
