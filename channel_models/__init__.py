"""Path-loss and rate models, vectorised over numpy arrays (no SimPy, no torch).

``CHANNEL_MODELS`` maps a name to ``("module:attribute", "one-line summary")``; netfl's
registry imports the target only when used.
"""

CHANNEL_MODELS: dict[str, tuple[str, str]] = {}
