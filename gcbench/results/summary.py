"""Per-variant summary: mean iteration time with a 95% confidence interval, p50, p99, speedup, exact share,
and mean staleness (asynchronous policies, whose iterations are single model updates).

The interval comes from replications when there are several seeds (Student t
over the per-seed means); with one seed, from 10 batch means of its iterations
(at least 5 iterations each), so autocorrelation (persistent stragglers) widens
it as it should. Its lower end is clipped at 0: a mean time cannot be negative.
The ``ci_from`` column says which it was, or why there is none (one seed and
fewer than 50 iterations), and ``interval_note`` says it in a sentence.

The speedup is over the first variant (the ``baseline`` column names it); an
asynchronous variant's iterations are single model updates, so its speedup over
a synchronous one (or the other way round) is not reported.

The ``kind`` column keeps apart what is not comparable on time alone: ``stale``
where the used results were older than the model (asynchronous policies,
pipelined and sequential schemes: mean staleness above 0), else ``approximate``
where any decode was not exact (an approximate scheme, or a policy that gave
up waiting), else ``exact``. ``residual`` is the mean residual ||W R - T||_F of
the inexact decodes (1.0 is one partition's gradient left out of the sum).

A run that trained (real, or simulated with ``training.in_simulator``) adds the
final loss and test accuracy (each seed's last, averaged over seeds) and, given
a target accuracy, the seconds (simulated or wall-clock, as the run's clock) to
the first evaluation reaching it: the mean over the seeds that reached it, with
how many did.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from gcbench import stops

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
    iterations: pd.DataFrame,
    sweep_columns: list[str] | None = None,
    target: float | None = None,
    stopped: Collection[str] = (),
) -> pd.DataFrame:
    """One row per (sweep point, variant), variants in their first-seen order; ``target``: a test accuracy;
    ``stopped``: a real run's variants that stopped early (none is the speedup's baseline while another is not)."""
    running = RunningSummary(sweep_columns)
    running.add(iterations)
    return running.summary(target, stopped)


# what the summary reads
READ = ("seed", "iteration", "duration", "exact", "residual", "staleness", "end", "loss", "accuracy")


class RunningSummary:
    """The summary's inputs, gathered as tasks finish: per (point, variant), the iterations table's durations,
    flags and (runs that train) loss and accuracy, in the order they came; never the tables themselves.

    The quantiles need every duration, so those are kept (tens of bytes an iteration, against the workers
    table's n rows an iteration); ``summary`` then gives what ``summarize`` gives on the whole table.
    """

    def __init__(self, sweep_columns: list[str] | None = None) -> None:
        self.sweep_columns = list(sweep_columns or [])
        self.parts: dict[tuple, list[pd.DataFrame]] = {}
        self.sweep_values: dict[tuple, dict] = {}
        self.variants: dict[str, None] = {}  # first-seen order
        self.rows = 0

    def add(self, iterations: pd.DataFrame) -> None:
        """Rows of the iterations table (one task's, or any number of tasks' in the table's order)."""
        read = [c for c in READ if c in iterations.columns]
        for (point, variant), group in iterations.groupby(["point", "variant"], sort=False):
            values = {c: group[c].iloc[0] for c in self.sweep_columns}
            self._add(point, variant, values, {c: group[c].to_numpy() for c in read}, group["stop"].to_numpy())

    def add_task(self, keys: dict, columns: dict[str, np.ndarray]) -> None:
        """One task's iterations: its identity ``keys`` (one value each) and its columns, as a task writes them."""
        values = {c: keys[c] for c in self.sweep_columns}
        read = {c: columns[c] if c in columns else np.repeat(keys[c], len(columns["stop"])) for c in READ
                if c in columns or c in keys}  # fmt: skip
        self._add(keys["point"], keys["variant"], values, read, columns["stop"])

    def _add(self, point, variant: str, values: dict, read: dict[str, np.ndarray], stop: np.ndarray) -> None:
        key = (point, variant)
        if key not in self.parts:
            self.parts[key], self.sweep_values[key] = [], values
            self.variants.setdefault(variant)
        self.parts[key].append(pd.DataFrame({**read, "asynchronous": stop == stops.K_RESULTS}))
        self.rows += len(stop)

    def summary(self, target: float | None = None, stopped: Collection[str] = ()) -> pd.DataFrame:
        """The summary rows; the speedup is over each point's first variant, or its first that did not stop early
        (``stopped``: a real run's, whose times are of the iterations before the stop)."""
        rows = []
        for point in sorted({point for point, _ in self.parts}):
            frames = {}
            for variant in self.variants:
                if parts := self.parts.get((point, variant)):
                    frames[variant] = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
            if not frames:
                continue
            baseline_name = next((v for v in frames if v not in stopped), next(iter(frames)))
            baseline = frames[baseline_name]["duration"].mean()
            baseline_async = bool(frames[baseline_name]["asynchronous"].all())
            for variant, frame in frames.items():
                mean, asynchronous = frame["duration"].mean(), bool(frame["asynchronous"].all())
                speedup = baseline / mean if mean > 0 and asynchronous == baseline_async else np.nan
                row = {"point": point, "variant": variant, **self.sweep_values[(point, variant)]}
                rows.append({**row, **variant_columns(frame, mean, speedup, target), "baseline": baseline_name})
        return pd.DataFrame(rows)


def variant_columns(frame: pd.DataFrame, mean: float, speedup: float, target: float | None) -> dict:
    """The summary's columns of one variant at one point, from its iterations (``frame``)."""
    low, high = mean_confidence_interval(frame)
    row = {
        "mean": mean,
        "ci_low": low,
        "ci_high": high,
        "p50": frame["duration"].quantile(0.5),
        "p99": frame["duration"].quantile(0.99),
        "speedup": speedup,
        "exact_share": frame["exact"].mean(),
        "staleness": frame["staleness"].mean(),
        "iterations": len(frame),
        "ci_from": interval_source(frame),
        "kind": kind(frame),
        "residual": inexact_residual(frame),
    }
    if "loss" in frame.columns:
        row.update(training_columns(frame, target))
    return row


KINDS = ("exact", "approximate", "stale")


def kind(frame: pd.DataFrame) -> str:
    """exact, approximate or stale (the module's docstring says when), from one variant's iterations."""
    if bool(frame["asynchronous"].all()) or frame["staleness"].mean() > 0:  # (NaN staleness: no job decoded)
        return "stale"
    return "exact" if bool(frame["exact"].all()) else "approximate"


def variant_kinds(iterations: pd.DataFrame) -> dict[str, str]:
    """Each variant's kind over every point of an iterations table: the least exact it was anywhere (a deadline
    policy exact at mild straggling and approximate at severe is approximate)."""
    rank, kinds = {name: i for i, name in enumerate(KINDS)}, {}
    columns = [c for c in ("variant", "point", "exact", "staleness", "stop") if c in iterations.columns]
    for (variant, _), group in iterations[columns].groupby(["variant", "point"], sort=False):
        found = kind(group.assign(asynchronous=group["stop"] == stops.K_RESULTS))
        if rank[found] >= rank[kinds.get(variant, "exact")]:
            kinds[variant] = found
    return kinds


def inexact_residual(frame: pd.DataFrame) -> float:
    """The mean residual of the inexact decodes (NaN: every decode exact, or no residual recorded)."""
    if "residual" not in frame.columns:
        return np.nan
    inexact = frame.loc[~frame["exact"].astype(bool), "residual"]
    return float(inexact.mean()) if len(inexact) else np.nan


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
