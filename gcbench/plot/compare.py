"""Simulated against measured iteration times: ECDFs overlaid, and a parity plot of the means."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from gcbench.plot.style import FULL_WIDTH, variant_styles

MEASURED_DASHES = ("--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)))  # one per measured run, in the order given
MEASURED_MARKERS = ("o", "s", "^", "D")


def sim_vs_real(sim: pd.DataFrame, real: pd.DataFrame | dict[str, pd.DataFrame],
                simulated: str = "simulated") -> Figure | None:  # fmt: skip
    """6. Each variant the simulation and a measured run have: the distributions (left) and the means (right).

    ``real``: one measured run, or several by name (``{"ray": ..., "torch": ...}``: one scenario on two
    backends), drawn side by side, each with a dash and a marker of its own; a variant is drawn for each
    measured run that has it. ``simulated``: what the simulation is called ("calibrated simulation" for a
    scenario gcbench calibrate wrote)."""
    measured = {"measured": real} if isinstance(real, pd.DataFrame) else dict(real)
    if len(measured) > len(MEASURED_DASHES):
        raise ValueError(f"at most {len(MEASURED_DASHES)} measured runs fit one figure, got {len(measured)}")
    present = {name: set(frame["variant"]) for name, frame in measured.items()}
    common = [v for v in sim["variant"].drop_duplicates() if any(v in seen for seen in present.values())]
    if not common:
        return None
    runs = [
        _Measured(name if len(measured) == 1 else f"measured ({name})", frame, present[name], dash, marker)
        for (name, frame), dash, marker in zip(measured.items(), MEASURED_DASHES, MEASURED_MARKERS, strict=False)
    ]
    styles = variant_styles(pd.concat([sim, *measured.values()]))
    fig = Figure(figsize=(FULL_WIDTH, 3.4 if len(runs) == 1 else 3.8), layout="constrained")
    left, right = fig.subplots(1, 2)
    counts = " · ".join([f"{simulated}: {_count(sim, common)}"] + [f"{r.name}: {r.count(common)}" for r in runs])
    fig.suptitle(f"{counts} iterations per variant", fontsize=7)
    _distributions(left, sim, runs, common, styles)
    said = f"solid: {simulated}, {runs[0].says()}" if len(runs) == 1 else "each run's line style in the legend"
    left.set_title(f"distributions ({said})", fontsize=7)
    handles = _means(right, sim, runs, common, styles)
    right.set_title("means (the legend gives the simulation's error)", fontsize=7)
    kinds = [Line2D([], [], color="0.3", ls=ls, label=label) for ls, label in [("-", simulated)] + [
        (r.dash, r.name) for r in runs]]  # fmt: skip
    fig.legend(handles=[*handles, *kinds], loc="outside lower center", ncol=3 if len(runs) == 1 else 2,
               frameon=False, fontsize=6)  # fmt: skip
    return fig


@dataclass(frozen=True)
class _Measured:
    """One measured run as the figure draws it."""

    name: str
    frame: pd.DataFrame
    variants: set
    dash: object
    marker: str

    def count(self, common: list[str]) -> str:
        return _count(self.frame, [v for v in common if v in self.variants])

    def says(self) -> str:
        return f"{_dash_word(self.dash)}: {self.name}"


def _distributions(ax, sim: pd.DataFrame, runs: list[_Measured], common: list[str], styles: dict) -> None:
    for variant in common:
        _ecdf(ax, sim[sim["variant"] == variant], styles[variant], "-")
        for run in (r for r in runs if variant in r.variants):
            _ecdf(ax, run.frame[run.frame["variant"] == variant], styles[variant], run.dash)
    ax.set_xlabel("iteration time (s)")
    ax.set_ylabel("fraction of iterations ≤ time")


def _means(ax, sim: pd.DataFrame, runs: list[_Measured], common: list[str], styles: dict) -> list[Line2D]:
    """A parity point per variant and measured run (the variant's marker with one run, the run's with
    several), and the diagonal; returns the legend's handles."""
    handles = []
    for variant in common:
        for run in (r for r in runs if variant in r.variants):
            marker = styles[variant]["marker"] if len(runs) == 1 else run.marker
            handles.append(_parity_point(ax, variant, sim, run.frame, styles[variant], run.name, marker))
    top = max(max(h.get_xydata()[0]) for h in handles) * 1.1
    (diagonal,) = ax.plot([0, top], [0, top], color="0.4", lw=0.8, label="simulated = measured")
    ax.set(xlim=(0, top), ylim=(0, top), aspect="equal")
    ax.set_xlabel("simulated mean iteration time (s)")
    ax.set_ylabel("measured mean iteration time (s)")
    return [*handles, diagonal]


def _dash_word(dash) -> str:
    return {"--": "dashed", ":": "dotted", "-.": "dash-dotted"}.get(dash, "dash-dot-dotted")


def _count(frame: pd.DataFrame, variants: list[str]) -> str:
    """Rows per variant: one number, or the range where a partial run has fewer for some."""
    sizes = frame[frame["variant"].isin(variants)].groupby("variant").size()
    low, high = int(sizes.min()), int(sizes.max())
    return f"{low}" if low == high else f"{low}–{high}"


def _ecdf(ax, frame: pd.DataFrame, style: dict, dash) -> None:
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


def _parity_point(ax, variant: str, sim: pd.DataFrame, real: pd.DataFrame, style: dict, name: str, marker) -> Line2D:
    """The variant's (simulated, measured) means, labelled with the simulation's relative error."""
    simulated = sim[sim["variant"] == variant]["duration"].mean()
    measured = real[real["variant"] == variant]["duration"].mean()
    error = (simulated - measured) / measured
    label = f"{style['label']}: simulated mean {error:+.0%} off {name}"
    (point,) = ax.plot(simulated, measured, ls="", markersize=5, color=style["color"], marker=marker)
    point.set_label(label)
    return point
