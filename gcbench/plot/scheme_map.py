"""Scheme map: what each variant's scheme costs (load, upload) against the stragglers it tolerates."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from gcbench.plot.style import FULL_WIDTH, variant_styles

PANELS = {"load": "load (partitions per worker)", "upload": "upload (gradients per message)"}
SIDE_BY_SIDE = 0.09  # x offset between variants with the same properties, so none hides another


def scheme_map(
    iterations: pd.DataFrame, workers: pd.DataFrame | None, shares: dict[str, float] | None = None
) -> Figure:
    """7. Computation load (from workers.parquet; left) and upload per message (right) against tolerance s. The load
    is in uncoded partitions (1/n of a mini-batch): a variant's partitions times its ``shares`` entry (M-SGC's
    partitions are n/k of one; 1 for every other scheme, and where none is given)."""
    variants = iterations.drop_duplicates("variant")[["variant", "scheme", "s", "m"]].reset_index(drop=True)
    variants["upload"] = 1.0 / variants["m"]
    panels = ["upload"]
    if workers is not None:
        partitions = variants["variant"].map(workers.groupby("variant")["partitions"].max()).astype(float)
        variants["load"] = partitions * variants["variant"].map(lambda label: (shares or {}).get(label, 1.0))
        panels.insert(0, "load")
    fig = Figure(figsize=(FULL_WIDTH * len(panels) / 2, 2.4))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    styles = variant_styles(iterations)
    for ax, value in zip(axes, panels, strict=True):
        _panel(ax, variants, value, styles)
    axes[-1].set_ylim(0, 1.1)
    fig.subplots_adjust(wspace=0.4)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3, fontsize=6)
    return fig


def partition_shares(metadata: dict) -> dict[str, float]:
    """Per variant label of a run, its scheme's partition_share, as run.json records it (empty for a run an earlier
    gcbench wrote: every load is then read as uncoded partitions)."""
    recorded = metadata.get("partition_shares")
    return {str(k): float(v) for k, v in recorded.items()} if isinstance(recorded, dict) else {}


def _panel(ax, variants: pd.DataFrame, value: str, styles: dict[str, dict]) -> None:
    for _, group in variants.groupby(["s", value], sort=False, dropna=False):
        offsets = (np.arange(len(group)) - (len(group) - 1) / 2) * SIDE_BY_SIDE
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
    ax.set_ylabel(PANELS[value])
    ax.set_xticks(sorted(variants["s"].unique()))
