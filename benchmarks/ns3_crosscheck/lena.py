"""Run one :class:`~benchmarks.ns3_crosscheck.cases.Case` in ns-3 LENA (needs ``pip install ns3``).

``python -m benchmarks.ns3_crosscheck.lena CASE.json MODE FOLDER`` builds the case's cell
(one eNB, the devices, the EPC with a remote host), sends each device's file as UDP packets
(uplink: device -> remote host; downlink: remote host -> device) and leaves LENA's traces
and the receive log in ``FOLDER``; :func:`per_device` (no ns-3 needed) reads them, once the
process has ended, into one row per device: the SINR ns-3 computed, when the file started,
when its first transport block went and when its last packet arrived, the transport blocks'
MCS, bits and HARQ failures.

``MODE`` is ``lena`` (LENA as shipped) or ``corrected`` (the LENA artefacts of
``docs/radio.md`` removed, see :func:`correct`). Run through ``run.py``, one process per
case (ns-3 keeps global state).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.ns3_crosscheck.cases import SE_CQI, Case

HERE = Path(__file__).resolve().parent
T0_S = 0.3  # attach (ideal RRC) is done well before this
SE_MCS = [
    0.15, 0.19, 0.23, 0.31, 0.38, 0.49, 0.6, 0.74, 0.88, 1.03, 1.18, 1.33, 1.48, 1.7, 1.91,
    2.16, 2.41, 2.57, 2.73, 3.03, 3.32, 3.61, 3.9, 4.21, 4.52, 4.82, 5.12, 5.33, 5.55,
]  # fmt: skip


def remote_host(ns, epc) -> tuple[Any, Any, Any, Any]:
    """The remote host behind the EPC's PGW (a 100 Gb/s, zero-delay link, so the wired
    side never limits a transfer) with its route to the devices (7.0.0.0/8): returns the
    host node, its address, the internet stack helper and the static routing helper."""
    pgw = epc.GetPgwNode()
    remote = ns.NodeContainer()
    remote.Create(1)
    host = remote.Get(0)
    internet = ns.InternetStackHelper()
    internet.Install(remote)
    p2p = ns.PointToPointHelper()
    p2p.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate("100Gb/s")))
    p2p.SetDeviceAttribute("Mtu", ns.UintegerValue(1500))
    p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.Seconds(0)))
    addresses = ns.Ipv4AddressHelper()
    addresses.SetBase(ns.Ipv4Address("1.0.0.0"), ns.Ipv4Mask("255.0.0.0"))
    host_address = addresses.Assign(p2p.Install(pgw, host)).GetAddress(1)
    routing = ns.Ipv4StaticRoutingHelper()
    routing.GetStaticRouting(host.GetObject[ns.Ipv4]()).AddNetworkRouteTo(
        ns.Ipv4Address("7.0.0.0"), ns.Ipv4Mask("255.0.0.0"), 1
    )
    return host, host_address, internet, routing


def configure(ns, case: Case) -> None:
    c = case.cell
    d = ns.Config.SetDefault
    # A file transfer needs the RLC to hold it and PDCP not to discard what waits longer
    # than the bearer's delay budget (300 ms for QCI 9).
    d("ns3::LteEnbRrc::EpsBearerToRlcMapping", ns.StringValue("RlcUmAlways"))
    d("ns3::LteRlcUm::MaxTxBufferSize", ns.UintegerValue(2 * case.file_bytes * case.n_devices))
    d("ns3::LteRlcUm::EnablePdcpDiscarding", ns.BooleanValue(False))
    # The wired side must not drop a downlink burst (20 files of 1,000 packets in 20 us):
    # LENA's S1-U link keeps 100 packets by default.
    d("ns3::DropTailQueue<Packet>::MaxSize", ns.QueueSizeValue(ns.QueueSize("100000p")))
    d("ns3::LteEnbNetDevice::UlBandwidth", ns.UintegerValue(c.n_rb))
    d("ns3::LteEnbNetDevice::DlBandwidth", ns.UintegerValue(c.n_rb))
    d("ns3::LteEnbPhy::TxPower", ns.DoubleValue(c.enb_power_dbm))
    d("ns3::LteEnbPhy::NoiseFigure", ns.DoubleValue(c.enb_noise_figure_db))
    d("ns3::LteUePhy::NoiseFigure", ns.DoubleValue(c.ue_noise_figure_db))
    d("ns3::LteUePhy::EnableUplinkPowerControl", ns.BooleanValue(True))
    d("ns3::LteUePowerControl::ClosedLoop", ns.BooleanValue(False))
    if c.ue_p0_dbm is None:
        # Fixed power per RB: open-loop power control with alpha = 0, P0 = the per-RB power.
        p_cmax = c.ue_power_rb_dbm + 10 * math.log10(c.n_rb)
        d("ns3::LteUePowerControl::Alpha", ns.DoubleValue(0.0))
        d("ns3::LteUePowerControl::PoNominalPusch", ns.IntegerValue(round(c.ue_power_rb_dbm)))
    else:
        # Open-loop power control (issue 33): min(Pcmax, P0 + 10 log10(M) + alpha PL).
        p_cmax = c.ue_p_cmax_dbm
        d("ns3::LteUePowerControl::Alpha", ns.DoubleValue(c.ue_alpha))
        d("ns3::LteUePowerControl::PoNominalPusch", ns.IntegerValue(c.ue_p0_dbm))
    d("ns3::LteUePhy::TxPower", ns.DoubleValue(p_cmax))
    d("ns3::LteUePowerControl::Pcmax", ns.DoubleValue(p_cmax))


#: Data REs per PRB the corrected link adaptation assumes: netfl's defaults without SRS
#: (:func:`channel_models.lte.data_res_per_prb`; LENA punctures no PUSCH for the SRS).
DL_RE_PER_PRB = 132.0  # 2 control symbols, 2 CRS ports
UL_RE_PER_PRB = 144.0  # 12 SC-FDMA data symbols


def mcs_of_cqi(cqi: int) -> int:
    """LENA's CQI -> MCS map (lte-amc.cc GetMcsFromCqi)."""
    return max(m for m in range(29) if SE_MCS[m] <= SE_CQI[cqi])


def ul_thresholds_db(cppyy, n_rb: int) -> list[float]:
    """SINR from which each CQI 1..15 is reported to the uplink scheduler: where the CQI's
    MCS decodes at a TB error rate of 0.1 (``xc::TrueThresholdDb``); only decides whom the
    scheduler serves, the grant's MCS is set by ``xc::UlGrantWrap``."""
    out: list[float] = []
    for cqi in range(1, 16):
        t = cppyy.gbl.xc.TrueThresholdDb(n_rb, mcs_of_cqi(cqi), True, UL_RE_PER_PRB)
        out.append(max(t, out[-1] if out else -99.0))
    return out


def dl_cqi(cppyy, sinr_db: float, n_rb: int) -> int:
    """The highest CQI whose MCS (LENA's CQI -> MCS map) decodes at a TB error rate of 0.1
    at ``sinr_db`` (``xc::TrueThresholdDb``), 0 if none."""
    ok = [
        c
        for c in range(1, 16)
        if cppyy.gbl.xc.TrueThresholdDb(n_rb, mcs_of_cqi(c), False, DL_RE_PER_PRB) <= sinr_db
    ]
    return max(ok, default=0)


def build(ns, cppyy, case: Case, mode: str):
    lte = ns.CreateObject[ns.LteHelper]()
    epc = ns.CreateObject[ns.PointToPointEpcHelper]()
    lte.SetEpcHelper(epc)
    scheduler = {"rr": "ns3::RrFfMacScheduler", "pf": "ns3::PfFfMacScheduler"}[case.scheduler]
    if mode == "corrected" and case.direction == "downlink" and case.scheduler == "rr":
        # LENA's round-robin downlink gives each of k devices floor(RBGs / k) RBGs and
        # leaves the rest idle (2 of 17 with 5 devices); its proportional-fair scheduler
        # hands out every RBG, in equal shares over time on a static channel.
        scheduler = "ns3::PfFfMacScheduler"
    lte.SetSchedulerType(scheduler)
    lte.SetAttribute("PathlossModel", ns.StringValue("ns3::MatrixPropagationLossModel"))

    host, host_address, internet, routing = remote_host(ns, epc)

    enbs, ues = ns.NodeContainer(), ns.NodeContainer()
    enbs.Create(1)
    ues.Create(case.n_devices)
    mobility = ns.MobilityHelper()
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel")
    mobility.Install(enbs)
    mobility.Install(ues)
    for i in range(case.n_devices):  # positions only tell the nodes apart
        ues.Get(i).GetObject[ns.MobilityModel]().SetPosition(ns.Vector(10.0 * (i + 1), 0, 0))
    enb_devs = lte.InstallEnbDevice(enbs)
    ue_devs = lte.InstallUeDevice(ues)
    internet.Install(ues)
    ue_ips = epc.AssignUeIpv4Address(ue_devs)
    for i in range(case.n_devices):
        ue_routing = routing.GetStaticRouting(ues.Get(i).GetObject[ns.Ipv4]())
        ue_routing.SetDefaultRoute(epc.GetUeDefaultGatewayAddress(), 1)
    lte.Attach(ue_devs, enb_devs.Get(0))

    enb_mob = enbs.Get(0).GetObject[ns.MobilityModel]()
    for channel in (lte.GetUplinkSpectrumChannel(), lte.GetDownlinkSpectrumChannel()):
        loss = ns.DynamicCast[ns.MatrixPropagationLossModel](channel.GetPropagationLossModel())
        for i, pl in enumerate(case.pathloss_db):
            loss.SetLoss(ues.Get(i).GetObject[ns.MobilityModel](), enb_mob, pl, True)

    port = 9000
    for i in range(case.n_devices):
        if case.direction == "uplink":
            sink_node, source_node, target = host, ues.Get(i), host_address
        else:
            sink_node, source_node, target = ues.Get(i), host, ue_ips.GetAddress(i)
        ns.UdpServerHelper(port + i).Install(sink_node).Start(ns.Seconds(0.1))
        client = ns.UdpClientHelper(ns.InetSocketAddress(target, port + i).ConvertTo())
        client.SetAttribute("MaxPackets", ns.UintegerValue(case.file_bytes // case.packet_bytes))
        client.SetAttribute("Interval", ns.TimeValue(ns.MicroSeconds(1)))
        client.SetAttribute("PacketSize", ns.UintegerValue(case.packet_bytes))
        client.Install(source_node).Start(ns.Seconds(T0_S + case.start_s[i]))
    sinks = (
        [
            f"/NodeList/{host.GetId()}/ApplicationList/{a}/$ns3::UdpServer/Rx"
            for a in range(case.n_devices)
        ]
        if case.direction == "uplink"
        else [
            f"/NodeList/{ues.Get(i).GetId()}/ApplicationList/0/$ns3::UdpServer/Rx"
            for i in range(case.n_devices)
        ]
    )
    for path in sinks:
        cppyy.gbl.xc.HookRx(path)
    keys = (
        [host.GetId() * 1000 + a for a in range(case.n_devices)]
        if case.direction == "uplink"
        else [ues.Get(i).GetId() * 1000 for i in range(case.n_devices)]
    )
    if case.direction == "uplink":
        for i in range(case.n_devices):
            phy = ue_devs.Get(i).GetObject[ns.LteUeNetDevice]().GetPhy()
            cppyy.gbl.xc.HookPuschPower(phy.GetUplinkPowerControl())
        lte.EnableUlMacTraces()
        lte.EnableUlPhyTraces()
        lte.EnableUlRxPhyTraces()
    else:
        lte.EnableDlMacTraces()
        lte.EnableDlPhyTraces()
        lte.EnableDlRxPhyTraces()
    return lte, enb_devs, ue_devs, ues, keys


def correct(ns, cppyy, case: Case, enb_devs, ue_devs, ues) -> object:
    """Remove LENA's artefacts (called once the bearers exist); docs/radio.md lists them:

    - buffer status: every RLC (devices' and eNB's) reports its buffer every TTI (LENA:
      every 10 ms once the scheduler's estimate has run out, idling a backlogged device
      ~18 ms after each 150 kB of grants);
    - link adaptation at the true code rate and any MCS index: each new grant, uplink and
      downlink, gets the MCS with the largest TB that decodes at a TB error rate <= 0.1
      by LENA's own link-level (Vienna) curves read at the TB's true code rate and
      modulation (``xc::TrueThresholdDb``, ``xc::GrantWrap``). LENA's uplink schedulers
      map the SINR to a CQI through a hard-coded Shannon gap for a bit error rate of 5e-5
      ("WILD ACK: same as DL"), about 5 dB more conservative than a 10% BLER; both
      directions then use only the 15 MCS that match a CQI; and the error model reads an
      MCS at a fixed code rate per index (R1-081483's efficiencies, offset from TS 36.213's
      MCS rows: too high for QPSK, too low for 64QAM). The scheduler is shown the CQI
      that qualifies (``xc::SchedWrap``), so that it serves every device MCS 0 reaches;
    - the data error models are off: LENA's decodes an uplink MCS with the downlink
      table's modulation (a QPSK uplink MCS 10 as 16QAM: it fails nearly always) and
      judges every MCS at the fixed code rates above, so it disagrees with the corrected
      link adaptation both ways; no HARQ losses in ns-3, netfl charges its MCS's BLER
      (at most 0.1).
    """
    enb = enb_devs.Get(0).GetObject[ns.LteEnbNetDevice]()
    if case.direction == "uplink":
        enb.GetPhy().GetUlSpectrumPhy().SetAttribute(
            "DataErrorModelEnabled", ns.BooleanValue(False)
        )
    else:
        for i in range(case.n_devices):
            phy = ue_devs.Get(i).GetObject[ns.LteUeNetDevice]().GetPhy()
            phy.GetDlSpectrumPhy().SetAttribute("DataErrorModelEnabled", ns.BooleanValue(False))
    wrap = cppyy.gbl.xc.SchedWrap()
    mac = enb.GetMac()
    scheduler = enb.GetCcMap()[0].GetFfMacScheduler()
    wrap.inner = scheduler.GetFfMacSchedSapProvider()
    grants = cppyy.gbl.xc.GrantWrap()
    grants.ulRePerPrb, grants.dlRePerPrb = UL_RE_PER_PRB, DL_RE_PER_PRB
    if case.direction == "uplink":
        for t in ul_thresholds_db(cppyy, case.rbs_each):
            wrap.ulThresholdsDb.push_back(t)
        c = case.cell
        if c.ue_p0_dbm is not None:  # the PUSCH's SINR on each grant (GrantWrap, SchedWrap)
            grants.ulPcmaxDbm, grants.ulNoiseRbDbm = c.ue_p_cmax_dbm, c.noise_rb_dbm("uplink")
            for i, (pl, snr) in enumerate(zip(case.pathloss_db, case.snr_db(), strict=True)):
                rnti = ue_devs.Get(i).GetObject[ns.LteUeNetDevice]().GetRrc().GetRnti()
                grants.ulOpenLoopDbm[rnti] = c.ue_p0_dbm + c.ue_alpha * pl
                grants.ulPathlossDb[rnti] = pl
                wrap.ulPuschSinrDb[rnti] = snr
    else:
        for i, snr in enumerate(case.snr_db()):
            rnti = ue_devs.Get(i).GetObject[ns.LteUeNetDevice]().GetRrc().GetRnti()
            wrap.dlCqi[rnti] = dl_cqi(cppyy, snr, case.cell.n_rb)
            grants.dlSinrDb[rnti] = snr
    mac.SetFfMacSchedSapProvider(wrap)
    grants.inner = mac.GetFfMacSchedSapUser()
    grants.provider = wrap
    scheduler.SetFfMacSchedSapUser(grants)
    refresher = cppyy.gbl.xc.BsrRefresher()
    paths = [
        f"/NodeList/{ues.Get(i).GetId()}/DeviceList/*/$ns3::LteUeNetDevice"
        "/LteUeRrc/DataRadioBearerMap/*/LteRlc"
        for i in range(case.n_devices)
    ]
    paths.append(
        "/NodeList/*/DeviceList/*/$ns3::LteEnbNetDevice/LteEnbRrc/UeMap/*/DataRadioBearerMap/*/LteRlc"
    )
    for path in paths:
        matches = ns.Config.LookupMatches(path)
        for k in range(matches.GetN()):
            refresher.Add(matches.Get(k))
    refresher.Tick()
    return wrap, grants, refresher


def _table(path: Path) -> np.ndarray:
    """A LENA trace file as rows of numbers (none if not written: the uplink PHY reception
    trace is off with the eNB's uplink error model)."""
    lines = path.read_text().splitlines()[1:] if path.exists() else []
    rows = [line.split() for line in lines if line.strip()]
    return np.array(rows, dtype=float) if rows else np.zeros((0, 12))


def per_device(case: Case, folder: Path) -> list[dict]:
    """One row per device from the receive log (``rx.json``) and LENA's MAC/PHY traces.

    Read once the ns-3 process has ended: LENA's trace files are complete only then."""
    rx = json.loads((folder / "rx.json").read_text())
    if case.direction == "uplink":
        mac = _table(folder / "UlMacStats.txt")  # time cell imsi frame sf rnti mcs size cc
        phy = _table(folder / "UlRxPhyStats.txt")  # ms cell imsi rnti layer mcs size rv ndi ok
        sinr = _table(folder / "UlSinrStats.txt")  # time cell imsi rnti sinr cc
        sinr_imsi, sinr_lin, ok_col = sinr[:, 2], sinr[:, 4], 9
    else:
        mac = _table(folder / "DlMacStats.txt")  # time cell imsi frame sf rnti mcs1 size1 ...
        phy = _table(folder / "DlRxPhyStats.txt")  # ms cell imsi rnti mode layer mcs size rv ndi ok
        sinr = _table(folder / "DlRsrpSinrStats.txt")  # time cell imsi rnti rsrp sinr cc
        sinr_imsi, sinr_lin, ok_col = sinr[:, 2], sinr[:, 5], 10
    mac_time, mac_imsi, mac_mcs, mac_bytes = mac[:, 0], mac[:, 2], mac[:, 6], mac[:, 7]
    rows = []
    for i in range(case.n_devices):
        imsi = i + 1
        start = T0_S + case.start_s[i]
        mine = (mac_imsi == imsi) & (mac_time >= start - 1e-9)
        got, end = rx[i]["bytes"], rx[i]["last_s"]
        time_s = end - start
        rows.append(
            {
                "case": case.name,
                "device": i,
                "snr_db": round(case.snr_db()[i], 3),
                "sinr_ns3_db": round(
                    10 * math.log10(float(np.median(sinr_lin[sinr_imsi == imsi]))), 3
                ),
                "start_s": round(case.start_s[i], 6),
                "first_tb_delay_s": round(float(mac_time[mine].min()) - start, 6)
                if mine.any()
                else math.nan,
                "transfer_time_s": round(time_s, 6),
                "bytes_received": got,
                "rate_bps": round(8 * got / time_s, 1) if got else 0.0,
                "tb_count": int(mine.sum()),
                "tb_bits": int(mac_bytes[mine].sum() * 8),
                "mcs_median": float(np.median(mac_mcs[mine])) if mine.any() else math.nan,
                "harq_failures": int(np.sum((phy[:, 2] == imsi) & (phy[:, ok_col] == 0))),
                "pusch_power_dbm": round(rx[i].get("pusch_power_dbm", math.nan), 3),
            }
        )
    return rows


def simulate(case: Case, mode: str, folder: Path) -> None:
    """Run the case in ns-3 with its traces in ``folder`` and write ``folder/rx.json``."""
    import cppyy
    from ns import ns

    cppyy.cppdef((HERE / "lena_helpers.hpp").read_text())
    configure(ns, case)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    os.chdir(folder)
    _lte, enb_devs, ue_devs, ues, keys = build(ns, cppyy, case, mode)
    ns.Simulator.Stop(ns.Seconds(T0_S - 0.05))
    ns.Simulator.Run()
    keep = correct(ns, cppyy, case, enb_devs, ue_devs, ues) if mode == "corrected" else None
    rx = cppyy.gbl.xc.g_rx
    horizon = T0_S + max(case.start_s) + 200.0
    t = T0_S - 0.05
    while t < horizon:
        t += 1.0
        ns.Simulator.Stop(ns.Seconds(1.0))
        ns.Simulator.Run()
        if all(rx.bytes.count(k) and int(rx.bytes[k]) >= case.file_bytes for k in keys):
            break
    pusch = cppyy.gbl.xc.g_pusch.dbm
    rntis = [
        ue_devs.Get(i).GetObject[ns.LteUeNetDevice]().GetRrc().GetRnti() for i in range(len(keys))
    ]
    log = [
        {
            "bytes": int(rx.bytes[k]) if rx.bytes.count(k) else 0,
            "last_s": float(rx.last[k]) if rx.last.count(k) else math.nan,
            # The median PUSCH power over the device's transmissions (uplink cases).
            "pusch_power_dbm": float(np.median(list(pusch[r]))) if pusch.count(r) else math.nan,
        }
        for k, r in zip(keys, rntis, strict=True)
    ]
    (folder / "rx.json").write_text(json.dumps(log))
    del keep
    ns.Simulator.Destroy()


if __name__ == "__main__":  # CASE.json MODE FOLDER
    simulate(
        Case.from_json(json.loads(Path(sys.argv[1]).read_text())), sys.argv[2], Path(sys.argv[3])
    )
