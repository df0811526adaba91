"""The multi-cell case: the SINR of every device under full load, in netfl and in ns-3 LENA.

netfl draws the drop (:data:`SCENARIO`: 7 omni sites, ISD 500 m, TR 38.901 UMa at 2 GHz,
outdoor devices, shadowing) with its radio engine and writes every device-cell coupling
gain, the serving cell and the SINR netfl's engine gives each device when every device
transfers at once (:func:`netfl_loaded_sinr_db`) to ``results/multicell_drop.json``. ns-3
builds the same 7 eNBs with those gains as its matrix path loss, attaches each device to the
same cell, keeps every device transferring (uplink, then downlink, in separate runs) and
reports each device's SINR: downlink, the median over time of the SINR the device measures
(LENA averages it over the RBs; every eNB keeps all its RBs busy -- proportional fair, as
every netfl cell with a flow in flight transmits on all its RBs); uplink, the device's
received power per RB over the time- and RB-averaged interference plus noise its cell
measures on the PUSCH (every cell keeps its RBs busy with its devices, as netfl's cells
share theirs: each RB carries one of a cell's devices at a time).
``results/multicell_sinr.csv``: one row per device and direction.

``python -m benchmarks.ns3_crosscheck.run --multicell`` (ns-3 needed; a few minutes).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.ns3_crosscheck.cases import RESULTS
from benchmarks.ns3_crosscheck.lena import remote_host

HERE = Path(__file__).resolve().parent
DROP = RESULTS / "multicell_drop.json"
N_DEVICES = 35
NETFL_KEY = {"uplink": "netfl_sinr_ul_db", "downlink": "netfl_sinr_dl_db"}
#: The layout and link budget both simulators share (netfl's scenario keys).
SCENARIO: dict[str, Any] = {
    "seed": 7,
    "cell": {
        "sites": 7,
        "sectors": 1,
        "wrap_around": False,
        "indoor_fraction": 0.0,
        "device_sites": "all",
        "inter_site_distance_m": 500.0,
        "bs_height_m": 25.0,
        "ue_height_m": 1.5,
        "min_distance_m": 35.0,
    },
    "radio": {
        "model": "lte",
        "channel_model": "tr38901_uma",
        "carrier_frequency_hz": 2.0e9,
        "uplink": {"tx_power_dbm": 23.0, "noise_figure_db": 5.0},
        "downlink": {"tx_power_dbm": 46.0, "noise_figure_db": 7.0},
        # A fixed power per RB on both sides (alpha = 0 in LENA): the SINR cross-check.
        "uplink_power_control": {"mode": "fixed_per_rb"},
    },
    "devices": {
        "groups": [{"name": "ue", "count": N_DEVICES, "compute_sps": 100.0, "n_samples": 10}]
    },
    "fl": {"rounds": 1, "clients_per_round": 1, "model_size_bits": 1e6, "deadline_s": 10.0},
    "learning": None,
}


def netfl_drop() -> dict[str, Any]:
    """netfl's drop: gains (dB, devices x cells), serving cells, loaded SINRs (dB)."""
    import simpy

    from netfl.radio.build import build_radio
    from netfl.recorder.timeline import Timeline
    from netfl.rng import Streams
    from netfl.scenario import scenario_from_data

    sc = scenario_from_data(SCENARIO)
    env = simpy.Environment()
    build = build_radio(sc, env, Streams(sc.seed), Timeline(), N_DEVICES)
    devices = build.network.devices
    gain_db = np.round(devices.gain_db, 4)
    sinr = netfl_loaded_sinr_db(gain_db, devices.serving)
    return {
        "gain_db": gain_db.tolist(),
        "serving": devices.serving.tolist(),
        **{NETFL_KEY[d]: np.round(sinr[d], 4).tolist() for d in NETFL_KEY},
    }


def _network(gain_db: np.ndarray, serving: np.ndarray) -> Any:
    """netfl's engine on :data:`SCENARIO`'s layout with the devices at the given gains."""
    import simpy

    from netfl.radio.build import cells_of, device_links, radio_system
    from netfl.radio.cellular import CellularNetwork
    from netfl.radio.propagation import LinkGains
    from netfl.radio.system import typical_ul_emission_mw
    from netfl.rng import Streams
    from netfl.scenario import scenario_from_data

    sc = scenario_from_data(SCENARIO)
    system = radio_system(sc)
    env = simpy.Environment()
    cells = cells_of(env, system)
    cells.typical_ul_mw = typical_ul_emission_mw(
        system, Streams(sc.seed).get("radio.typical_users")
    )
    n = len(serving)
    zeros = np.zeros(n)
    gains = LinkGains(
        np.asarray(gain_db, dtype=float), np.asarray(serving), zeros.astype(bool), *[zeros] * 4
    )
    devices = device_links(system, gains, cells.typical_ul_mw)
    return CellularNetwork(env, system, cells, devices, [[]] * system.layout.n_sites)


def netfl_loaded_sinr_db(gain_db: np.ndarray, serving: np.ndarray) -> dict[str, np.ndarray]:
    """The SINR netfl's engine gives each device's transfer when every device of the drop
    transfers at once, as in the ns-3 runs: downlink, every cell on all its RBs; uplink,
    each other cell's devices sharing its RBs (each RB carries one of them at a time, the
    cell's mean emission: :meth:`netfl.radio.cells.Cells.interference_mw`)."""
    from netfl.radio.cells import DL, UL

    out = {}
    for direction, name in ((UL, "uplink"), (DL, "downlink")):
        network = _network(gain_db, serving)
        env, n = network.env, len(serving)
        send = network.upload if direction == UL else network.download
        for i in range(n):
            send(env, i, 1e12)
        env.run(until=network.system.air.first_grant_s + 1e-6)  # every flow in flight
        table, system = network.cells.links[direction], network.system
        slots = table.slots()
        assert len(slots) == n
        interference = network.cells.interference_mw(
            direction, table.cell[slots], table.gain_mw[slots]
        )
        sinr = system.sinr_db(direction, table.signal_db[slots], interference)
        out[name] = np.empty(n)
        out[name][table.device[slots]] = sinr
    return out


def simulate(drop: dict[str, Any], direction: str, folder: Path) -> None:
    """Run the drop in ns-3 with every device transferring; LENA's traces in ``folder``."""
    import cppyy
    from ns import ns

    cppyy.cppdef((HERE / "lena_helpers.hpp").read_text())
    gain_db = np.asarray(drop["gain_db"])
    serving = drop["serving"]
    n_dev, n_cells = gain_db.shape
    r, u = SCENARIO["radio"], SCENARIO["radio"]["uplink"]
    n_rb = 50
    d = ns.Config.SetDefault
    d("ns3::LteEnbRrc::EpsBearerToRlcMapping", ns.StringValue("RlcUmAlways"))
    d("ns3::LteRlcUm::MaxTxBufferSize", ns.UintegerValue(50_000_000))
    d("ns3::LteRlcUm::EnablePdcpDiscarding", ns.BooleanValue(False))
    d("ns3::LteEnbNetDevice::UlBandwidth", ns.UintegerValue(n_rb))
    d("ns3::LteEnbNetDevice::DlBandwidth", ns.UintegerValue(n_rb))
    d("ns3::LteEnbPhy::TxPower", ns.DoubleValue(r["downlink"]["tx_power_dbm"]))
    d("ns3::LteEnbPhy::NoiseFigure", ns.DoubleValue(u["noise_figure_db"]))
    d("ns3::LteUePhy::NoiseFigure", ns.DoubleValue(r["downlink"]["noise_figure_db"]))
    d("ns3::LteUePhy::TxPower", ns.DoubleValue(u["tx_power_dbm"]))
    per_rb = u["tx_power_dbm"] - 10 * math.log10(n_rb)
    d("ns3::LteUePhy::EnableUplinkPowerControl", ns.BooleanValue(True))
    d("ns3::LteUePowerControl::ClosedLoop", ns.BooleanValue(False))
    d("ns3::LteUePowerControl::Alpha", ns.DoubleValue(0.0))
    d("ns3::LteUePowerControl::PoNominalPusch", ns.IntegerValue(round(per_rb)))
    d("ns3::LteEnbPhy::InterferenceSamplePeriod", ns.UintegerValue(1))
    d("ns3::LteUePhy::RsrpSinrSamplePeriod", ns.UintegerValue(1))
    # Hold every device on its cell: no handover.
    lte = ns.CreateObject[ns.LteHelper]()
    epc = ns.CreateObject[ns.PointToPointEpcHelper]()
    lte.SetEpcHelper(epc)
    # Downlink: proportional fair hands out every RBG each TTI (LENA's round robin leaves
    # floor-division leftovers idle, so the interference would not be full load).
    lte.SetSchedulerType(
        "ns3::RrFfMacScheduler" if direction == "uplink" else "ns3::PfFfMacScheduler"
    )
    lte.SetHandoverAlgorithmType("ns3::NoOpHandoverAlgorithm")
    lte.SetAttribute("PathlossModel", ns.StringValue("ns3::MatrixPropagationLossModel"))
    host, host_address, internet, routing = remote_host(ns, epc)
    enbs, ues = ns.NodeContainer(), ns.NodeContainer()
    enbs.Create(n_cells)
    ues.Create(n_dev)
    mobility = ns.MobilityHelper()
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel")
    mobility.Install(enbs)
    mobility.Install(ues)
    for i in range(n_cells):
        enbs.Get(i).GetObject[ns.MobilityModel]().SetPosition(ns.Vector(1000.0 * i, 0, 25))
    for i in range(n_dev):
        ues.Get(i).GetObject[ns.MobilityModel]().SetPosition(ns.Vector(10.0 * i, 100, 1.5))
    enb_devs = lte.InstallEnbDevice(enbs)
    ue_devs = lte.InstallUeDevice(ues)
    internet.Install(ues)
    ue_ips = epc.AssignUeIpv4Address(ue_devs)
    for i in range(n_dev):
        routing.GetStaticRouting(ues.Get(i).GetObject[ns.Ipv4]()).SetDefaultRoute(
            epc.GetUeDefaultGatewayAddress(), 1
        )
    for i in range(n_dev):
        lte.Attach(ue_devs.Get(i), enb_devs.Get(serving[i]))
    for channel in (lte.GetUplinkSpectrumChannel(), lte.GetDownlinkSpectrumChannel()):
        loss = ns.DynamicCast[ns.MatrixPropagationLossModel](channel.GetPropagationLossModel())
        for i in range(n_dev):
            for c in range(n_cells):
                loss.SetLoss(
                    ues.Get(i).GetObject[ns.MobilityModel](),
                    enbs.Get(c).GetObject[ns.MobilityModel](),
                    -float(gain_db[i, c]),
                    True,
                )
    for i in range(n_dev):
        if direction == "uplink":
            sink, source, target = host, ues.Get(i), host_address
        else:
            sink, source, target = ues.Get(i), host, ue_ips.GetAddress(i)
        ns.UdpServerHelper(9000 + i).Install(sink).Start(ns.Seconds(0.1))
        client = ns.UdpClientHelper(ns.InetSocketAddress(target, 9000 + i).ConvertTo())
        client.SetAttribute("MaxPackets", ns.UintegerValue(100000))
        client.SetAttribute("Interval", ns.TimeValue(ns.MicroSeconds(200)))
        client.SetAttribute("PacketSize", ns.UintegerValue(1000))
        client.Install(source).Start(ns.Seconds(0.3))
    folder.mkdir(parents=True, exist_ok=True)
    os.chdir(folder)
    if direction == "uplink":
        lte.EnableUlPhyTraces()
    else:
        lte.EnableDlPhyTraces()
    ns.Simulator.Stop(ns.Seconds(0.25))  # bearers set up
    ns.Simulator.Run()
    refresher = cppyy.gbl.xc.BsrRefresher()  # no idle device from LENA's buffer reports
    matches = ns.Config.LookupMatches(
        "/NodeList/*/DeviceList/*/$ns3::LteUeNetDevice/LteUeRrc/DataRadioBearerMap/*/LteRlc"
    )
    for k in range(matches.GetN()):
        refresher.Add(matches.Get(k))
    refresher.Tick()
    ns.Simulator.Stop(ns.Seconds(1.25))
    ns.Simulator.Run()
    ns.Simulator.Destroy()


def lena_sinr_db(drop: dict[str, Any], direction: str, folder: Path) -> np.ndarray:
    """Each device's SINR (dB) from the traces of :func:`simulate` (read once the ns-3
    process has ended: LENA's trace files are complete only then)."""
    gain_db = np.asarray(drop["gain_db"])
    serving = drop["serving"]
    n_dev, n_cells = gain_db.shape
    per_rb = SCENARIO["radio"]["uplink"]["tx_power_dbm"] - 10 * math.log10(50)
    start = 0.5  # every transfer under way
    if direction == "downlink":
        rows = _rows(folder / "DlRsrpSinrStats.txt")  # time cell imsi rnti rsrp sinr cc
        keep = rows[:, 0] >= start
        return np.array(
            [
                10 * math.log10(float(np.median(rows[keep & (rows[:, 2] == i + 1), 5])))
                for i in range(n_dev)
            ]
        )
    interference = _interference(folder / "UlInterferenceStats.txt", start, n_cells)
    rx_dbm = per_rb + gain_db[np.arange(n_dev), serving]
    noise_psd = np.asarray([interference[c] for c in serving])  # W/Hz, mean over time and RBs
    return rx_dbm - (10 * np.log10(noise_psd * 180e3) + 30)


def _rows(path: Path) -> np.ndarray:
    return np.array(
        [line.split() for line in path.read_text().splitlines()[1:] if line.strip()], dtype=float
    )


def _interference(path: Path, start: float, n_cells: int, n_rb: int = 50) -> list[float]:
    """Mean interference-plus-noise PSD (W/Hz) per cell over time and RBs, from ``start``.

    LENA writes each report as time, cell id and one value per RB (W/Hz, as ``1.2e-19``)
    with neither a space nor a line break before the next report's time, so the file is
    read as a stream of numbers (an exponent has two digits) in records of ``2 + n_rb``."""
    body = path.read_text().split("\n", 1)[1]  # past the header "% time cellId Interference"
    numbers = re.findall(r"\d+(?:\.\d+)?(?:e[-+]\d\d)?", body)
    records = np.asarray(numbers, dtype=float).reshape(-1, 2 + n_rb)
    keep = records[:, 0] >= start
    sums = np.bincount(
        records[keep, 1].astype(int) - 1, weights=records[keep, 2:].mean(axis=1), minlength=n_cells
    )
    counts = np.bincount(records[keep, 1].astype(int) - 1, minlength=n_cells)
    return list(sums / np.maximum(counts, 1))


def main() -> None:
    """Write the drop (netfl), then run ns-3 once per direction, each in its own process."""
    import subprocess

    drop = netfl_drop()
    DROP.write_text(json.dumps(drop) + "\n")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for direction in ("uplink", "downlink"):
            folder = Path(tmp) / direction
            module = "benchmarks.ns3_crosscheck.multicell"
            subprocess.run([sys.executable, "-m", module, direction, str(folder)], check=True)
            sinr = lena_sinr_db(drop, direction, folder)
            for i, value in enumerate(sinr):
                rows.append(
                    {
                        "device": i,
                        "direction": direction,
                        "cell": drop["serving"][i],
                        "sinr_ns3_db": round(float(value), 3),
                        "sinr_netfl_db": drop[NETFL_KEY[direction]][i],
                    }
                )
    with (RESULTS / "multicell_sinr.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    if len(sys.argv) == 3:  # one ns-3 run: direction, trace folder
        simulate(json.loads(DROP.read_text()), sys.argv[1], Path(sys.argv[2]))
    else:
        main()
