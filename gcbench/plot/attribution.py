"""Who slowed the run: per variant, workers by iterations shaded by slowness, marked where a worker's result ended
the iteration; each panel's title names the worker whose slowness cost the most (docs/attribution.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap, LogNorm
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from gcbench.plot.labels import sweep_values
from gcbench.plot.style import FULL_WIDTH
from gcbench.results import slowness as slow

SHOWN = 200  # iterations per panel: more would be thinner than a pixel in print
MOST_PANELS = 8
SLOWEST = 4.0  # the shade saturates at 4 times the iteration's median worker
DOWN = "#009E73"  # failed or down: a green apart from the shade's scale and the markers' blue


def attribution_map(iterations: pd.DataFrame, workers: pd.DataFrame | None,
                    attribution: pd.DataFrame | None) -> Figure | None:  # fmt: skip
    """The first ``MOST_PANELS`` variants at the last sweep point and the first seed, their first ``SHOWN``
    iterations."""
    if workers is None or workers.empty:
        return None
    point, seed = iterations["point"].max(), iterations["seed"].min()
    at = iterations[(iterations["point"] == point) & (iterations["seed"] == seed)]
    variants = list(dict.fromkeys(at["variant"]))[:MOST_PANELS]
    n = int(workers["worker"].max()) + 1
    mine = workers[(workers["point"] == point) & (workers["seed"] == seed) & (workers["iteration"] < SHOWN)]
    fig = Figure(figsize=(FULL_WIDTH, 0.9 + len(variants) * (0.35 + 0.09 * n)))
    axes = fig.subplots(len(variants), 1, squeeze=False, sharex=True)[:, 0]
    image = None
    for ax, variant in zip(axes, variants, strict=True):
        rows = mine[mine["variant"] == variant].sort_values(["iteration", "worker"])
        if rows.empty:
            ax.set_axis_off()
            continue
        image = _panel(ax, rows, n)
        ax.set_title(_title(variant, attribution, int(point)), fontsize=7, loc="left")
    where = ", ".join(part for part in (sweep_values(at), f"seed {seed}") if part)
    shown = min(SHOWN, int(at["iteration"].max()) + 1)
    axes[-1].set_xlabel(f"iteration (the first {shown}, at {where})")
    if image is not None:
        # (below the panels, not beside them: a panel's title, left-aligned, may run past its axes' right edge)
        bar = fig.colorbar(image, ax=list(axes), location="bottom", fraction=0.02, pad=0.1, aspect=60)
        bar.set_ticks([1, 1.5, 2, 3, 4], labels=["≤ 1", "1.5", "2", "3", "≥ 4"])
        bar.ax.minorticks_off()
        bar.set_label("compute per partition / iteration's median worker", fontsize=7)
    crashed = bool(mine["failed"].any())
    axes[0].legend(handles=_key(crashed), ncol=2, frameon=False, loc="lower right", bbox_to_anchor=(1, 1.15),
                   fontsize=6)  # fmt: skip
    return fig


def _panel(ax, rows: pd.DataFrame, n: int):
    failed = slow.failed_grid(rows, n)
    shade = np.clip(slow.slowness(slow.compute_per_partition(rows, n)), 1.0, SLOWEST)
    iterations = np.unique(rows["iteration"].to_numpy())
    extent = (iterations[0] - 0.5, iterations[-1] + 0.5, n - 0.5, -0.5)
    image = ax.imshow(shade.T, aspect="auto", cmap="magma_r", norm=LogNorm(1.0, SLOWEST), extent=extent,
                      interpolation="nearest")  # fmt: skip
    down = np.where(failed, 1.0, np.nan)
    ax.imshow(down.T, aspect="auto", cmap=ListedColormap([DOWN]), extent=extent, interpolation="nearest")
    ended = slow.ended_by(slow.used_arrivals(rows, n))
    marked = ended >= 0
    ax.scatter(iterations[marked], ended[marked], s=2, marker="o", color="#56B4E9", linewidths=0)
    ax.set_ylabel("worker", fontsize=7)
    ax.set_yticks(range(0, n, 1 if n <= 6 else 2 if n <= 16 else max(1, n // 6)))
    ax.grid(False)
    return image


def _title(variant: str, attribution: pd.DataFrame | None, point: int) -> str:
    if attribution is None:
        return variant
    rows = attribution[(attribution["variant"] == variant) & (attribution["point"] == point)]
    if rows.empty:
        return variant
    top = rows.sort_values("rank").iloc[0]
    if not np.isfinite(top["share"]):
        return f"{variant}: worker {top['worker']} straggled most ({top['straggled']:.0%}, {top['pattern']})"
    if top["share"] <= 0:
        return f"{variant}: no worker's slowness cost time (slowdown {top['slowdown']:.2f}x)"
    return (
        f"{variant}: worker {top['worker']} ({top['pattern']}) accounts for {top['share']:.0%} of the slowdown "
        f"({top['slowdown']:.2f}x in all); without it {top['speedup_without']:.2f}x faster"
    )


def _key(crashed: bool) -> list:
    ended = Line2D([], [], marker="o", color="#56B4E9", ls="", markersize=3, label="its result ended the iteration")
    return [ended, Patch(color=DOWN, label="failed or down")] if crashed else [ended]
