"""Per-variant summary: mean iteration time with a 95% confidence interval, p50, p99, speedup, exact share,
and mean staleness (asynchronous policies, whose iterations are single model updates).

The interval comes from replications when there are several seeds (Student t
over the per-seed means); with one seed, from 10 batch means of its iterations
(at least 5 iterations each), so autocorrelation (persistent stragglers) widens
it as it should. Its lower end is clipped at 0: a mean time cannot be negative.
The ``ci_from`` column says which it was, or why there is none (one seed and
fewer than 50 iterations), and ``interval_note`` says it in a sentence.

The speedup is over the first variant; an asynchronous variant's iterations
are single model updates, so its speedup over a synchronous one (or the other
way round) is not reported.

A run that trained (real, or simulated with ``training.in_simulator``) adds the
final loss and test accuracy (each seed's last, averaged over seeds) and, given
a target accuracy, the seconds (simulated or wall-clock, as the run's clock) to
the first evaluation reaching it: the mean over the seeds that reached it, with
how many did.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

BATCHES = 10
MIN_BATCH = 5  # iterations per batch mean, at least


def mean_confidence_interval(frame: pd.DataFrame) -> tuple[float, float]:
    """Half-width-free (low, high) 95% interval for the mean duration of one variant at one point."""
    by_seed = frame.groupby("seed")["duration"]
    if by_seed.ngroups >= 2:
        means = by_seed.mean().to_numpy()
    else:
        durations = frame["duration"].to_numpy()
        if len(durations) < MIN_BATCH * BATCHES:
            return (np.nan, np.nan)
        means = np.array([chunk.mean() for chunk in np.array_split(durations, BATCHES)])
    centre, spread = means.mean(), means.std(ddof=1) / np.sqrt(len(means))
    from scipy.special import stdtrit  # stats.t.ppf's own kernel: importing scipy.stats took 0.9 s of start-up

    half = stdtrit(len(means) - 1, 0.975) * spread
    return (max(centre - half, 0.0), centre + half)


def interval_source(frame: pd.DataFrame) -> str:
    """Where the interval of ``mean_confidence_interval`` comes from, or why there is none."""
    seeds = frame["seed"].nunique()
    if seeds >= 2:
        return f"{seeds} seeds"
    if len(frame) >= MIN_BATCH * BATCHES:
        return f"{BATCHES} batch means"
    return f"n/a: 1 seed, {len(frame)} iterations"


def interval_note(summary: pd.DataFrame) -> str | None:
    """One sentence on where the 95% intervals come from, and why some are n/a."""
    if summary.empty:
        return None
    sources = list(dict.fromkeys(summary["ci_from"]))
    missing = [s for s in sources if s.startswith("n/a")]
    if missing:
        return (
            f"95% CI n/a: one seed and fewer than {MIN_BATCH * BATCHES} iterations ({BATCHES} batch means of "
            f"{MIN_BATCH} or more); give --seeds 0,1,2 or more iterations."
        )
    return f"95% CI over {' / '.join(sources)} (the mean of each as one sample)."


def summarize(
    iterations: pd.DataFrame, sweep_columns: list[str] | None = None, target: float | None = None
) -> pd.DataFrame:
    """One row per (sweep point, variant), variants in their first-seen order; ``target``: a test accuracy."""
    rows = []
    order = list(dict.fromkeys(iterations["variant"]))
    for point, at_point in iterations.groupby("point", sort=True):
        baseline, baseline_async = None, None
        for variant in order:
            frame = at_point[at_point["variant"] == variant]
            if frame.empty:
                continue
            mean = frame["duration"].mean()
            asynchronous = bool((frame["stop"] == "k_results").all())
            if baseline is None:
                baseline, baseline_async = mean, asynchronous
            comparable = asynchronous == baseline_async
            low, high = mean_confidence_interval(frame)
            row = {"point": point, "variant": variant}
            row.update({c: frame[c].iloc[0] for c in sweep_columns or []})
            row.update(
                mean=mean,
                ci_low=low,
                ci_high=high,
                p50=frame["duration"].quantile(0.5),
                p99=frame["duration"].quantile(0.99),
                speedup=baseline / mean if mean > 0 and comparable else np.nan,
                exact_share=frame["exact"].mean(),
                staleness=frame["staleness"].mean(),
                iterations=len(frame),
                ci_from=interval_source(frame),
            )
            if "loss" in frame.columns:
                row.update(training_columns(frame, target))
            rows.append(row)
    return pd.DataFrame(rows)


def training_columns(frame: pd.DataFrame, target: float | None) -> dict[str, float | int]:
    """Final loss and accuracy of one variant at one point, and the time to ``target`` when one is given."""
    by_seed = frame.sort_values("iteration").groupby("seed")
    columns: dict[str, float | int] = {
        "final_loss": by_seed["loss"].last().mean(),  # (groupby's last skips NaN: each seed's last loss)
        "final_accuracy": by_seed["accuracy"].last().mean(),
    }
    if target is not None:
        reached = frame[frame["accuracy"] >= target].groupby("seed")["end"].min()
        columns.update(
            target_accuracy=target,
            time_to_target=reached.mean() if len(reached) else np.nan,
            target_reached=len(reached),
            seeds=frame["seed"].nunique(),
        )
    return columns
