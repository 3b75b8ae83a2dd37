"""The figures, one function each. Each returns a matplotlib Figure, or None when its data is absent."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from gcbench.plot.style import COLUMN_WIDTH, FULL_WIDTH, scheme_colour, variant_styles
from gcbench.results import summarize

HEAVY_TAIL = 10.0  # p99 / p50 above which the time axis is logarithmic


def _legend(ax, **kwargs) -> None:
    ax.legend(frameon=False, **kwargs)


def _legend_below(ax, fontsize: int = 6) -> None:
    """Legend under the axes, in two columns, so it never hides a curve."""
    ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, fontsize=fontsize)


def iteration_time_ecdf(iterations: pd.DataFrame, point: int | None = None) -> Figure:
    """1. Distribution of iteration times per variant (at one sweep point: the last by default)."""
    point = iterations["point"].max() if point is None else point
    data = iterations[iterations["point"] == point]
    styles = variant_styles(iterations)
    fig = Figure(figsize=(COLUMN_WIDTH, 2.6))
    ax = fig.subplots()
    for variant, frame in data.groupby("variant", sort=False):
        times = np.sort(frame["duration"].to_numpy())
        style = {k: v for k, v in styles[variant].items() if k != "marker"}
        ax.step(times, np.arange(1, len(times) + 1) / len(times), where="post", **style)
    quantiles = data["duration"].quantile([0.5, 0.99])
    if quantiles[0.5] > 0 and quantiles[0.99] / quantiles[0.5] > HEAVY_TAIL:
        ax.set_xscale("log")
    ax.set_xlabel("iteration time (s)")
    ax.set_ylabel("fraction of iterations ≤ time")
    ax.set_title(_point_title(data, "iteration-time distribution"), fontsize=8)
    _legend_below(ax)
    return fig


def _point_title(data: pd.DataFrame, what: str) -> str:
    sweep = [c for c in data.columns if "." in c]
    values = ", ".join(
        f"{c} = {data[c].iloc[0]:g}" if _is_number(data[c].iloc[0]) else f"{c} = {data[c].iloc[0]}" for c in sweep
    )
    return f"{what}{f' ({values})' if values else ''}"


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating))


def sweep_column(iterations: pd.DataFrame) -> str | None:
    """The first swept parameter with at least two numeric values, if any."""
    for column in (c for c in iterations.columns if "." in c):
        values = iterations[column].drop_duplicates()
        if len(values) >= 2 and all(_is_number(v) for v in values):
            return column
    return None


def mean_vs_sweep(iterations: pd.DataFrame) -> Figure | None:
    """2. Mean iteration time with 95% confidence intervals against the swept parameter."""
    return _against_sweep(iterations, "mean", "mean iteration time (s)")


def speedup_vs_sweep(iterations: pd.DataFrame) -> Figure | None:
    """3. Speedup over the baseline (first) variant against the swept parameter."""
    return _against_sweep(iterations, "speedup", "speedup over baseline (×)")


def _against_sweep(iterations: pd.DataFrame, value: str, label: str) -> Figure | None:
    column = sweep_column(iterations)
    if column is None:
        return None
    summary = summarize(iterations, [column])
    styles = variant_styles(iterations)
    fig = Figure(figsize=(COLUMN_WIDTH, 2.6))
    ax = fig.subplots()
    for variant, rows in summary.groupby("variant", sort=False):
        rows = rows.sort_values(column)
        x, y = rows[column].to_numpy(float), rows[value].to_numpy(float)
        ax.plot(x, y, markersize=3.5, **styles[variant])
        if value == "mean":
            ax.fill_between(x, rows["ci_low"], rows["ci_high"], color=styles[variant]["color"], alpha=0.18, lw=0)
    if value == "speedup":
        ax.axhline(1.0, color="0.4", lw=0.8)
    if summary[column].min() > 0 and summary[column].max() / summary[column].min() >= 20:
        ax.set_xscale("log")
    ax.set_xlabel(parameter_label(column))
    ax.set_ylabel(label)
    _legend_below(ax)
    return fig


UNITS = {"slowdown": "×", "delay": "s", "latency": "s", "bandwidth": "bytes/s", "rate": "1/s", "downtime": "s"}


def parameter_label(column: str) -> str:
    """A swept path with its unit, e.g. 'straggling.delay (s)'."""
    unit = UNITS.get(column.rsplit(".", 1)[-1])
    return f"{column} ({unit})" if unit else column


def default_target(iterations: pd.DataFrame) -> float | None:
    """90% of the best test accuracy any variant reached (None without accuracy)."""
    if "accuracy" not in iterations.columns or iterations["accuracy"].isna().all():
        return None
    return round(0.9 * float(iterations["accuracy"].max()), 3)


def training_curves(iterations: pd.DataFrame, target: float | None = None, mode: str = "real") -> Figure | None:
    """4. Training loss and test accuracy against time (wall-clock or simulated) and against iterations."""
    metrics = [c for c in ("loss", "accuracy") if c in iterations.columns and iterations[c].notna().any()]
    if not metrics:
        return None
    styles = variant_styles(iterations)
    fig = Figure(figsize=(FULL_WIDTH, 2.4 * len(metrics)), layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(metrics), 2, squeeze=False))
    clock = "wall-clock time (s)" if mode == "real" else "simulated time (s)"
    for row, metric in enumerate(metrics):
        for variant, frame in iterations[iterations["seed"] == iterations["seed"].min()].groupby("variant", sort=False):
            frame = frame[frame[metric].notna()]
            style = dict(styles[variant])
            if metric == "loss":  # every iteration: a line; accuracy is sparse (every eval_every): markers too
                style.pop("marker", None)
            else:
                style["markersize"] = 3
            axes[row, 0].plot(frame["end"], frame[metric], **style)
            axes[row, 1].plot(frame["iteration"], frame[metric], **style)
        name = "training loss" if metric == "loss" else "test accuracy"
        axes[row, 0].set_ylabel(name)
        axes[row, 0].set_xlabel(clock)
        axes[row, 1].set_xlabel("iteration")
        if metric == "accuracy" and target is not None:
            for ax in axes[row]:
                ax.axhline(target, color="0.4", lw=0.8, ls=":")
                ax.text(0.99, target, f"target {target:.1%}", transform=ax.get_yaxis_transform(), ha="right",
                        va="bottom", fontsize=6, color="0.4")  # fmt: skip
    _legend(axes[0, 1], fontsize=6)
    return fig


def time_to_accuracy(iterations: pd.DataFrame, target: float) -> pd.DataFrame:
    """Seconds until each variant's test accuracy first reaches the target (NaN: never)."""
    rows = []
    for variant, frame in iterations.groupby("variant", sort=False):
        reached = frame[frame.get("accuracy", pd.Series(dtype=float)) >= target]
        rows.append({"variant": variant, "seconds": reached["end"].min() if len(reached) else np.nan})
    return pd.DataFrame(rows)


def worker_timeline(iterations: pd.DataFrame, workers: pd.DataFrame | None, window: int = 6) -> Figure | None:
    """5. Per worker, for a window of iterations: compute, injected delay, arrival, used or not, crashed."""
    if workers is None or workers.empty:
        return None
    point, seed = iterations["point"].max(), iterations["seed"].min()
    at = iterations[(iterations["point"] == point) & (iterations["seed"] == seed)]
    means = at.groupby("variant", sort=False)["duration"].mean()
    chosen = list(dict.fromkeys([means.index[0], means.idxmin()]))
    fig = Figure(figsize=(FULL_WIDTH, 1.2 + 0.22 * workers["worker"].nunique() * len(chosen)))
    axes = fig.subplots(len(chosen), 1, squeeze=False, sharex=True)[:, 0]
    for ax, variant in zip(axes, chosen, strict=True):
        _timeline(ax, at, workers, variant, point, seed, window)
    axes[-1].set_xlabel(f"time since iteration 0 began (s); iterations 0 to {window - 1}")
    handles = [
        Patch(color="0.35", label="compute"),
        Patch(facecolor="#E69F00", label="injected delay"),
        Line2D([], [], marker="|", color="k", ls="", label="message arrives"),
        Patch(color="0.35", alpha=0.3, label="not used"),
        Line2D([], [], marker="x", color="#D55E00", lw=0.8, label="crashed or down"),
        Line2D([], [], color="0.3", lw=0.6, ls="--", label="iteration ends"),
    ]
    axes[0].legend(handles=handles, ncol=6, frameon=False, loc="lower left", bbox_to_anchor=(0, 1.02), fontsize=6)
    return fig


def _timeline(ax, at, workers, variant, point, seed, window) -> None:
    rows = workers[(workers["variant"] == variant) & (workers["point"] == point) & (workers["seed"] == seed)]
    rows = rows[rows["iteration"] < window]
    mine = at[(at["variant"] == variant) & (at["iteration"] < window)]
    origin, ends, starts = mine["start"].min(), mine.set_index("iteration")["end"], mine.set_index("iteration")["start"]
    for row in rows.itertuples():
        stop = ends[row.iteration]  # unused work is abandoned when the master moves on
        ready = row.compute_end if row.used else min(row.compute_end, stop)
        computed = min(row.compute_end - row.injected_delay, ready)
        alpha = 1.0 if row.used else 0.3
        if np.isfinite(computed):
            ax.barh(
                row.worker,
                computed - row.compute_start,
                left=row.compute_start - origin,
                height=0.6,
                color="0.35",
                alpha=alpha,
            )
        if np.isfinite(ready) and ready > computed:
            ax.barh(row.worker, ready - computed, left=computed - origin, height=0.6, color="#E69F00", alpha=alpha)
        if np.isfinite(row.arrival) and row.arrival <= stop:
            ax.plot(row.arrival - origin, row.worker, marker="|", color="k", ms=6, alpha=alpha)
        if row.failed:  # down from the iteration's start until its redo begins (or the iteration ends)
            back = row.compute_start if np.isfinite(row.compute_start) else stop
            ax.plot([starts[row.iteration] - origin, back - origin], [row.worker] * 2, color="#D55E00", lw=0.8)
            ax.plot(starts[row.iteration] - origin, row.worker, marker="x", color="#D55E00", ms=5)
    colour = scheme_colour(str(mine["scheme"].iloc[0]))
    for end in ends:
        ax.axvline(end - origin, color=colour, lw=0.6, ls="--")
    ax.set_ylabel(f"worker\n{variant}", fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, None)


def sim_vs_real(sim: pd.DataFrame, real: pd.DataFrame) -> Figure | None:
    """6. Simulated against measured iteration times: ECDFs overlaid, and a parity plot of means."""
    common = [v for v in sim["variant"].drop_duplicates() if v in set(real["variant"])]
    if not common:
        return None
    styles = variant_styles(pd.concat([sim, real]))
    fig = Figure(figsize=(FULL_WIDTH, 2.8))
    left, right = fig.subplots(1, 2)
    means = []
    for variant in common:
        for frame, dash, mode in ((sim, "-", "simulated"), (real, "--", "measured")):
            times = np.sort(frame[frame["variant"] == variant]["duration"].to_numpy())
            colour = styles[variant]["color"]
            left.step(
                times,
                np.arange(1, len(times) + 1) / len(times),
                where="post",
                color=colour,
                ls=dash,
                marker=styles[variant].get("marker"),  # tells apart variants of one scheme
                markevery=max(1, len(times) // 6),
                markersize=3,
                label=f"{styles[variant]['label']} ({mode})",
            )
        means.append(
            (
                variant,
                sim[sim["variant"] == variant]["duration"].mean(),
                real[real["variant"] == variant]["duration"].mean(),
            )
        )
    left.set_xlabel("iteration time (s)")
    left.set_ylabel("fraction of iterations ≤ time")
    _legend(left, fontsize=5)
    for variant, x, y in means:
        right.plot(x, y, ls="", markersize=5, **{k: v for k, v in styles[variant].items() if k != "linestyle"})
    top = max(max(x, y) for _, x, y in means) * 1.1
    right.plot([0, top], [0, top], color="0.4", lw=0.8, label="simulated = measured")
    right.set_xlim(0, top)
    right.set_ylim(0, top)
    right.set_xlabel("simulated mean iteration time (s)")
    right.set_ylabel("measured mean iteration time (s)")
    _legend(right, fontsize=6)
    return fig


def scheme_map(iterations: pd.DataFrame, workers: pd.DataFrame | None) -> Figure:
    """7. Computation load and upload per message against straggler tolerance, per variant."""
    variants = iterations.drop_duplicates("variant")[["variant", "scheme", "s", "m"]].reset_index(drop=True)
    loads = workers.groupby("variant")["partitions"].max() if workers is not None else pd.Series(dtype=float)
    variants["load"] = variants["variant"].map(loads).astype(float)
    variants["upload"] = 1.0 / variants["m"]
    fig = Figure(figsize=(FULL_WIDTH, 2.4))
    axes = fig.subplots(1, 2)
    styles = variant_styles(iterations)
    for ax, value, label in (
        (axes[0], "load", "load (partitions per worker)"),
        (axes[1], "upload", "upload (gradients per message)"),
    ):
        for _, group in variants.groupby(["s", value], sort=False, dropna=False):
            # variants with the same properties sit side by side instead of on top of each other
            offsets = (np.arange(len(group)) - (len(group) - 1) / 2) * 0.09
            for offset, row in zip(offsets, group.itertuples(), strict=True):
                style = styles[row.variant]
                ax.plot(
                    row.s + offset,
                    getattr(row, value),
                    ls="",
                    marker=style["marker"],
                    color=style["color"],
                    ms=7,
                    label=style["label"],
                )
        ax.set_xlabel("stragglers tolerated, s")
        ax.set_ylabel(label)
        ax.set_xticks(sorted(variants["s"].unique()))
    axes[1].set_ylim(0, 1.1)
    fig.subplots_adjust(wspace=0.4)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3, fontsize=6)
    return fig
