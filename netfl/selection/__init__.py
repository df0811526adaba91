"""Client-selection strategies, one per file, registered by name below.

The table maps a strategy name to ``module:Class`` and a one-line summary; classes are
imported only when used (see :mod:`netfl.registry`).
"""

from netfl.registry_entry import Entry

STRATEGIES: dict[str, Entry] = {
    "random": Entry(
        "netfl.selection.random:RandomSelection",
        "uniform without replacement (optionally weighted by data size); FedAvg baseline",
    ),
    "fedcs": Entry(
        "netfl.selection.fedcs:FedCS",
        "FedCS greedy on the reported times, T_inc eqs. (1)-(2) of Yoshida et al. 2020; budget or"
        " deadline form",
    ),
    "fedcs_extended": Entry(
        "netfl.selection.fedcs_extended:FedCSExtended",
        "Extended FedCS: FedCS on the moving average of the last five observed times (Yoshida et"
        " al. 2020)",
    ),
    "mab_cs_naive": Entry(
        "netfl.selection.mab_cs:NaiveMABCS",
        "Naive MAB-CS: UCB on each client's mean observed T_inc, eq. (4) of Yoshida et al. 2020",
    ),
    "mab_cs_elementwise": Entry(
        "netfl.selection.mab_cs:ElementwiseMABCS",
        "Element-wise MAB-CS: FedCS on UCB-amended update/upload times, eqs. (5)-(7) of Yoshida"
        " et al. 2020",
    ),
    "rbcs_f": Entry(
        "netfl.selection.rbcs_f:RBCSF",
        "RBCS-F: Lyapunov fairness queues + ridge-regression LCB of the exchange time (Huang et"
        " al. 2021)",
    ),
    "fedcs_deadline": Entry(
        "netfl.selection.fedcs_deadline:FedCSDeadline",
        "FedCS(3) of Huang et al. 2021: oracle expected exchange times, every client within a"
        " deadline",
    ),
    "oort": Entry(
        "netfl.selection.oort:Oort",
        "Oort (OSDI 2021): loss-based utility x system penalty, exploration, pacer",
    ),
    "ucb_cs": Entry(
        "netfl.selection.ucb_cs:UCBCS",
        "discounted UCB on local losses weighted by data size (Cho et al., UCB-CS)",
    ),
    "pow_d": Entry(
        "netfl.selection.pow_d:PowD",
        "poll d clients drawn by data size for their loss, take the m largest (power-of-d)",
    ),
    "rpow_d": Entry(
        "netfl.selection.pow_d:RPowD",
        "pow-d ranked by stale losses from last participation, no polling (rpow-d of Cho et al."
        " 2020)",
    ),
    "gpfl": Entry(
        "netfl.selection.gpfl:GPFL",
        "gradient projection on the global momentum direction with a confidence bound",
    ),
    "nccb": Entry(
        "netfl.selection.nccb:NCCB",
        "LSH data contexts, cluster exploration, then neural UCB on utility (NCCB)",
    ),
    "k_linucb": Entry(
        "netfl.selection.k_linucb:KLinUCB",
        "linear UCB on LSH data contexts, top k (NCCB's k-LinUCB baseline)",
    ),
}
