"""Simulated against measured iteration times: ECDFs overlaid, and a parity plot of the means."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from gcbench.plot.style import FULL_WIDTH, variant_styles


def sim_vs_real(sim: pd.DataFrame, real: pd.DataFrame) -> Figure | None:
    """6. Each variant both runs have: its two distributions (left) and its two means (right)."""
    common = [v for v in sim["variant"].drop_duplicates() if v in set(real["variant"])]
    if not common:
        return None
    styles = variant_styles(pd.concat([sim, real]))
    fig = Figure(figsize=(FULL_WIDTH, 3.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    counts = f"simulated: {_count(sim, common)} · measured: {_count(real, common)} iterations per variant"
    for variant in common:
        _ecdfs(left, sim[sim["variant"] == variant], real[real["variant"] == variant], styles[variant])
    left.set_xlabel("iteration time (s)")
    left.set_ylabel("fraction of iterations ≤ time")
    left.set_title(f"distributions (solid: simulated, dashed: measured)\n{counts}", fontsize=7)
    handles = [_parity_point(right, variant, sim, real, styles[variant]) for variant in common]
    means = [h.get_xydata()[0] for h in handles]
    top = max(max(x, y) for x, y in means) * 1.1
    (diagonal,) = right.plot([0, top], [0, top], color="0.4", lw=0.8, label="simulated = measured")
    right.set(xlim=(0, top), ylim=(0, top), aspect="equal")
    right.set_xlabel("simulated mean iteration time (s)")
    right.set_ylabel("measured mean iteration time (s)")
    right.set_title(f"means (the legend gives the simulation's error)\n{counts}", fontsize=7)
    kinds = [Line2D([], [], color="0.3", ls=ls, label=label) for ls, label in (("-", "simulated"), ("--", "measured"))]
    fig.legend(handles=[*handles, *kinds, diagonal], loc="outside lower center", ncol=3, frameon=False, fontsize=6)
    return fig


def _count(frame: pd.DataFrame, variants: list[str]) -> str:
    """Rows per variant: one number, or the range where a partial run has fewer for some."""
    sizes = frame[frame["variant"].isin(variants)].groupby("variant").size()
    low, high = int(sizes.min()), int(sizes.max())
    return f"{low}" if low == high else f"{low}–{high}"


def _ecdfs(ax, sim: pd.DataFrame, real: pd.DataFrame, style: dict) -> None:
    for frame, dash in ((sim, "-"), (real, "--")):
        times = np.sort(frame["duration"].to_numpy())
        ax.step(
            times,
            np.arange(1, len(times) + 1) / len(times),
            where="post",
            color=style["color"],
            ls=dash,
            marker=style.get("marker"),  # tells apart variants of one scheme
            markevery=max(1, len(times) // 6),
            markersize=3,
        )


def _parity_point(ax, variant: str, sim: pd.DataFrame, real: pd.DataFrame, style: dict) -> Line2D:
    """The variant's (simulated, measured) means, labelled with the simulation's relative error."""
    simulated = sim[sim["variant"] == variant]["duration"].mean()
    measured = real[real["variant"] == variant]["duration"].mean()
    error = (simulated - measured) / measured
    label = f"{style['label']}: simulated mean {error:+.0%} off measured"
    (point,) = ax.plot(simulated, measured, ls="", markersize=5, color=style["color"], marker=style["marker"])
    point.set_label(label)
    return point
