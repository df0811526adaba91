"""Reading finished runs: loading run directories, metrics, plots, reports, comparisons.

The analysis side; what the engine records into lives in :mod:`netfl.recorder`.
"""
