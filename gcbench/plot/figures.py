"""The figures, one function each (timeline, training, comparison and scheme map in their own modules).

Each returns a matplotlib Figure, or None when its data is absent.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator

from gcbench import stops
from gcbench.plot.compare import sim_vs_real
from gcbench.plot.labels import is_number, legend_below, parameter_label, point_title
from gcbench.plot.overlap import styles_for
from gcbench.plot.scheme_map import partition_shares, scheme_map
from gcbench.plot.style import COLUMN_WIDTH, variant_styles
from gcbench.plot.timeline import worker_timeline
from gcbench.plot.training import default_target, time_to_accuracy, training_curves
from gcbench.results import summarize

__all__ = [
    "default_target",
    "iteration_time_ecdf",
    "mean_vs_sweep",
    "partition_shares",
    "scheme_map",
    "sim_vs_real",
    "speedup_vs_sweep",
    "sweep_column",
    "time_to_accuracy",
    "training_curves",
    "worker_timeline",
]

HEAVY_TAIL = 10.0  # p99 / p50 above which the time axis is logarithmic
WIDE_SWEEP = 20.0  # max / min above which a sweep axis is logarithmic even if not geometric
ECDF_AXES = {  # an asynchronous row is one model update, not an iteration
    "synchronous": ("iteration time (s)", "fraction of iterations ≤ time"),
    "asynchronous": ("time between model updates (s)", "fraction of updates ≤ time"),
}


def iteration_time_ecdf(iterations: pd.DataFrame, point: int | None = None) -> Figure:
    """1. Distribution of iteration times per variant (at one sweep point: the last by default).

    An asynchronous variant's rows are single model updates, not iterations: its times get their own panel.
    """
    point = iterations["point"].max() if point is None else point
    data = iterations[iterations["point"] == point]
    asynchronous = data.groupby("variant", sort=False)["stop"].transform(lambda s: (s == stops.K_RESULTS).all())
    panels = [
        (frame, kind)
        for frame, kind in ((data[~asynchronous], "synchronous"), (data[asynchronous], "asynchronous"))
        if not frame.empty
    ]
    styles = variant_styles(iterations)
    fig = Figure(figsize=(COLUMN_WIDTH * len(panels), 2.6))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (frame, kind) in zip(axes, panels, strict=True):
        _ecdf_panel(ax, frame, styles, *ECDF_AXES[kind])
        ax.set_title(f"{kind} policies" if len(panels) > 1 else "", fontsize=7)
    fig.suptitle(point_title(data, "iteration-time distribution"), fontsize=8)
    fig.subplots_adjust(wspace=0.3)
    return fig


def _ecdf_panel(ax, data: pd.DataFrame, styles: dict[str, dict], xlabel: str, ylabel: str) -> None:
    curves = {}
    for variant, frame in data.groupby("variant", sort=False):
        times = np.sort(frame["duration"].to_numpy())
        curves[variant] = (times, np.arange(1, len(times) + 1) / len(times))
    drawn = styles_for(styles, curves)
    for variant, (times, fraction) in curves.items():
        style = {k: v for k, v in drawn[variant].items() if k not in ("marker", "markerfacecolor")}
        ax.step(times, fraction, where="post", **style)
    quantiles = data["duration"].quantile([0.5, 0.99])
    if quantiles[0.5] > 0 and quantiles[0.99] / quantiles[0.5] > HEAVY_TAIL:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    legend_below(ax)


def sweep_column(iterations: pd.DataFrame) -> str | None:
    """The first swept parameter with at least two numeric values, if any."""
    for column in (c for c in iterations.columns if "." in c):
        values = iterations[column].drop_duplicates()
        if len(values) >= 2 and all(is_number(v) for v in values):
            return column
    return None


def mean_vs_sweep(iterations: pd.DataFrame) -> Figure | None:
    """2. Mean iteration time with 95% confidence intervals against the swept parameter."""
    return _against_sweep(iterations, "mean", "mean iteration time (s)")


def speedup_vs_sweep(iterations: pd.DataFrame) -> Figure | None:
    """3. Speedup over the baseline (first) variant, named on the axis, against the swept parameter."""
    baseline = iterations["variant"].iloc[0] if len(iterations) else "baseline"
    return _against_sweep(iterations, "speedup", f"speedup over {baseline} (×)")


def _against_sweep(iterations: pd.DataFrame, value: str, label: str) -> Figure | None:
    column = sweep_column(iterations)
    if column is None:
        return None
    summary = summarize(iterations, [column])
    curves = {
        variant: (rows[column].to_numpy(float), rows[value].to_numpy(float))
        for variant, rows in ((v, r.sort_values(column)) for v, r in summary.groupby("variant", sort=False))
    }
    styles = styles_for(variant_styles(iterations), curves)
    fig = Figure(figsize=(COLUMN_WIDTH, 2.6))
    ax = fig.subplots()
    for variant, (x, y) in curves.items():
        ax.plot(x, y, markersize=3.5, **styles[variant])
        if value == "mean":
            rows = summary[summary["variant"] == variant].sort_values(column)
            ax.fill_between(x, rows["ci_low"], rows["ci_high"], color=styles[variant]["color"], alpha=0.18, lw=0)
    if value == "speedup":
        ax.axhline(1.0, color="0.4", lw=0.8, zorder=1)  # under the baseline's own line
    _sweep_axis(ax, np.sort(summary[column].drop_duplicates().to_numpy(float)))
    ax.set_xlabel(parameter_label(column))
    ax.set_ylabel(label)
    legend_below(ax)
    return fig


def _sweep_axis(ax, values: np.ndarray) -> None:
    """Logarithmic for geometric (or very wide) sweeps, with a tick at every swept value."""
    if is_geometric(values) or (values.min() > 0 and values.max() / values.min() >= WIDE_SWEEP):
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(FixedLocator(values))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([f"{v:g}" for v in values])


def is_geometric(values: np.ndarray) -> bool:
    """At least three positive values with one constant ratio between neighbours (1.5, 3, 6, 12, 24)."""
    values = np.sort(np.asarray(values, float))
    if len(values) < 3 or values.min() <= 0:
        return False
    ratios = values[1:] / values[:-1]
    return bool(ratios[0] > 1 and np.allclose(ratios, ratios[0], rtol=1e-6))
