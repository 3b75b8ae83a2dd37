"""`gcbench recommend`'s figure: every candidate's predicted value with its 95% CI, best at the top, a panel per
kind where exact, approximate and stale candidates are ranked apart; the top N in bold."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from gcbench.plot.style import COLUMN_WIDTH, scheme_colour

MOST_SHOWN = 40  # candidates per panel: the best ones (the table has them all)


def candidates_figure(table: pd.DataFrame, top: int) -> Figure:
    """``table`` as `gcbench recommend` ranks it (gcbench/twin/recommend.py's COLUMNS): a panel per kind, one under
    the other on one axis, uncoded's value dashed in each."""
    apart = table["rank"].duplicated().any()  # ranked within each kind
    kinds = list(dict.fromkeys(table["kind"])) if apart else ["all"]  # (in the table's order)
    panels = [(table[table["kind"] == k] if apart else table).sort_values("rank").head(MOST_SHOWN) for k in kinds]
    sizes = [len(p) + 1.5 for p in panels]
    fig = Figure(figsize=(COLUMN_WIDTH * 1.8, 0.6 + 0.15 * sum(sizes)))
    axes = fig.subplots(len(panels), 1, squeeze=False, sharex=True,
                        gridspec_kw={"height_ratios": sizes, "hspace": 0.35})[:, 0]  # fmt: skip
    reference = table.loc[table["candidate"] == "uncoded", "value"]
    for ax, kind, rows in zip(axes, kinds, panels, strict=True):
        _panel(ax, rows, top)
        if len(reference) and np.isfinite(reference.iloc[0]):
            ax.axvline(reference.iloc[0], color="0.4", lw=0.8, ls="--")
        shown = f", the best {MOST_SHOWN}" if len(rows) < (table["kind"] == kind).sum() else ""
        ax.set_title(f"{kind} candidates{shown}" if apart else "candidates", fontsize=8, loc="left")
    axes[-1].set_xlabel(f"{table['metric'].iloc[0]} (bold: the best {top}; dashed: uncoded)")
    return fig


def _panel(ax, rows: pd.DataFrame, top: int) -> None:
    y = np.arange(len(rows))
    value = rows["value"].to_numpy(dtype=float)
    finite = np.isfinite(value)
    # (a run whose iterations all took one time has an interval of that time, its ends a rounding either side)
    low = np.maximum(np.where(np.isfinite(rows["ci_low"]), value - rows["ci_low"], 0.0), 0.0)
    high = np.maximum(np.where(np.isfinite(rows["ci_high"]), rows["ci_high"] - value, 0.0), 0.0)
    for i, row in enumerate(rows.itertuples()):
        if not finite[i]:
            continue
        colour = scheme_colour(str(row.scheme))
        ax.errorbar(value[i], y[i], xerr=[[low[i]], [high[i]]], fmt="o", color=colour, ms=3, capsize=1.5, lw=0.8)
    ax.set_yticks(y)
    labels = ax.set_yticklabels(
        [c if np.isfinite(v) else f"{c} (never)" for c, v in zip(rows["candidate"], value, strict=True)], fontsize=6
    )
    for label, rank in zip(labels, rows["rank"], strict=True):
        if rank <= top:
            label.set_fontweight("bold")
    ax.invert_yaxis()
    ax.grid(axis="y", visible=False)
