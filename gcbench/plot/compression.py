"""The compression figure: test accuracy against time and against the data the master received, one panel per
scheme, one line per compressor, so that sending less and sending redundantly are judged on accuracy."""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from gcbench.plot.labels import sweep_values
from gcbench.plot.style import FULL_WIDTH

MEGABIT = 1e6 / 8  # bytes


def variant_compressors(metadata: dict) -> dict[str, str]:
    """Per variant label, the compressor its workers applied, as run.json records it (empty for a run an earlier
    gcbench wrote, which recorded none)."""
    recorded = metadata.get("compression")
    return dict(recorded) if isinstance(recorded, dict) else {}


def compression_curves(
    iterations: pd.DataFrame, compressors: dict[str, str], mode: str = "sim", target: float | None = None
) -> Figure | None:
    """Test accuracy against time (a row per sweep point) and against the megabits the master received (the
    running sum of ``bytes_received``, at the last sweep point), for the first seed; one panel per scheme, one
    colour per compressor. None unless the run trained, counted the bytes it received and compared at least two
    compressors."""
    if "accuracy" not in iterations.columns or iterations["accuracy"].isna().all():
        return None
    if iterations["bytes_received"].isna().all():
        return None
    named = {variant: compressors.get(variant, "none") for variant in iterations["variant"].unique()}
    if len(set(named.values())) < 2:
        return None
    data = iterations[iterations["seed"] == iterations["seed"].min()]
    names = list(dict.fromkeys(named.values()))  # in the variants' order
    colours = dict(zip(names, sns.color_palette("colorblind", max(len(names), 3)), strict=False))
    groups = _scheme_groups(data)
    points = sorted(data["point"].unique())
    fig = Figure(figsize=(FULL_WIDTH, 0.6 + 1.9 * (len(points) + 1)), layout="constrained")
    axes = fig.subplots(len(points) + 1, len(groups), squeeze=False, sharey=True)
    clock = "wall-clock time (s)" if mode == "real" else "simulated time (s)"
    last = points[-1]
    for column, (title, variants) in enumerate(groups.items()):
        for row, point in enumerate([*points, last]):
            ax = axes[row, column]
            against_bits = row == len(points)
            for variant in variants:
                frame = data[(data["variant"] == variant) & (data["point"] == point)].sort_values("iteration")
                x = frame["bytes_received"].cumsum() / MEGABIT if against_bits else frame["end"]
                shown = frame["accuracy"].notna()
                ax.plot(x[shown], frame.loc[shown, "accuracy"], color=colours[named[variant]], lw=1.1,
                        marker="o", markersize=2, label=named[variant])  # fmt: skip
            if target is not None:
                ax.axhline(target, color="0.4", lw=0.8, ls=":")
            if against_bits:
                ax.set_xscale("log")  # compressors differ by orders of magnitude in what they send
            ax.set_xlabel("Mbit received (running sum)" if against_bits else clock, fontsize=7)
            ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0))
            if row == 0:
                ax.set_title(title, fontsize=8)
            if column == 0:  # the row's sweep point, where there are several
                values = sweep_values(data[data["point"] == point]) if len(points) > 1 else ""
                ax.set_ylabel("test accuracy" + (f"\n{values}" if values else ""), fontsize=7)
    handles = [axes[0, 0].plot([], [], color=colours[name], lw=1.1, marker="o", markersize=2)[0] for name in names]
    text = [*names, *([f"target {target:.0%}"] if target is not None else [])]
    if target is not None:
        handles.append(axes[0, 0].plot([], [], color="0.4", lw=0.8, ls=":")[0])
    fig.legend(handles, text, loc="outside lower center", ncol=min(len(text), 6), frameon=False, fontsize=7)
    return fig


def _scheme_groups(data: pd.DataFrame) -> dict[str, list[str]]:
    """Panel title -> its variants (in the run's order): one panel per scheme, s, m and policy that occur."""
    columns = ["scheme", "s", "m", "policy"]
    keys = data.drop_duplicates("variant")[["variant", *columns]]
    policies = keys.groupby("scheme")["policy"].nunique()
    groups: dict[str, list[str]] = {}
    for row in keys.itertuples(index=False):
        title = row.scheme + (f", s = {row.s}" if row.s else "") + (f", m = {row.m}" if row.m > 1 else "")
        if policies[row.scheme] > 1:
            title += f", {row.policy}"
        groups.setdefault(title, []).append(row.variant)
    return groups
