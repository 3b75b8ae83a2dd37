"""Per-variant summary: mean iteration time with a 95% confidence interval, p50, p99, speedup, exact share,
and mean staleness (asynchronous policies, whose iterations are single model updates).

The interval comes from replications when there are several seeds (Student t
over the per-seed means); with one seed, from 10 batch means of its iterations,
so autocorrelation (persistent stragglers) widens it as it should.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

BATCHES = 10


def mean_confidence_interval(frame: pd.DataFrame) -> tuple[float, float]:
    """Half-width-free (low, high) 95% interval for the mean duration of one variant at one point."""
    by_seed = frame.groupby("seed")["duration"]
    if by_seed.ngroups >= 2:
        means = by_seed.mean().to_numpy()
    else:
        durations = frame["duration"].to_numpy()
        if len(durations) < 2 * BATCHES:
            return (np.nan, np.nan)
        means = np.array([chunk.mean() for chunk in np.array_split(durations, BATCHES)])
    centre, spread = means.mean(), means.std(ddof=1) / np.sqrt(len(means))
    half = stats.t.ppf(0.975, len(means) - 1) * spread
    return (centre - half, centre + half)


def summarize(iterations: pd.DataFrame, sweep_columns: list[str] | None = None) -> pd.DataFrame:
    """One row per (sweep point, variant), variants in their first-seen order."""
    rows = []
    order = list(dict.fromkeys(iterations["variant"]))
    for point, at_point in iterations.groupby("point", sort=True):
        baseline = None
        for variant in order:
            frame = at_point[at_point["variant"] == variant]
            if frame.empty:
                continue
            mean = frame["duration"].mean()
            baseline = mean if baseline is None else baseline
            low, high = mean_confidence_interval(frame)
            row = {"point": point, "variant": variant}
            row.update({c: frame[c].iloc[0] for c in sweep_columns or []})
            row.update(
                mean=mean,
                ci_low=low,
                ci_high=high,
                p50=frame["duration"].quantile(0.5),
                p99=frame["duration"].quantile(0.99),
                speedup=baseline / mean if mean > 0 else np.nan,
                exact_share=frame["exact"].mean(),
                staleness=frame["staleness"].mean(),
                iterations=len(frame),
            )
            rows.append(row)
    return pd.DataFrame(rows)
