"""Comparing runs: per-run metrics, per-configuration means with 95% CIs, paired differences.

Runs of one configuration differ only in their seed (see
:meth:`Runs.configuration <netfl.trace.runs.Runs.configuration>`). Means come with the
half-width of a two-sided 95% Student-t confidence interval over the seeds
(:func:`netfl.trace.metrics.mean_ci`).

Paired comparisons use common random numbers (:data:`CRN_NOTE`).
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd

from netfl.trace import metrics
from netfl.trace.run import Run
from netfl.trace.runs import Runs

CRN_NOTE = (
    "Paired comparisons use common random numbers: every component draws from its own named"
    " stream of the one scenario seed (netfl/rng.py), so two runs with the same seed that"
    " differ only in the strategy (or in any setting that does not feed the radio, device or"
    " data draws) see the same drop, rates, device draws and data partition. Differences are"
    " therefore taken per seed, and their CI is usually much narrower than the unpaired one."
)
#: Per-run metrics compared; the order of the comparison table's columns.
METRICS = (
    "final_accuracy",
    "time_to_target_s",
    "sim_time_s",
    "rounds",
    "fairness_jain",
    "staleness_mean",
    "uplink_busy_fraction",
    "rate_ul_achieved_mean_bps",
)
#: Metrics compared only where a run has them: ``loss_jain``, Jain's index of the clients'
#: losses at the last evaluation (eq. (3) of Cho et al. 2020; runs with ``learning.fairness_loss``).
OPTIONAL_METRICS = ("loss_jain",)
#: Evaluations whose accuracy is averaged beside the final one, unless told (``netfl
#: compare --last-k``): ``accuracy_last<k>`` (their mean) and ``accuracy_last<k>_sd`` (their
#: standard deviation within the run: how much the last rounds swing).
LAST_K = 5
_LAST_K_COLUMN = re.compile(r"accuracy_last\d+(_sd)?")


def last_k_columns(k: int) -> tuple[str, str]:
    """The per-run columns of the last ``k`` evaluations: their mean and standard deviation."""
    return f"accuracy_last{k}", f"accuracy_last{k}_sd"


#: Client columns that common random numbers keep identical across paired runs.
SHARED_CLIENT_COLUMNS = ("x_m", "y_m", "rate_ul_bps", "rate_dl_bps", "n_samples", "compute_sps")


class ComparisonWarning(UserWarning):
    """The runs compared differ in a way that makes the comparison doubtful."""


def common_target(runs: Runs, target: float | None) -> float | None:
    """The target accuracy to compare at: ``target``, else the runs' common scenario target."""
    if target is not None:
        return target
    targets = {r.target_accuracy() for r in runs}
    if len(targets) > 1:
        warnings.warn(
            f"the runs set different learning.target_accuracy ({sorted(map(str, targets))});"
            " time to target is left out: pass a target (--target) to compare it",
            ComparisonWarning,
            stacklevel=2,
        )
        return None
    return targets.pop() if targets else None


def check_datasets(runs: Runs) -> list[str]:
    """Warn (and return the messages) when the runs do not train on the same dataset."""
    found: dict[str, list[str]] = {}
    for run_id, run in zip(runs.ids, runs, strict=True):
        learning = run.scenario_dict.get("learning") or {}
        found.setdefault(str(learning.get("dataset", "none (timing only)")), []).append(run_id)
    messages = []
    if len(found) > 1:
        shown = "; ".join(f"{name}: {', '.join(ids[:3])}" for name, ids in found.items())
        messages.append(f"the runs use different datasets ({shown}): accuracies do not compare")
    for message in messages:
        warnings.warn(message, ComparisonWarning, stacklevel=2)
    return messages


def per_run(runs: Runs, target: float | None, last_k: int = LAST_K) -> pd.DataFrame:
    """One row per run: run id, configuration, seed, status, :data:`METRICS`, and beside
    ``final_accuracy`` the mean and standard deviation of the last ``last_k`` evaluations'
    accuracies (:func:`last_k_columns`; :func:`netfl.trace.metrics.last_evaluations`)."""
    configuration = runs.configuration()
    last_mean, last_sd = last_k_columns(last_k)
    rows = []
    for run_id, run in zip(runs.ids, runs, strict=True):
        summary = run.summary
        mean, sd = metrics.last_evaluations(run.rounds, last_k)
        rows.append(
            {
                "run": run_id,
                "configuration": configuration[run_id],
                "seed": int(run.scenario_dict.get("seed", -1)),
                "status": run.status,
                "final_accuracy": float(summary.get("final_accuracy", math.nan)),
                last_mean: mean,
                last_sd: sd,
                "time_to_target_s": (
                    math.nan if target is None else metrics.time_to_accuracy(run.rounds, target)
                ),
                "sim_time_s": float(summary.get("sim_time_s", math.nan)),
                "rounds": float(summary.get("rounds", math.nan)),
                "fairness_jain": run.fairness(),
                "staleness_mean": float(run.staleness().mean()),
                "uplink_busy_fraction": run.uplink_busy_fraction(),
                "rate_ul_achieved_mean_bps": float(run.upload_rates_bps().mean()),
                "loss_jain": _final_loss_jain(run),
            }
        )
    return pd.DataFrame(rows)


def has_client_losses(run: Run) -> bool:
    """Whether the run wrote its clients' losses (``learning.fairness_loss`` set)."""
    learning = run.scenario_dict.get("learning") or {}
    return learning.get("fairness_loss", "none") != "none"


def _final_loss_jain(run: Run) -> float:
    return float(run.loss_fairness().iloc[-1]) if has_client_losses(run) else math.nan


def compared_metrics(table: pd.DataFrame) -> tuple[str, ...]:
    """:data:`METRICS` with the last evaluations' columns beside ``final_accuracy``, plus
    the optional ones that some run of ``table`` has."""
    present = [
        m for m in OPTIONAL_METRICS if m in table and np.isfinite(table[m].to_numpy(float)).any()
    ]
    last = [c for c in table.columns if _LAST_K_COLUMN.fullmatch(str(c))]
    return (METRICS[0], *last, *METRICS[1:], *present)


def by_configuration(table: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per configuration: ``n``, and for each metric ``<m>_mean`` and ``<m>_ci95`` (half-width).

    ``reached`` counts the runs that reached the target; the time-to-target mean and CI are
    over those runs only. ``time_to_target_km_median_s`` (with its 95% interval
    ``_km_low_s``, ``_km_high_s``) counts the others as censored at their end: the
    Kaplan-Meier median (:mod:`netfl.trace.survival`: the first time at least half had
    reached it), NaN when fewer than half reached.
    """
    rows = {}
    for label, group in table.groupby("configuration", sort=False):
        row: dict[str, float | int | str] = {"n": len(group)}
        for metric in compared_metrics(table):
            mean, half = metrics.mean_ci(group[metric].to_numpy(float), confidence)
            row[f"{metric}_mean"], row[f"{metric}_ci95"] = mean, half
        reached = int(np.isfinite(group["time_to_target_s"]).sum())
        row["reached"] = f"{reached}/{len(group)}"
        rows[label] = row
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "configuration"
    if table["time_to_target_s"].notna().any():
        from netfl.trace.survival import median_table

        out = out.join(median_table(table).drop(columns="reached"))
    return out


def _shares_draws(runs: Runs, a: str, b: str) -> bool:
    columns = [c for c in SHARED_CLIENT_COLUMNS if c in runs[0].clients.columns]
    left = runs[runs.ids.index(a)].clients[columns].reset_index(drop=True)
    right = runs[runs.ids.index(b)].clients[columns].reset_index(drop=True)
    return left.shape == right.shape and left.equals(right)


def paired(runs: Runs, table: pd.DataFrame, baseline: str | None = None) -> pd.DataFrame:
    """Each configuration minus the baseline (default: the first), paired by seed.

    Columns: ``configuration``, ``metric``, ``n_pairs``, ``mean_diff``, ``ci95``
    (half-width over the per-seed differences) and ``common_random_numbers`` (whether every
    pair's clients share positions, rates, data sizes and compute speeds).
    """
    done = table[table["status"] == "completed"]
    labels = list(dict.fromkeys(done["configuration"]))
    if len(labels) < 2:
        return pd.DataFrame()
    base = baseline or labels[0]
    base_runs = done[done["configuration"] == base].set_index("seed")
    rows = []
    for label in labels:
        if label == base:
            continue
        other = done[done["configuration"] == label].set_index("seed")
        seeds = sorted(set(base_runs.index) & set(other.index))
        shared = all(
            _shares_draws(runs, str(base_runs.at[s, "run"]), str(other.at[s, "run"])) for s in seeds
        )
        for metric in compared_metrics(table):
            diff = other.loc[seeds, metric].to_numpy(float) - base_runs.loc[seeds, metric].to_numpy(
                float
            )
            mean, half = metrics.mean_ci(diff)
            rows.append(
                {
                    "configuration": label,
                    "baseline": base,
                    "metric": metric,
                    "n_pairs": int(np.isfinite(diff).sum()),
                    "mean_diff": mean,
                    "ci95": half,
                    "common_random_numbers": bool(seeds) and shared,
                }
            )
    return pd.DataFrame(rows)
