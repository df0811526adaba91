"""Path-loss and rate models, vectorised over numpy arrays (no SimPy, no torch).

``CHANNEL_MODELS`` maps a name to ``("module:attribute", "one-line summary")``; netfl's
registry imports the target only when used. Path-loss models (``radio.channel_model``) are
:class:`channel_models.itu_m2135.M2135Model` instances (or any object with the methods
of ``netfl.radio.link.ChannelModel``, named ``package.module:attribute``); rate mappings
(``radio.rate_mapping.kind``) are :class:`channel_models.rate.RateMapping` instances.
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
    "shannon": ("channel_models.rate:SHANNON", "rate: Shannon capacity B log2(1 + SINR)"),
    "shannon_with_loss": (
        "channel_models.rate:SHANNON_WITH_LOSS",
        "rate: B min(log2(1 + 10^(-Δ/10) SINR), ρ_max), Akdeniz et al. 2014 (Δ 1.6, ρ_max 4.8)",
    ),
    "lte_cqi": (
        "channel_models.rate:LTE_CQI",
        "rate: LTE CQI table (TS 36.213 7.2.3-1) chosen by Shannon gap, BER 5e-5",
    ),
}
