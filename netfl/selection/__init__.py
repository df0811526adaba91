"""Client-selection strategies, one per file, registered by name below.

The table maps a strategy name to ``module:Class`` and a one-line summary; classes are
imported only when used (see :mod:`netfl.registry`).
"""

from netfl.registry import Entry

STRATEGIES: dict[str, Entry] = {
    "random": Entry(
        "netfl.selection.random:RandomSelection",
        "uniform without replacement (optionally weighted by data size); FedAvg baseline",
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
        "pow-d ranked by stale losses from last participation, no polling (cpow-d)",
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
