"""Parameter sweeps: a base scenario x overrides x seeds, run locally or on Ray.

``load_sweep(path)`` reads and validates a sweep file (:mod:`netfl.sweep.spec`);
``run_sweep(sweep, out)`` runs it into a sweep directory (:mod:`netfl.recorder.sweep_index`),
skipping runs already completed there.
"""

from netfl.sweep.runner import SweepResult, run_sweep
from netfl.sweep.spec import Sweep, SweepRun, load_sweep

__all__ = ["Sweep", "SweepResult", "SweepRun", "load_sweep", "run_sweep"]
