"""Worker timeline: per worker, for a window of iterations, compute, injected delay, arrivals, unused work, crashes."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from gcbench.plot.labels import sweep_values
from gcbench.plot.style import FULL_WIDTH, scheme_colour

COMPUTE, DELAY, DOWN = "0.35", "#E69F00", "#D55E00"


def worker_timeline(iterations: pd.DataFrame, workers: pd.DataFrame | None, window: int = 6) -> Figure | None:
    """5. The baseline and the fastest variant, at the last sweep point and the first seed."""
    if workers is None or workers.empty:
        return None
    point, seed = iterations["point"].max(), iterations["seed"].min()
    at = iterations[(iterations["point"] == point) & (iterations["seed"] == seed)]
    means = at.groupby("variant", sort=False)["duration"].mean()
    chosen = list(dict.fromkeys([means.index[0], means.idxmin()]))
    mine = workers[(workers["point"] == point) & (workers["seed"] == seed) & (workers["iteration"] < window)]
    fig = Figure(figsize=(FULL_WIDTH, 1.2 + 0.22 * workers["worker"].nunique() * len(chosen)))
    axes = fig.subplots(len(chosen), 1, squeeze=False, sharex=True)[:, 0]
    for ax, variant in zip(axes, chosen, strict=True):
        _timeline(ax, at[(at["variant"] == variant) & (at["iteration"] < window)], mine[mine["variant"] == variant])
    where = ", ".join(part for part in (sweep_values(at), f"seed {seed}") if part)
    last = min(window, int(at["iteration"].max()) + 1) - 1
    axes[-1].set_xlabel(f"time since iteration 0 began (s); iterations 0 to {last} at {where}")
    axes[0].legend(handles=_key(), ncol=6, frameon=False, loc="lower left", bbox_to_anchor=(0, 1.02), fontsize=6)
    return fig


def _key() -> list:
    return [
        Patch(color=COMPUTE, label="compute"),
        Patch(facecolor=DELAY, label="injected delay"),
        Line2D([], [], marker="|", color="k", ls="", label="message arrives"),
        Patch(color=COMPUTE, alpha=0.3, label="not used"),
        Line2D([], [], marker="x", color=DOWN, lw=0.8, label="crashed, then down"),
        Line2D([], [], color="0.3", lw=0.6, ls="--", label="iteration ends"),
    ]


def _timeline(ax, mine: pd.DataFrame, rows: pd.DataFrame) -> None:
    origin = mine["start"].min()
    starts, ends = mine.set_index("iteration")["start"] - origin, mine.set_index("iteration")["end"] - origin
    was_down = set()
    for row in rows.sort_values("iteration").itertuples():
        begin, stop = starts[row.iteration], ends[row.iteration]
        _work(ax, row, origin, stop)
        if row.failed:
            _down(ax, row.worker, begin, stop, row.compute_start - origin, crashed=row.worker not in was_down)
            was_down.add(row.worker)
        else:
            was_down.discard(row.worker)
    colour = scheme_colour(str(mine["scheme"].iloc[0]))
    for end in ends:
        ax.axvline(end, color=colour, lw=0.6, ls="--")
    ax.set_ylabel(f"worker\n{mine['variant'].iloc[0]}", fontsize=7)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.invert_yaxis()
    ax.set_xlim(0, None)


def _work(ax, row, origin: float, stop: float) -> None:
    """Compute (grey), then injected delay (orange), then the arrival; unused work faded and cut at the stop."""
    began = row.compute_start - origin
    ready = row.compute_end - origin if row.used else min(row.compute_end - origin, stop)
    computed = min(row.compute_end - origin - row.injected_delay, ready)
    alpha = 1.0 if row.used else 0.3
    if np.isfinite(began) and computed > began:  # nothing when the worker was down past the stop
        ax.barh(row.worker, computed - began, left=began, height=0.6, color=COMPUTE, alpha=alpha)
    if np.isfinite(ready) and ready > max(computed, began):
        left = max(computed, began)
        ax.barh(row.worker, ready - left, left=left, height=0.6, color=DELAY, alpha=alpha)
    if np.isfinite(row.arrival) and row.arrival - origin <= stop:
        ax.plot(row.arrival - origin, row.worker, marker="|", color="k", ms=6, alpha=alpha)


def _down(ax, worker: int, begin: float, stop: float, back: float, crashed: bool) -> None:
    """Down from the iteration's start until it is back to redo the work, or until the iteration ends."""
    until = min(back, stop) if np.isfinite(back) else stop
    ax.plot([begin, until], [worker] * 2, color=DOWN, lw=0.8, solid_capstyle="butt")
    if crashed:
        ax.plot(begin, worker, marker="x", color=DOWN, ms=5, clip_on=False)
