"""The names of the per-candidate features strategies see in ``SelectionContext.features``.

Defined once here (a leaf module: the radio, the devices, the server and the strategies all
import it), documented once (:data:`DESCRIPTIONS`), and rendered into ``docs/features.md`` by
``python -m netfl.features > docs/features.md`` (tests/test_docs.py checks it is current).
Every array is aligned with ``ctx.candidates``.
"""

from __future__ import annotations

from enum import StrEnum


class Feature(StrEnum):
    """A key of ``SelectionContext.features`` (a ``str``, so ``features["mu"]`` works too)."""

    MU = "mu"
    COLD_START = "cold_start"
    BANDWIDTH_HZ = "bandwidth_hz"
    EXPECTED_EXCHANGE_TIME_S = "expected_exchange_time_s"
    CONTEXT = "context"
    LOSS = "loss"
    UPDATE_VECTOR = "update_vector"
    UPDATE_SCALE = "update_scale"
    POLLED = "polled"
    SPEED_MPS = "speed_mps"
    SERVING_CELL = "serving_cell"
    HANDOVERS = "handovers"


#: Feature -> (who reports it and when, what it is).
DESCRIPTIONS: dict[Feature, tuple[str, str]] = {
    Feature.MU: (
        "every round (resource request)",
        "the device's available CPU ratio mu_t / (1 + N_t) this round (RBCS-F's context"
        " 1/mu, Huang et al. 2021 Sec. 4.4.2)",
    ),
    Feature.COLD_START: (
        "every round",
        "1.0 if the client was not selected in the previous round, else 0.0 (RBCS-F's s)",
    ),
    Feature.BANDWIDTH_HZ: (
        "every round",
        "the uplink bandwidth the client gets alone: a group link's allocated B_{t,n},"
        " the LTE cell's RB cap x 180 kHz; NaN on the fixed-rate radio",
    ),
    Feature.EXPECTED_EXCHANGE_TIME_S: (
        "with fl.oracle_exchange_time",
        "oracle: the client's expected download + update + upload time this round, alone",
    ),
    Feature.CONTEXT: (
        "with a strategy that requires data_context (nccb, k_linucb)",
        "the client's privacy-preserving context vector (NCCB's SimHash, Cao et al. 2022"
        " eqs. 5-7), one row per candidate",
    ),
    Feature.LOSS: (
        "after a poll_loss poll",
        "the polled client's loss on its data under the current model (pow-d); NaN where"
        " not polled or not answered",
    ),
    Feature.UPDATE_VECTOR: (
        "after an update_vector poll",
        "the polled client's flattened local update w_local - w_global, one row per"
        " candidate (GPFL's initial round); NaN rows where not answered",
    ),
    Feature.UPDATE_SCALE: (
        "after an update_vector poll",
        "lr x local SGD steps behind each update_vector row",
    ),
    Feature.POLLED: ("after any poll", "1.0 for the candidates that answered the poll"),
    Feature.SPEED_MPS: (
        "every round, when devices move (devices.groups.N.mobility)",
        "the device's speed at the resource request, m/s (0 while pausing; static: 0)",
    ),
    Feature.SERVING_CELL: (
        "every round, when devices move",
        "the device's serving cell at the resource request (changes at handovers)",
    ),
    Feature.HANDOVERS: (
        "every round, when devices move",
        "handovers the device made since the run began (its serving-cell changes; the"
        " difference between two reports is the changes in between)",
    ),
}


def markdown() -> str:
    """``docs/features.md``: one row per feature."""
    rows = [
        "# Features strategies see",
        "",
        "`SelectionContext.features` maps each name below to an array aligned with",
        "`ctx.candidates`. The names are `netfl.features.Feature` (a `str` enum); this page is",
        "generated from `netfl/features.py` (`python -m netfl.features > docs/features.md`).",
        "",
        "| feature | reported | meaning |",
        "|---|---|---|",
    ]
    for feature in Feature:
        when, what = DESCRIPTIONS[feature]
        rows.append(f"| `{feature.value}` | {when} | {what} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(markdown(), end="")
