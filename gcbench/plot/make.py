"""Render every figure the data allows for some results directories, and optionally a report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from matplotlib.figure import Figure

from gcbench.plot import figures, style
from gcbench.plot.runs import Run, load_run, require_columns
from gcbench.results.schema import ITERATION_COLUMNS, WORKER_COLUMNS


@dataclass(frozen=True)
class FigureSpec:
    name: str
    caption: str
    draw: Callable[[Run, float | None], Figure | None]  # (run, target accuracy)


FIGURES = (
    FigureSpec(
        "ecdf",
        "Distribution of iteration times per variant (ECDF).",
        lambda r, _: figures.iteration_time_ecdf(r.iterations),
    ),
    FigureSpec(
        "mean-vs-sweep",
        "Mean iteration time with 95% confidence intervals across the sweep.",
        lambda r, _: figures.mean_vs_sweep(r.iterations),
    ),
    FigureSpec(
        "speedup-vs-sweep",
        "Speedup over the baseline variant across the sweep.",
        lambda r, _: figures.speedup_vs_sweep(r.iterations),
    ),
    FigureSpec(
        "training",
        "Training loss and test accuracy against time and iterations.",
        lambda r, target: figures.training_curves(r.iterations, target, r.mode),
    ),
    FigureSpec(
        "timeline",
        "Worker timeline: compute, injected delay, arrivals, unused work and crashes.",
        lambda r, _: figures.worker_timeline(r.iterations, r.workers),
    ),
    FigureSpec(
        "scheme-map",
        "Load against straggler tolerance; marker area is the upload per message.",
        lambda r, _: figures.scheme_map(r.iterations, r.workers),
    ),
)


@dataclass
class Written:
    name: str
    caption: str
    files: list[Path]


def plot_runs(
    paths: list[Path], out: Path, formats: tuple[str, ...] = ("png", "pdf"), target: float | None = None
) -> tuple[list[Run], list[Written]]:
    """Render every figure for every run (and simulated-vs-real pairs); return what was written.

    ``target`` is the test accuracy whose time-to-reach is marked (default: 90% of the best reached).
    """
    style.apply()
    runs = [load_run(Path(p)) for p in paths]
    for run in runs:
        require_columns(run.iterations, list(ITERATION_COLUMNS), "iterations", run.path)
        if run.workers is not None:
            require_columns(run.workers, list(WORKER_COLUMNS), "workers", run.path)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for run in runs:
        for spec in FIGURES:
            fig = spec.draw(run, target if target is not None else figures.default_target(run.iterations))
            if fig is not None:
                written.append(_save(fig, out / f"{run.scenario_name}-{run.mode}-{spec.name}", formats, spec.caption))
    for sim in (r for r in runs if r.mode == "sim"):
        for real in (r for r in runs if r.mode == "real" and r.scenario_name == sim.scenario_name):
            fig = figures.sim_vs_real(sim.iterations, real.iterations)
            if fig is not None:
                caption = "Simulated against measured iteration times: distributions and a parity plot of means."
                written.append(_save(fig, out / f"{sim.scenario_name}-sim-vs-real", formats, caption))
    return runs, written


def _save(fig: Figure, stem: Path, formats: tuple[str, ...], caption: str) -> Written:
    files = []
    for fmt in formats:
        path = stem.with_suffix(f".{fmt}")
        fig.savefig(path)
        files.append(path)
    return Written(stem.name, caption, files)
