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
}
