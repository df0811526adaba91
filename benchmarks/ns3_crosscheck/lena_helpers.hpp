// C++ helpers for the ns-3 LENA cross-check (compiled at run time by cppyy).
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace xc
{
using namespace ns3;

// Application-level receive log: first/last receive time and bytes per (node, app).
struct RxLog
{
    std::map<uint32_t, double> first, last;
    std::map<uint32_t, uint64_t> bytes;

    void Rx(std::string ctx, Ptr<const Packet> p)
    {
        uint32_t node = std::stoul(ctx.substr(10, ctx.find('/', 10) - 10));
        uint32_t app = std::stoul(ctx.substr(ctx.find("ApplicationList/") + 16));
        uint32_t key = node * 1000 + app;
        double t = Simulator::Now().GetSeconds();
        if (!first.count(key))
            first[key] = t;
        last[key] = t;
        bytes[key] += p->GetSize();
    }
};

RxLog g_rx;

void HookRx(std::string path)
{
    Config::Connect(path, MakeCallback(&RxLog::Rx, &g_rx));
}

// The PUSCH power each device's LteUePowerControl sets (dBm), per RNTI, every transmission.
struct PuschPowerLog
{
    std::map<uint16_t, std::vector<double>> dbm;

    void Power(uint16_t cellId, uint16_t rnti, double txPower)
    {
        dbm[rnti].push_back(txPower);
    }
};

PuschPowerLog g_pusch;

void HookPuschPower(Ptr<LteUePowerControl> control)
{
    control->TraceConnectWithoutContext("ReportPuschTxPower",
                                        MakeCallback(&PuschPowerLog::Power, &g_pusch));
}

// Access to LteRlcUm::DoReportBufferStatus (private) through the explicit-instantiation
// rule [temp.explicit]/12: the RLC reports its buffer to the MAC every TTI, as a UE puts a
// buffer status report in every MAC PDU (TS 36.321 Sec. 5.4.5), instead of LENA's 10 ms
// timer after the eNB's estimate of the buffer runs out.
template <typename Tag, typename Tag::type M>
struct Rob
{
    friend typename Tag::type get(Tag)
    {
        return M;
    }
};

struct RlcUmReport
{
    typedef void (LteRlcUm::*type)();
    friend type get(RlcUmReport);
};

template struct Rob<RlcUmReport, &LteRlcUm::DoReportBufferStatus>;

struct BsrRefresher
{
    std::vector<Ptr<LteRlcUm>> rlcs;

    void Add(Ptr<Object> rlc)
    {
        rlcs.push_back(DynamicCast<LteRlcUm>(rlc));
    }

    void Tick()
    {
        for (auto& r : rlcs)
        {
            ((*r).*get(RlcUmReport()))();
        }
        Simulator::Schedule(MilliSeconds(1), &BsrRefresher::Tick, this);
    }
};

// LENA's CQI spectral efficiencies (lte-amc.cc, R1-081483).
static const double kSeCqi[16] =
    {0.0, 0.15, 0.23, 0.38, 0.6, 0.88, 1.18, 1.48, 1.91, 2.41, 2.73, 3.32, 3.9, 4.52, 5.12, 5.55};

// The SINR (dB) that LENA's uplink schedulers map to `cqi` through their hard-coded
// Shannon gap (BER 5e-5): the middle of the CQI's efficiency interval.
double PiroSinrDb(int cqi)
{
    double gap = -std::log(5.0 * 0.00005) / 1.5;
    double lo = kSeCqi[cqi];
    double hi = cqi < 15 ? kSeCqi[cqi + 1] : 6.5;
    double se = cqi == 0 ? 0.05 : 0.5 * (lo + hi);
    return 10.0 * std::log10(gap * (std::pow(2.0, se) - 1.0));
}

// TB error rate of LENA's MI error model for a flat SINR over `nrb` RBs at `mcs`, as
// LENA evaluates it (the code rate of the MCS from its fixed per-MCS table).
double Tbler(double sinrDb, int nrb, int mcs, bool uplink)
{
    auto sm = LteSpectrumValueHelper::GetSpectrumModel(100, 100);
    SpectrumValue v(sm);
    std::vector<int> map;
    for (int i = 0; i < 100; i++)
    {
        v[i] = i < nrb ? std::pow(10.0, sinrDb / 10.0) : 0.0;
        if (i < nrb)
            map.push_back(i);
    }
    Ptr<LteAmc> amc = CreateObject<LteAmc>();
    int tbs = uplink ? amc->GetUlTbSizeFromMcs(mcs, nrb) : amc->GetDlTbSizeFromMcs(mcs, nrb);
    HarqProcessInfoList_t harq;
    return LteMiErrorModel::GetTbDecodificationStats(v, map, tbs / 8, mcs, harq).tbler;
}

// The effective code rates of LENA's BLER curves (lte-mi-error-model.cc, first
// transmissions only) per modulation order.
static const std::map<int, std::vector<std::pair<int, double>>> kEcrCurves = {
    {2, {{3, 0.08}, {4, 0.1}, {5, 0.11}, {6, 0.15}, {7, 0.19}, {8, 0.24}, {9, 0.3}, {10, 0.37},
         {11, 0.44}, {12, 0.51}}},
    {4, {{16, 0.3}, {17, 0.33}, {18, 0.37}, {19, 0.42}, {20, 0.48}, {21, 0.54}, {22, 0.6}}},
    {6, {{26, 0.43}, {27, 0.45}, {28, 0.5}, {29, 0.55}, {30, 0.6}, {31, 0.65}, {32, 0.7},
         {33, 0.75}, {34, 0.8}, {35, 0.85}, {36, 0.89}, {37, 0.92}}},
};

// SINR (dB) at which a code block of `cbSize` bits at curve `ecrId` fails with `pcb`.
double CbThresholdDb(int qm, int ecrId, int cbSize, double pcb)
{
    static std::map<std::tuple<int, int, int, long>, double> cache;
    auto key = std::make_tuple(qm, ecrId, cbSize, std::lround(pcb * 1e9));
    auto it = cache.find(key);
    if (it != cache.end())
        return it->second;
    auto sm = LteSpectrumValueHelper::GetSpectrumModel(100, 6);
    SpectrumValue v(sm);
    std::vector<int> map = {0};
    uint8_t mcsOfQm = qm == 2 ? 0 : (qm == 4 ? 10 : 17); // LENA's MI map per modulation
    double lo = -20.0, hi = 40.0;
    for (int i = 0; i < 50; i++)
    {
        double mid = 0.5 * (lo + hi);
        v[0] = std::pow(10.0, mid / 10.0);
        double bler = LteMiErrorModel::MappingMiBler(LteMiErrorModel::Mib(v, map, mcsOfQm), ecrId, cbSize);
        (bler > pcb ? lo : hi) = mid;
    }
    cache[key] = hi;
    return hi;
}

// LENA's link-level curves applied at the transport block's true code rate: the SINR (dB)
// at which MCS `mcs` on `nrb` PRBs of `rePerPrb` data REs reaches a TB error rate of 0.1
// (TS 36.212 Sec. 5.1.2 segmentation; the modulation of the direction's MCS table; linear
// in the code rate between LENA's curves, extrapolated beyond them); +inf above a code
// rate of 0.930 (TS 36.213 Sec. 7.1.7).
double TrueThresholdDb(int nrb, int mcs, bool uplink, double rePerPrb)
{
    static const int qmDl[29] = {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 4,
                                 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6};
    static const int qmUl[29] = {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4,
                                 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6};
    Ptr<LteAmc> amc = CreateObject<LteAmc>();
    int tbs = uplink ? amc->GetUlTbSizeFromMcs(mcs, nrb) : amc->GetDlTbSizeFromMcs(mcs, nrb);
    int qm = uplink ? qmUl[mcs] : qmDl[mcs];
    double b = tbs + 24.0;
    int blocks = b <= 6144 ? 1 : (int)std::ceil(b / 6120.0);
    double bits = b + (blocks > 1 ? 24.0 * blocks : 0.0);
    int cbSize = (int)std::ceil(bits / blocks);
    double rate = bits / (nrb * rePerPrb * qm);
    if (rate > 0.930)
        return 1e9;
    double pcb = 1.0 - std::pow(0.9, 1.0 / blocks);
    const auto& curves = kEcrCurves.at(qm);
    size_t j = 0;
    while (j + 2 < curves.size() && curves[j + 1].second < rate)
        ++j;
    double t0 = CbThresholdDb(qm, curves[j].first, cbSize, pcb);
    double t1 = CbThresholdDb(qm, curves[j + 1].first, cbSize, pcb);
    double e0 = curves[j].second, e1 = curves[j + 1].second;
    return t0 + (rate - e0) * (t1 - t0) / (e1 - e0);
}

// Sits between the eNB MAC and its scheduler. Uplink: replaces each SRS SINR report by
// the SINR that makes the scheduler pick the CQI given by `ulThresholdsDb` (CQI c from
// ulThresholdsDb[c - 1] on) at the SRS's SINR, or under power control at the PUSCH's on the
// RBs the device is granted (`ulPuschSinrDb`: the SRS has its own power). Downlink:
// replaces the wideband/subband CQI of an RNTI in `dlCqi`. Everything else is forwarded
// unchanged.
struct SchedWrap : public FfMacSchedSapProvider
{
    FfMacSchedSapProvider* inner{nullptr};
    std::vector<double> ulThresholdsDb;
    std::map<uint16_t, int> dlCqi;
    std::map<uint16_t, double> ulSinrDb; // last SRS SINR (dB, worst RB) per RNTI
    std::map<uint16_t, double> ulPuschSinrDb;
    uint64_t ulRewritten{0}, dlRewritten{0};

    int UlCqi(double sinrDb) const
    {
        int c = 0;
        while (c < (int)ulThresholdsDb.size() && sinrDb >= ulThresholdsDb[c])
            ++c;
        return c;
    }

    void SchedDlRlcBufferReq(const SchedDlRlcBufferReqParameters& p) override { inner->SchedDlRlcBufferReq(p); }
    void SchedDlPagingBufferReq(const SchedDlPagingBufferReqParameters& p) override { inner->SchedDlPagingBufferReq(p); }
    void SchedDlMacBufferReq(const SchedDlMacBufferReqParameters& p) override { inner->SchedDlMacBufferReq(p); }
    void SchedDlTriggerReq(const SchedDlTriggerReqParameters& p) override { inner->SchedDlTriggerReq(p); }
    void SchedDlRachInfoReq(const SchedDlRachInfoReqParameters& p) override { inner->SchedDlRachInfoReq(p); }
    void SchedUlTriggerReq(const SchedUlTriggerReqParameters& p) override { inner->SchedUlTriggerReq(p); }
    void SchedUlNoiseInterferenceReq(const SchedUlNoiseInterferenceReqParameters& p) override { inner->SchedUlNoiseInterferenceReq(p); }
    void SchedUlSrInfoReq(const SchedUlSrInfoReqParameters& p) override { inner->SchedUlSrInfoReq(p); }
    void SchedUlMacCtrlInfoReq(const SchedUlMacCtrlInfoReqParameters& p) override { inner->SchedUlMacCtrlInfoReq(p); }

    void SchedDlCqiInfoReq(const SchedDlCqiInfoReqParameters& p) override
    {
        SchedDlCqiInfoReqParameters q = p;
        for (auto& e : q.m_cqiList)
        {
            auto it = dlCqi.find(e.m_rnti);
            if (it == dlCqi.end())
                continue;
            for (auto& c : e.m_wbCqi)
                c = it->second;
            for (auto& sb : e.m_sbMeasResult.m_higherLayerSelected)
                for (auto& c : sb.m_sbCqi)
                    c = it->second;
            ++dlRewritten;
        }
        inner->SchedDlCqiInfoReq(q);
    }

    void SchedUlCqiInfoReq(const SchedUlCqiInfoReqParameters& p) override
    {
        if (ulThresholdsDb.empty() || p.m_ulCqi.m_type != UlCqi_s::SRS)
        {
            inner->SchedUlCqiInfoReq(p);
            return;
        }
        SchedUlCqiInfoReqParameters q = p;
        double pusch = 1e9;
        for (auto& vsp : p.m_vendorSpecificList)
        {
            if (vsp.m_type != SRS_CQI_RNTI_VSP)
                continue;
            uint16_t rnti = DynamicCast<SrsCqiRntiVsp>(vsp.m_value)->GetRnti();
            double worst = 1e9;
            for (auto v : p.m_ulCqi.m_sinr)
                worst = std::min(worst, LteFfConverter::fpS11dot3toDouble(v));
            ulSinrDb[rnti] = worst;
            auto it = ulPuschSinrDb.find(rnti);
            if (it != ulPuschSinrDb.end())
                pusch = it->second;
        }
        for (auto& v : q.m_ulCqi.m_sinr)
        {
            double db = pusch < 1e8 ? pusch : LteFfConverter::fpS11dot3toDouble(v);
            v = LteFfConverter::double2fpS11dot3(PiroSinrDb(UlCqi(db)));
        }
        ++ulRewritten;
        inner->SchedUlCqiInfoReq(q);
    }
};

// Sits between the scheduler and the eNB MAC and sets the MCS of every new grant: the MCS
// (uplink: TS 36.213 Table 8.6.1-1, downlink: Table 7.1.7.1-1, any index) with the largest
// TB that decodes at a TB error rate <= 0.1 (TrueThresholdDb) on the granted RBs, at the
// device's last SRS SINR (uplink) or its SINR from the case (downlink, `dlSinrDb`), and the
// TBS that goes with it (downlink: the RLC PDU sizes too), instead of the MCS the
// scheduler derives from a CQI (only the 15 MCS that match a CQI). Under uplink power
// control (`ulOpenLoopDbm` set for an RNTI) the uplink SINR is the PUSCH's on the granted
// RBs, min(P0 + alpha PL, Pcmax - 10 log10(RBs)) - PL - noise per RB, as an eNB that knows
// the device's power headroom (TS 36.321 Sec. 5.4.6) predicts it; the SRS, sent over other
// RBs at its own power, does not tell it. Where no MCS decodes on the granted RBs (a device
// at Pcmax spread too thin), the grant shrinks to the most RBs on which MCS 0 does (the
// device's power concentrated, as netfl's lte_tbs below MCS 0), instead of keeping LENA's
// own MCS, which its disabled error model would pass.
struct GrantWrap : public FfMacSchedSapUser
{
    FfMacSchedSapUser* inner{nullptr};
    SchedWrap* provider{nullptr};
    std::map<uint16_t, double> dlSinrDb;
    std::map<uint16_t, double> ulOpenLoopDbm, ulPathlossDb;
    double ulPcmaxDbm{23.0}, ulNoiseRbDbm{0.0};
    double ulRePerPrb{144.0}, dlRePerPrb{132.0};
    int rbgSize{3};
    std::map<std::tuple<int, int, bool>, int> cache; // (SINR in 1/8 dB, RBs, uplink) -> MCS
    uint64_t rewritten{0};

    int Mcs(double sinrDb, int rbs, bool uplink)
    {
        auto key = std::make_tuple((int)std::lround(sinrDb * 8), rbs, uplink);
        auto it = cache.find(key);
        if (it != cache.end())
            return it->second;
        Ptr<LteAmc> amc = CreateObject<LteAmc>();
        int best = -1, bestTbs = -1;
        for (int m = 0; m <= 28; m++)
        {
            int tbs = uplink ? amc->GetUlTbSizeFromMcs(m, rbs) : amc->GetDlTbSizeFromMcs(m, rbs);
            double t = TrueThresholdDb(rbs, m, uplink, uplink ? ulRePerPrb : dlRePerPrb);
            if (t <= sinrDb && tbs > bestTbs)
            {
                best = m;
                bestTbs = tbs;
            }
        }
        cache[key] = best;
        return best;
    }

    void SchedDlConfigInd(const SchedDlConfigIndParameters& p) override
    {
        SchedDlConfigIndParameters q = p;
        Ptr<LteAmc> amc = CreateObject<LteAmc>();
        for (auto& el : q.m_buildDataList)
        {
            auto& dci = el.m_dci;
            auto it = dlSinrDb.find(dci.m_rnti);
            if (it == dlSinrDb.end() || dci.m_ndi.empty() || dci.m_ndi[0] != 1)
                continue;
            int rbs = __builtin_popcount(dci.m_rbBitmap) * rbgSize; // as LENA sizes a TB
            int mcs = Mcs(it->second, rbs, false);
            if (mcs < 0 || dci.m_tbsSize[0] == 0)
                continue;
            uint16_t old = dci.m_tbsSize[0];
            uint16_t tbs = amc->GetDlTbSizeFromMcs(mcs, rbs) / 8;
            dci.m_mcs[0] = mcs;
            dci.m_tbsSize[0] = tbs;
            for (auto& perLc : el.m_rlcPduList)
                for (auto& pdu : perLc)
                    pdu.m_size = (uint16_t)((uint32_t)pdu.m_size * tbs / old);
            ++rewritten;
        }
        inner->SchedDlConfigInd(q);
    }

    void SchedUlConfigInd(const SchedUlConfigIndParameters& p) override
    {
        SchedUlConfigIndParameters q = p;
        Ptr<LteAmc> amc = CreateObject<LteAmc>();
        for (auto& dci : q.m_dciList)
        {
            if (dci.m_ndi != 1)
                continue;
            double sinrDb;
            auto ol = ulOpenLoopDbm.find(dci.m_rnti);
            auto it = provider->ulSinrDb.find(dci.m_rnti);
            if (ol != ulOpenLoopDbm.end())
            {
                int rbs = dci.m_rbLen, mcs = -1;
                for (; rbs >= 1 && mcs < 0; --rbs)
                {
                    double power = std::min(ol->second, ulPcmaxDbm - 10.0 * std::log10(rbs));
                    mcs = Mcs(power - ulPathlossDb[dci.m_rnti] - ulNoiseRbDbm, rbs, true);
                }
                if (mcs < 0)
                    continue; // nothing decodes even on one RB
                dci.m_rbLen = rbs + 1;
                dci.m_mcs = mcs;
                dci.m_tbSize = amc->GetUlTbSizeFromMcs(mcs, dci.m_rbLen) / 8;
                ++rewritten;
                continue;
            }
            else if (it != provider->ulSinrDb.end())
                sinrDb = it->second;
            else
                continue;
            int mcs = Mcs(sinrDb, dci.m_rbLen, true);
            if (mcs < 0)
                continue;
            dci.m_mcs = mcs;
            dci.m_tbSize = amc->GetUlTbSizeFromMcs(mcs, dci.m_rbLen) / 8;
            ++rewritten;
        }
        inner->SchedUlConfigInd(q);
    }
};
} // namespace xc
