"""Fingerprints of a run's tables that hold on every x86-64 CPU (issue 32, item 4).

numpy's SIMD loops (with or without AVX-512) and the BLAS and oneDNN kernels that torch
and numpy pick for the CPU round differently in the last bits, so a hash of float outputs
pins the CPU it was taken on. A fingerprint has two parts:

- ``exact``: sha256 of everything that is not a float (integers, strings, event kinds,
  the rows' order, lists of client ids) and of where the floats are NaN;
- ``sums``: per float column, three weighted sums sum_i w_i x_i over its finite values
  (weights 1 + ((i + 1) a mod 2^16) / 2^16 from the row number i by integer arithmetic,
  products in IEEE float64, the sum exactly rounded by :func:`math.fsum`), compared with
  a tolerance: a run matches if each sum is within sum_i w_i (atol + rtol |x_i|) of the
  recorded one, which every run whose values are each within atol + rtol |x| of the
  recorded ones does. A change of one value by more than that whole budget, or any change
  of an order, a count or an id, is caught.

The tolerances are stated per column (:data:`TOLERANCES`): simulated times and rates to
rtol 1e-11 (about 10^5 float64 rounding units, and what 1-ulp differences of path loss or
SINR move them by stays far below it); what real training gives (accuracy, losses) to
1000 times what float32 kernels of another CPU moved it by in the scenarios of
tests/default_results.py (1e-9 to 6e-9 relative with torch's, MKL's, oneDNN's, numpy's and
OpenBLAS's kernels forced to SSE4 on an AVX2 machine): loss rtol 1e-5, and accuracy
atol 0.01 (three test images of digits' 360, where a float decides a near tie).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

#: column -> (atol, rtol); every other float column: DEFAULT
DEFAULT = (0.0, 1e-11)
TOLERANCES: dict[str, tuple[float, float]] = {
    "accuracy": (0.01, 0.0),
    "loss": (1e-7, 1e-5),
}
#: multipliers of the three weightings (odd, so (i + 1) a mod 2^16 runs through all residues)
_MULTIPLIERS = (40503, 25693, 11317)


def _weights(n: int, multiplier: int) -> np.ndarray:
    rows = np.arange(1, n + 1, dtype=np.int64)
    return 1.0 + ((rows * multiplier) % 65536) / 65536.0


def fingerprint(frame: pd.DataFrame) -> dict[str, Any]:
    """The fingerprint of a table (see the module docstring)."""
    sha = hashlib.sha256()
    sums: dict[str, list[float]] = {}
    for name in frame.columns:
        column = frame[name]
        sha.update(f"{name}:{column.dtype};".encode())
        if pd.api.types.is_float_dtype(column.dtype):
            values = column.to_numpy(dtype=float)
            # 0 finite, 1 NaN, 2 +inf, 3 -inf (NaN's sign bit is not reproducible)
            kinds = np.isnan(values) + 2 * np.isposinf(values) + 3 * np.isneginf(values)
            sha.update(kinds.astype(np.int8).tobytes())
            kept = values[np.isfinite(values)]
            sums[name] = [math.fsum(_weights(len(kept), a) * kept) for a in _MULTIPLIERS]
        else:
            for value in column.tolist():
                sha.update(_text(value).encode() + b",")
    return {"exact": sha.hexdigest(), "sums": sums}


def _text(value: Any) -> str:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, float):
        raise TypeError(f"a float in a non-float column ({value}): make it a float column")
    if isinstance(value, list | tuple):
        return json.dumps([_text(v) for v in value])
    return str(value)


def mismatches(
    frame: pd.DataFrame, recorded: Mapping[str, Any], tolerances: Mapping[str, Any] | None = None
) -> list[str]:
    """What of ``frame`` differs from its ``recorded`` fingerprint beyond the tolerances
    (an empty list: it matches)."""
    found = fingerprint(frame)
    problems = []
    if found["exact"] != recorded["exact"]:
        problems.append("integers, strings, order or NaN positions differ")
    if set(found["sums"]) != set(recorded["sums"]):
        problems.append(f"float columns {sorted(found['sums'])} != {sorted(recorded['sums'])}")
        return problems
    limits = {**TOLERANCES, **(tolerances or {})}
    for name, sums in found["sums"].items():
        atol, rtol = limits.get(name, DEFAULT)
        values = frame[name].to_numpy(dtype=float)
        kept = np.abs(values[np.isfinite(values)])
        for a, now, then in zip(_MULTIPLIERS, sums, recorded["sums"][name], strict=True):
            budget = math.fsum(_weights(len(kept), a) * (atol + rtol * kept))
            if not abs(now - then) <= budget:
                problems.append(f"{name}: weighted sum {now!r} != {then!r} (+- {budget:.3g})")
    return problems
