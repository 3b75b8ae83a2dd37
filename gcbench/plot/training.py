"""Training figure and time to accuracy: loss and test accuracy (in percent) against time and iterations."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from gcbench.plot.overlap import styles_for
from gcbench.plot.style import FULL_WIDTH, variant_styles

TARGET_SHARE = 0.9  # the default target: this share of the best accuracy any variant reached


def default_target(iterations: pd.DataFrame) -> float | None:
    """90% of the best test accuracy any variant reached (None without accuracy)."""
    if "accuracy" not in iterations.columns or iterations["accuracy"].isna().all():
        return None
    return round(TARGET_SHARE * float(iterations["accuracy"].max()), 3)


def run_target(iterations: pd.DataFrame, metadata: dict, target: float | None = None) -> float | None:
    """The target accuracy to mark: the one asked for, else the scenario's ``training.target_accuracy`` (as run.json
    has the scenario), else ``default_target``."""
    if target is not None:
        return target
    training = metadata.get("scenario", {}).get("training")
    given = training.get("target_accuracy") if isinstance(training, dict) else None
    if isinstance(given, int | float) and not isinstance(given, bool) and 0 < given <= 1:
        return float(given)
    return default_target(iterations)


def last_point(iterations: pd.DataFrame) -> pd.DataFrame:
    """The rows of the last sweep point (all of them without a sweep): one curve per variant."""
    if "point" not in iterations.columns:
        return iterations
    return iterations[iterations["point"] == iterations["point"].max()]


def training_curves(iterations: pd.DataFrame, target: float | None = None, mode: str = "real") -> Figure | None:
    """4. Training loss and test accuracy against time (wall-clock or simulated) and against iterations (the first
    seed, at the last sweep point)."""
    metrics = [c for c in ("loss", "accuracy") if c in iterations.columns and iterations[c].notna().any()]
    if not metrics:
        return None
    iterations = last_point(iterations)
    first_seed = iterations[iterations["seed"] == iterations["seed"].min()]
    fig = Figure(figsize=(FULL_WIDTH, 0.5 + 2.4 * len(metrics)), layout="constrained")
    axes = fig.subplots(len(metrics), 2, squeeze=False)
    clock = "wall-clock time (s)" if mode == "real" else "simulated time (s)"
    for row, metric in zip(axes, metrics, strict=True):
        _metric_row(row, first_seed, metric, variant_styles(iterations))
        row[0].set_xlabel(clock)
        row[1].set_xlabel("iteration")
        if metric == "accuracy" and target is not None:
            _target_line(row, target, reached=bool((first_seed["accuracy"] >= target).any()))
    # the last row's lines: with accuracy drawn they carry the markers that tell apart variants of one colour
    handles, labels = axes[-1, 1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 3), frameon=False, fontsize=6)
    return fig


def _metric_row(row, data: pd.DataFrame, metric: str, styles: dict[str, dict]) -> None:
    """One metric against time (left) and iterations (right); curves equal per iteration are drawn dashed."""
    frames = {variant: frame[frame[metric].notna()] for variant, frame in data.groupby("variant", sort=False)}
    curves = {variant: (frame["iteration"].to_numpy(), frame[metric].to_numpy()) for variant, frame in frames.items()}
    drawn = styles_for(styles, curves, "same curve per iteration as {}")
    for variant, frame in frames.items():
        style = dict(drawn[variant])
        if metric == "loss":  # every iteration: a line; accuracy is sparse (every eval_every): markers too
            style.pop("marker", None)
        else:
            style["markersize"] = 3
        row[0].plot(frame["end"], frame[metric], **style)
        row[1].plot(frame["iteration"], frame[metric], **style)
    row[0].set_ylabel("training loss" if metric == "loss" else "test accuracy")
    if metric == "accuracy":
        for ax in row:
            ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=None))  # decimals from the range


def _target_line(row, target: float, reached: bool) -> None:
    text = f"target {target:.1%}" + ("" if reached else " (not reached)")
    for ax in row:
        ax.axhline(target, color="0.4", lw=0.8, ls=":")
        ax.text(0.99, target, text, transform=ax.get_yaxis_transform(), ha="right", va="bottom", fontsize=6,
                color="0.4")  # fmt: skip


def time_to_accuracy(iterations: pd.DataFrame, target: float) -> pd.DataFrame:
    """Seconds until each variant's test accuracy first reaches the target (NaN: never), at the last sweep point."""
    rows = []
    for variant, frame in last_point(iterations).groupby("variant", sort=False):
        reached = frame[frame.get("accuracy", pd.Series(dtype=float)) >= target]
        rows.append({"variant": variant, "seconds": reached["end"].min() if len(reached) else np.nan})
    return pd.DataFrame(rows)
