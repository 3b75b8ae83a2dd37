"""Who slowed the run (docs/attribution.md). Where some worker's share of the slowdown stands out: per variant,
workers by iterations shaded by slowness, marked where a worker's result ended the iteration, each panel titled
with the worker whose slowness cost the most. Where none does (slowness spread as i.i.d. draws spread it): each
worker's share with its interval, since a map of noise reads as signal. Variants whose every iteration took the
same time share a panel."""

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


def attribution_figure(iterations: pd.DataFrame, workers: pd.DataFrame | None,
                       attribution: pd.DataFrame | None) -> Figure | None:  # fmt: skip
    """Who slowed the run, at the last sweep point: where some worker's share stands out beyond what i.i.d.
    workers give, the map of every worker's slowness (``attribution_map``); where none does, the shares with their
    intervals (``share_chart``), since a map of noise would read as signal."""
    if workers is None or workers.empty:
        return None
    point = int(iterations["point"].max())
    if attribution is not None and signal_free(attribution, point):
        return share_chart(iterations, attribution, point)
    return attribution_map(iterations, workers, attribution)


def signal_sentence(table: pd.DataFrame, point: int) -> str:
    """At one sweep point: which workers' shares stand out beyond what i.i.d. workers give, or that none does;
    and the nodes whose workers together cost more than any one worker."""
    return _worker_sentence(workers_only(table), point) + _node_clause(table, point)


def _node_clause(table: pd.DataFrame, point: int) -> str:
    """'; together, node 3's workers account for 26% of uncoded's slowdown, ...' (empty: no node row)."""
    if "level" not in table.columns:
        return ""
    nodes = table[(table["point"] == point) & (table["level"] == "node")]
    if nodes.empty:
        return ""
    top = nodes.sort_values("share", ascending=False).drop_duplicates("variant")  # (each variant's costliest)
    named = ", ".join(f"node {row.node}'s workers {row.share:.0%} of {row.variant}'s" for row in top.itertuples())
    return f"; together, more than any one worker: {named} slowdown"


def _worker_sentence(table: pd.DataFrame, point: int) -> str:
    rows = table[table["point"] == point]
    if rows.empty or rows["share"].isna().all():
        return "no what-if replay (asynchronous updates), so no share of the slowdown to judge"
    if rows["share_low"].isna().all():
        return (f"{int(rows['iterations'].max())} iterations per variant are too few to tell a worker's share of the "
                "slowdown from noise (200 or more are)")  # fmt: skip
    out = rows[rows["stands_out"].astype(bool)]
    if out.empty:
        return ("no worker's share of the slowdown stands out beyond what independent, identically distributed "
                "workers give (no share's lower bound, at 95% over all the workers, is above the mean share): the "
                "slowness is spread across the workers")  # fmt: skip
    named = "; ".join(f"{variant}: {', '.join(f'worker {w}' for w in group['worker'])}"
                      for variant, group in out.groupby("variant", sort=False))  # fmt: skip
    return (f"shares of the slowdown beyond what i.i.d. workers give (lower bounds, at 95% over all the workers, "
            f"above the mean share): {named}")  # fmt: skip


def signal_free(attribution: pd.DataFrame, point: int) -> bool:
    """No worker of any variant at ``point`` stands out (and the shares have intervals to judge by)."""
    rows = attribution[attribution["point"] == point]
    return bool(len(rows)) and rows["share_low"].notna().any() and not rows["stands_out"].astype(bool).any()


def alike_variants(iterations: pd.DataFrame, point: int) -> list[list[str]]:
    """The variants at ``point`` grouped where every iteration took the same time (CR and cyclic-MDS decode from
    the same workers): one panel each group."""
    at = iterations[iterations["point"] == point].sort_values(["variant", "seed", "iteration"], kind="stable")
    groups: dict[bytes, list[str]] = {}
    for variant in dict.fromkeys(iterations.loc[iterations["point"] == point, "variant"]):
        key = at.loc[at["variant"] == variant, "duration"].to_numpy().tobytes()
        groups.setdefault(key, []).append(str(variant))
    return list(groups.values())


def share_chart(iterations: pd.DataFrame, attribution: pd.DataFrame, point: int) -> Figure:
    """Per group of alike variants, each worker's share of the slowdown with its interval, beside the mean share
    (what every worker would take if all were alike): the compact figure for a run whose slowness is noise."""
    groups = alike_variants(iterations, point)[:MOST_PANELS]
    columns = min(len(groups), 2)
    rows_of = -(-len(groups) // columns)
    fig = Figure(figsize=(FULL_WIDTH, 0.7 + 1.5 * rows_of), layout="constrained")
    axes = fig.subplots(rows_of, columns, squeeze=False).ravel()
    for ax, group in zip(axes, groups, strict=False):
        rows = workers_only(attribution)
        rows = rows[(rows["variant"] == group[0]) & (rows["point"] == point)].sort_values("worker")
        share, low, high = (rows[c].to_numpy(float) for c in ("share", "share_low", "share_high"))
        ax.errorbar(rows["worker"], share, yerr=[share - low, high - share], fmt="o", markersize=3, color="0.2",
                    elinewidth=0.8, capsize=1.5)  # fmt: skip
        ax.axhline(share.mean(), color="#D55E00", lw=0.8, ls="--")
        ax.set_title(" = ".join(group) + f" (slowdown {rows['slowdown'].iloc[0]:.2f}x)", fontsize=7, loc="left")
        ax.set_xlabel("worker", fontsize=7)
        ax.set_ylabel("share of slowdown", fontsize=7)
    for ax in axes[len(groups) :]:
        ax.set_axis_off()
    where = sweep_values(iterations[iterations["point"] == point])
    fig.suptitle(
        "No worker's share of the slowdown stands out beyond what independent, identically distributed workers "
        f"give{f' ({where})' if where else ''}: bars are each share's bounds (one-sided, 95% over all the workers), "
        "the dashed line the mean share; slowdown: the replayed time over that with no worker slower than the "
        f"iteration's median{_node_clause(attribution, point)}",
        fontsize=7, wrap=True,
    )  # fmt: skip
    return fig


def attribution_map(iterations: pd.DataFrame, workers: pd.DataFrame | None,
                    attribution: pd.DataFrame | None) -> Figure | None:  # fmt: skip
    """The first ``MOST_PANELS`` groups of alike variants at the last sweep point and the first seed, their first
    ``SHOWN`` iterations."""
    if workers is None or workers.empty:
        return None
    point, seed = iterations["point"].max(), iterations["seed"].min()
    at = iterations[(iterations["point"] == point) & (iterations["seed"] == seed)]
    groups = alike_variants(iterations, int(point))[:MOST_PANELS]
    variants = [group[0] for group in groups]
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
        group = next(g for g in groups if g[0] == variant)
        ax.set_title(_title(" = ".join(group), variant, attribution, int(point)), fontsize=7, loc="left")
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


def workers_only(attribution: pd.DataFrame) -> pd.DataFrame:
    """The attribution table's rows of workers (not those of nodes whose workers straggled together)."""
    return attribution if "level" not in attribution.columns else attribution[attribution["level"] != "node"]


def _title(name: str, variant: str, attribution: pd.DataFrame | None, point: int) -> str:
    """``name``: the panel's variants; ``variant``: the one whose attribution rows title it."""
    if attribution is None:
        return name
    rows = attribution[(attribution["variant"] == variant) & (attribution["point"] == point)]
    if rows.empty:
        return name
    top = rows.sort_values("rank").iloc[0]
    if top.get("level") == "node":
        return (f"{name}: node {top['node']}'s workers together account for {top['share']:.0%} of the time lost to "
                f"slowness, more than any one worker (without their slowness, {top['speedup_without']:.2f}x "
                "faster)")  # fmt: skip
    if not np.isfinite(top["share"]):
        return f"{name}: worker {top['worker']} straggled most ({top['straggled']:.0%}, {top['pattern']})"
    if top["share"] <= 0:
        return f"{name}: no worker's slowness cost time (it ran {top['slowdown']:.2f}x as long as with none slow)"
    noise = "" if top.get("stands_out", True) else "; no more than i.i.d. workers would"
    return (
        f"{name}: worker {top['worker']} ({top['pattern']}) accounts for {top['share']:.0%} of the time lost to "
        f"slowness{noise} (the run took {top['slowdown']:.2f}x as long as with no worker slower than the median; "
        f"without this one's slowness, {top['speedup_without']:.2f}x faster)"
    )


def _key(crashed: bool) -> list:
    ended = Line2D([], [], marker="o", color="#56B4E9", ls="", markersize=3, label="its result ended the iteration")
    return [ended, Patch(color=DOWN, label="failed or down")] if crashed else [ended]
