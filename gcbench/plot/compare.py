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


def sim_vs_real(sim: pd.DataFrame, real: pd.DataFrame | dict[str, pd.DataFrame], simulated: str = "simulated",
                more: dict[str, pd.DataFrame] | None = None) -> Figure | None:  # fmt: skip
    """6. Each variant the simulation and a measured run have: the distributions (left) and the means with their
    95% CIs, measured (vertical bars) and simulated (horizontal) (right).

    ``real``: one measured run, or several by name (``{"ray": ..., "torch": ...}``: one scenario on two
    backends), drawn side by side, each with a dash and a marker of its own; a variant is drawn for each
    measured run that has it. ``simulated``: what the simulation is called ("calibrated simulation" for a
    scenario gcbench calibrate wrote; ", paired" where it ran the measured run's seeds and iterations).
    ``more``: other simulations of the scenario by name (a long run beside a paired one), drawn in the means'
    panel with hollow markers."""
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
    others = {name: frame for name, frame in (more or {}).items() if not frame.empty}
    counts = " · ".join([f"{simulated}: {_count(sim, common)}"] + [f"{name}: {_count(frame, common)}" for name, frame
                        in others.items()] + [f"{r.name}: {r.count(common)}" for r in runs])  # fmt: skip
    fig.suptitle(f"{counts} iterations per variant", fontsize=7)
    _distributions(left, sim, runs, common, styles)
    said = f"solid: {simulated}, {runs[0].says()}" if len(runs) == 1 else "each run's line style in the legend"
    left.set_title(f"distributions ({said})", fontsize=7)
    handles = _means(right, {simulated: sim, **others}, runs, common, styles)
    right.set_title("means, 95% CIs (legend: the simulation's error)", fontsize=7)
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


def _means(ax, sims: dict[str, pd.DataFrame], runs: list[_Measured], common: list[str], styles: dict) -> list[Line2D]:
    """A parity point per simulation, variant and measured run (the variant's marker with one run, the run's with
    several; hollow for a simulation after the first), each with its 95% CIs, and the diagonal; returns the
    legend's handles."""
    handles, top = [], 0.0
    for rank, (name, sim) in enumerate(sims.items()):
        for variant in common:
            for run in (r for r in runs if variant in r.variants):
                marker = styles[variant]["marker"] if len(runs) == 1 else run.marker
                point, reach = _parity_point(ax, variant, (name, sim), run, styles[variant], marker, hollow=rank > 0)
                handles.append(point)
                top = max(top, reach)
    top *= 1.1
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


def _parity_point(ax, variant: str, sim: tuple[str, pd.DataFrame], run: _Measured, style: dict, marker,
                  hollow: bool) -> tuple[Line2D, float]:  # fmt: skip
    """The variant's (simulated, measured) means with their 95% CIs as error bars, labelled with the simulation's
    relative error; and how far its bars reach (for the axes)."""
    from gcbench.results.summary import mean_confidence_interval

    name, frame = sim
    simulated_rows, measured_rows = frame[frame["variant"] == variant], run.frame[run.frame["variant"] == variant]
    simulated, measured = simulated_rows["duration"].mean(), measured_rows["duration"].mean()
    bars = {}
    for axis, rows, centre in (("xerr", simulated_rows, simulated), ("yerr", measured_rows, measured)):
        low, high = mean_confidence_interval(rows)  # (NaN: one seed and too few iterations for one)
        if np.isfinite(low):
            bars[axis] = [[centre - low], [high - centre]]
    if bars:
        ax.errorbar(simulated, measured, **bars, fmt="none", ecolor=style["color"], elinewidth=0.8, capsize=2)
    error = (simulated - measured) / measured
    label = f"{style['label']}: {name} mean {error:+.0%} off {run.name}"
    face = "none" if hollow else style["color"]
    (point,) = ax.plot(simulated, measured, ls="", markersize=5, color=style["color"], marker=marker,
                       markerfacecolor=face)  # fmt: skip
    point.set_label(label)
    reach = max([simulated, measured] + [c + b[1][0] for c, b in ((simulated, bars.get("xerr")),
                (measured, bars.get("yerr"))) if b is not None])  # fmt: skip
    return point, reach
