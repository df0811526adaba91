"""Path-loss and rate models, vectorised over numpy arrays (no SimPy, no torch).

``CHANNEL_MODELS`` maps a name to ``("module:attribute", "one-line summary")``; netfl's
registry imports the target only when used. Path-loss models (``radio.channel_model``) are
:class:`channel_models.itu_m2135.M2135Model` instances or
:class:`channel_models.tr38901.ThreeGppModel` instances (or any object with the methods of
:class:`channel_models.protocol.ChannelModel`, named ``package.module:attribute``; check one
with :func:`channel_models.protocol.check_channel_model`); rate mappings
(``radio.rate_mapping.kind``) are :class:`channel_models.rate.RateMapping` instances
(``lte_tbs``, the default: :class:`channel_models.lte.LteTbs`, one per direction).
"""

CHANNEL_MODELS: dict[str, tuple[str, str]] = {
    "umi_nlos": (
        "channel_models.itu_m2135:UMI_NLOS",
        "path loss: ITU-R M.2135-1 Urban Micro NLOS, hexagonal (10-2000 m, sigma 4 dB)",
    ),
    "umi_los": (
        "channel_models.itu_m2135:UMI_LOS",
        "path loss: ITU-R M.2135-1 Urban Micro LOS with breakpoint (10-5000 m, sigma 3 dB)",
    ),
    "umi": (
        "channel_models.itu_m2135:UMI",
        "path loss: ITU-R M.2135-1 Urban Micro, LOS drawn per UE with P_LOS(d)",
    ),
    "uma_nlos": (
        "channel_models.itu_m2135:UMA_NLOS",
        "path loss: ITU-R M.2135-1 Urban Macro NLOS (10-5000 m, sigma 6 dB)",
    ),
    "uma_los": (
        "channel_models.itu_m2135:UMA_LOS",
        "path loss: ITU-R M.2135-1 Urban Macro LOS with breakpoint (10-5000 m, sigma 4 dB)",
    ),
    "uma": (
        "channel_models.itu_m2135:UMA",
        "path loss: ITU-R M.2135-1 Urban Macro, LOS drawn per UE with P_LOS(d)",
    ),
    "tr38901_umi": (
        "channel_models.tr38901:UMI",
        "path loss: 3GPP TR 38.901 UMi-Street Canyon, LOS drawn per link with P_LOS (0.5-100 GHz)",
    ),
    "tr38901_umi_los": (
        "channel_models.tr38901:UMI_LOS",
        "path loss: 3GPP TR 38.901 UMi-Street Canyon LOS (sigma 4 dB)",
    ),
    "tr38901_umi_nlos": (
        "channel_models.tr38901:UMI_NLOS",
        "path loss: 3GPP TR 38.901 UMi-Street Canyon NLOS (sigma 7.82 dB)",
    ),
    "tr38901_uma": (
        "channel_models.tr38901:UMA",
        "path loss: 3GPP TR 38.901 UMa, LOS drawn per link with P_LOS (0.5-100 GHz)",
    ),
    "tr38901_uma_los": (
        "channel_models.tr38901:UMA_LOS",
        "path loss: 3GPP TR 38.901 UMa LOS (sigma 4 dB)",
    ),
    "tr38901_uma_nlos": (
        "channel_models.tr38901:UMA_NLOS",
        "path loss: 3GPP TR 38.901 UMa NLOS (sigma 6 dB)",
    ),
    "tr36873_umi": (
        "channel_models.tr38901:UMI_3D",
        "path loss: 3GPP TR 36.873 3D-UMi (its phase-1 calibration), LOS drawn per link (2-6 GHz)",
    ),
    "tr36873_uma": (
        "channel_models.tr38901:UMA_3D",
        "path loss: 3GPP TR 36.873 3D-UMa (its phase-1 calibration), LOS drawn per link (2-6 GHz)",
    ),
    "shannon": ("channel_models.rate:SHANNON", "rate: Shannon capacity B log2(1 + SINR)"),
    "shannon_with_loss": (
        "channel_models.rate:SHANNON_WITH_LOSS",
        "rate: B min(log2(1 + 10^(-Δ/10) SINR), ρ_max), Akdeniz et al. 2014 (Δ 1.6, ρ_max 4.8)",
    ),
    "lte_cqi": (
        "channel_models.rate:LTE_CQI",
        "rate: LTE CQI table (TS 36.213 7.2.3-1) chosen by Shannon gap, BER 5e-5",
    ),
    "lte_tbs": (
        "channel_models.lte:LTE_TBS",
        "rate: LTE MCS at BLER 0.1, TS 36.213 transport blocks, PHY/L2 overheads (default)",
    ),
}
