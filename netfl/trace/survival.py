"""Time to target accuracy as the survival question it is: a seed that never reaches the
target is censored at the end of its run, not dropped.

A run that reaches the target accuracy at simulated time T has an *event* at T; a run
that ends (its time budget or its rounds spent) below the target is *right-censored* at
its end, ``sim_time_s``: all one knows is that its time to target is longer. A mean over
the runs that reached the target (``time_to_target_s_mean`` of ``netfl compare``) leaves
the others out and flatters a configuration that often fails: FedBuff reaching 85% in
3 of 6 seeds and FedAvg in 5 of 6 would read as a plain 300 s difference.

Per configuration, the Kaplan-Meier product-limit estimate S(t) (Kaplan & Meier 1958)
gives the fraction of seeds that reached the target by time t, 1 - S(t), using the
censored runs for as long as they were observed; its 95% confidence band is the
Hall-Wellner simultaneous band (Hall & Wellner 1980, log transform), and the time by
which half the seeds reach the target is the Kaplan-Meier median with its
Brookmeyer-Crowley interval (Brookmeyer & Crowley 1982). Configurations are compared
with the log-rank test (Mantel 1966) against the baseline, and with the log-rank test
stratified by seed, which compares runs only within a seed (the paired design: runs with
one seed share the device drop, rates and data partition, :data:`~netfl.trace.compare.CRN_NOTE`)
and so handles pairs where one or both runs are censored. The estimates are statsmodels'
``statsmodels.duration.survfunc`` (``SurvfuncRight``, ``survdiff``); only the median is
read off its curve here.

The median is the smallest time t with S(t) <= 0.5 (:func:`km_median`): where the drawn
curve 1 - S(t) first reaches 0.5, as lifelines takes it (``median_survival_time_``) and
as early versions of R's survival printed it (``print.survfit``: the smallest point where
a line at 0.5 meets the curve). statsmodels' ``quantile`` takes the first S(t) < 0.5 (a
strict rule), which moves the median to the next event when S(t) is exactly 0.5 over a
stretch (a table said 382 s for a curve that met 0.5 at 233 s); R's survival today
(``quantile.survfit``) takes the middle of such a stretch (docs/analysis.md).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

#: Two-sided level of the bands and intervals.
ALPHA = 0.05


def survival_data(table: pd.DataFrame) -> pd.DataFrame:
    """Per run (a :func:`netfl.trace.compare.per_run` table): ``configuration``, ``seed``,
    ``duration_s`` (its time to target, or its end when it did not reach it) and
    ``reached`` (True for an event, False for a censored run)."""
    times = table["time_to_target_s"].to_numpy(float)
    reached = np.isfinite(times)
    return pd.DataFrame(
        {
            "configuration": table["configuration"].to_numpy(),
            "seed": table["seed"].to_numpy(),
            "duration_s": np.where(reached, times, table["sim_time_s"].to_numpy(float)),
            "reached": reached,
        }
    )


@dataclass(frozen=True)
class ReachCurve:
    """One configuration's Kaplan-Meier curve of the fraction of seeds that reached the
    target, as a step function of simulated time."""

    configuration: str
    n: int
    reached: int
    time_s: np.ndarray
    """Times at which a seed reached the target (sorted, distinct)."""
    fraction: np.ndarray
    """1 - S(t) from each of those times on."""
    lower: np.ndarray
    upper: np.ndarray
    """The 95% Hall-Wellner band of ``fraction`` (NaN where it is undefined: where every
    seed still observed has reached the target)."""
    end_s: float
    """The last time any run of the configuration was observed."""
    median_s: float
    median_low_s: float
    median_high_s: float
    """The Kaplan-Meier median time to target, the first time at which at least half of
    the seeds had reached it (:func:`km_median`), and its 95% interval (NaN: fewer than
    half reached it; an infinite upper end: the interval does not close within the runs)."""

    @property
    def label(self) -> str:
        return f"{self.configuration} ({self.reached}/{self.n} reached)"

    def median_text(self) -> str:
        """The median and its 95% interval for a table: ``1805 [972, ∞)`` (∞: the interval
        does not close within the runs; ``-``: fewer than half reached the target)."""
        if not math.isfinite(self.median_s):
            return "-"
        upper = f"{self.median_high_s:.0f}]" if math.isfinite(self.median_high_s) else "∞)"
        return f"{self.median_s:.0f} [{self.median_low_s:.0f}, {upper}"


def reach_curve(configuration: str, duration_s: np.ndarray, reached: np.ndarray) -> ReachCurve:
    """The Kaplan-Meier curve of one configuration's runs (``reached``: events)."""
    from statsmodels.duration.survfunc import SurvfuncRight

    duration_s = np.asarray(duration_s, dtype=float)
    events = np.asarray(reached, dtype=bool)
    estimate = SurvfuncRight(duration_s, events.astype(float))
    times = np.asarray(estimate.surv_times, dtype=float)
    survival = np.asarray(estimate.surv_prob, dtype=float)
    lower = upper = np.full(len(times), np.nan)
    median = low = high = math.nan
    if len(times):
        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
            # The log transform is undefined where S(t) = 0: NaN there, as documented.
            warnings.simplefilter("ignore", RuntimeWarning)
            band_low, band_high = estimate.simultaneous_cb(alpha=ALPHA, transform="log")
            median = km_median(times, survival)
            low, high = (float(v) for v in estimate.quantile_ci(0.5, alpha=ALPHA))
        lower, upper = 1.0 - np.asarray(band_high), 1.0 - np.asarray(band_low)
    return ReachCurve(
        configuration=configuration,
        n=len(events),
        reached=int(events.sum()),
        time_s=times,
        fraction=1.0 - survival,
        lower=lower,
        upper=upper,
        end_s=float(duration_s.max()) if len(duration_s) else math.nan,
        median_s=median,
        median_low_s=low,
        median_high_s=high,
    )


#: S(t) this close to 0.5 counts as 0.5: a product of fractions such as 3/4 x 2/3 lands
#: a rounding error away from it (R's survival uses the same tolerance, sqrt(eps)).
_HALF_TOLERANCE = float(np.sqrt(np.finfo(float).eps))


def km_median(times_s: np.ndarray, survival: np.ndarray) -> float:
    """The smallest event time with S(t) <= 0.5 (NaN if S never gets there).

    >>> km_median(np.array([10.0, 20.0, 30.0, 40.0]), np.array([0.75, 0.5, 0.25, 0.0]))
    20.0
    """
    at_half = np.flatnonzero(np.asarray(survival, dtype=float) <= 0.5 + _HALF_TOLERANCE)
    return float(times_s[at_half[0]]) if len(at_half) else math.nan


def reach_curves(table: pd.DataFrame) -> list[ReachCurve]:
    """One :class:`ReachCurve` per configuration of a ``per_run`` table, in its order."""
    data = survival_data(table)
    return [
        reach_curve(str(label), group["duration_s"].to_numpy(), group["reached"].to_numpy())
        for label, group in data.groupby("configuration", sort=False)
    ]


def median_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per configuration: ``reached`` (k/n) and the Kaplan-Meier median time to target
    with its 95% interval (``time_to_target_km_median_s``, ``_low_s``, ``_high_s``)."""
    rows = {
        curve.configuration: {
            "reached": f"{curve.reached}/{curve.n}",
            "time_to_target_km_median_s": curve.median_s,
            "time_to_target_km_low_s": curve.median_low_s,
            "time_to_target_km_high_s": curve.median_high_s,
        }
        for curve in reach_curves(table)
    }
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "configuration"
    return out


def logrank(table: pd.DataFrame, baseline: str | None = None) -> pd.DataFrame:
    """Each configuration against the baseline (default: the first), censored runs kept.

    Columns: ``configuration``, ``baseline``, ``reached`` and ``baseline_reached`` (k/n),
    ``chi2`` and ``p_value`` of the log-rank test, and ``chi2_by_seed``/``p_value_by_seed``
    of the log-rank test stratified by seed (over the seeds both have). NaN where
    neither configuration reached the target (nothing to compare).
    """
    data = survival_data(table)
    labels = list(dict.fromkeys(data["configuration"]))
    if len(labels) < 2:
        return pd.DataFrame()
    base = baseline or labels[0]
    ours = data[data["configuration"] == base]
    rows = []
    for label in labels:
        if label == base:
            continue
        theirs = data[data["configuration"] == label]
        both = pd.concat([ours, theirs])
        paired = both[both["seed"].isin(set(ours["seed"]) & set(theirs["seed"]))]
        chi2, p = _survdiff(both)
        chi2_seed, p_seed = _survdiff(paired, strata=True)
        rows.append(
            {
                "configuration": label,
                "baseline": base,
                "reached": f"{int(theirs['reached'].sum())}/{len(theirs)}",
                "baseline_reached": f"{int(ours['reached'].sum())}/{len(ours)}",
                "chi2": chi2,
                "p_value": p,
                "chi2_by_seed": chi2_seed,
                "p_value_by_seed": p_seed,
            }
        )
    return pd.DataFrame(rows)


def _survdiff(data: pd.DataFrame, strata: bool = False) -> tuple[float, float]:
    from statsmodels.duration.survfunc import survdiff

    if not data["reached"].any() or data["configuration"].nunique() < 2:
        return math.nan, math.nan
    try:
        chi2, p = survdiff(
            data["duration_s"].to_numpy(float),
            data["reached"].to_numpy(float),
            data["configuration"].to_numpy(),
            strata=data["seed"].to_numpy() if strata else None,
        )
    except np.linalg.LinAlgError:  # no information (e.g. every stratum's events tied)
        return math.nan, math.nan
    return float(chi2), float(p)


def reached_fraction(table: pd.DataFrame, target: float | None = None) -> Figure:
    """Per configuration, the Kaplan-Meier fraction of seeds that reached the target
    against simulated time, with its 95% band (over :data:`~netfl.trace.drawing.MIN_BAND_SEEDS`
    seeds or more); each legend entry says "k/n reached"; a dot where the curve meets 0.5,
    at the median of the tables (:func:`km_median`); a mark at the end of a curve whose
    censored runs stop there (``table``: a :func:`netfl.trace.compare.per_run` table)."""
    from netfl.trace.drawing import MIN_BAND_SEEDS, finish, message

    curves = reach_curves(table)
    title = "Seeds that reached the target" + (f" ({target:g})" if target is not None else "")
    if not curves or not any(c.reached for c in curves):
        return message(title, "no run reached the target accuracy")
    fig = Figure(figsize=(7, 4.5 + 0.2 * len(curves)), layout="constrained")
    ax = fig.add_subplot()
    for curve in curves:
        x = np.concatenate([[0.0], curve.time_s, [curve.end_s]])
        y = np.concatenate([[0.0], curve.fraction, curve.fraction[-1:] if curve.reached else [0]])
        (line,) = ax.plot(x, y, drawstyle="steps-post", label=curve.label, gid="km_curve")
        if curve.reached and curve.n >= MIN_BAND_SEEDS:
            low = np.concatenate([[0.0], curve.lower, curve.lower[-1:]])
            high = np.concatenate([[0.0], curve.upper, curve.upper[-1:]])
            ax.fill_between(x, low, high, step="post", alpha=0.1, color=line.get_color(), lw=0)
        if curve.reached < curve.n:  # censored runs end here without reaching the target
            ax.plot([x[-1]], [y[-1]], marker="|", markersize=10, color=line.get_color())
        if math.isfinite(curve.median_s):
            ax.plot([curve.median_s], [0.5], "o", color=line.get_color(), gid="km_median")
    ax.axhline(0.5, color="0.5", lw=0.6, ls=":")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("fraction of seeds that reached it")
    band = f"95% band over {MIN_BAND_SEEDS} seeds or more"
    finish(fig, ax, f"{title}, Kaplan-Meier ({band}; dot: median)", legend=False)
    fig.legend(loc="outside lower center", fontsize="small")  # the curves fill the axes
    return fig
