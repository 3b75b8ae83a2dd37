"""Render every figure the data allows for some results directories, and optionally a report.

File names start with the run directory's name (and mode), so two runs of one scenario plotted into one
folder never write the same file; the same run plotted again replaces its own figures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from gcbench.plot import figures, style
from gcbench.plot.attribution import attribution_figure
from gcbench.plot.compression import compression_curves, variant_compressors
from gcbench.plot.runs import Run, check_distinct, latest_runs, load_run, require_columns
from gcbench.plot.training import run_target
from gcbench.results.schema import ITERATION_COLUMNS, WORKER_COLUMNS


@dataclass(frozen=True)
class FigureSpec:
    name: str
    caption: str
    draw: Callable[[Run, float | None], Figure | None]  # (run, target accuracy)
    caption_without_workers: str | None = None  # the caption when the run has no workers table, if it differs


FIGURES = (
    FigureSpec(
        "ecdf",
        "Distribution of iteration times per variant (ECDF) at the last sweep point; asynchronous policies' "
        "times between model updates in a panel of their own.",
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
        "Training loss and test accuracy (%) against time and iterations.",
        lambda r, target: figures.training_curves(r.iterations, target, r.mode),
    ),
    FigureSpec(
        "compression",
        "Test accuracy (%) against time (a row per sweep point) and against the megabits the master received "
        "(cumulative, last sweep point), one panel per scheme, one colour per compressor (first seed).",
        lambda r, target: compression_curves(r.iterations, variant_compressors(r.metadata), r.mode, target),
    ),
    FigureSpec(
        "timeline",
        "Worker timeline of the baseline and the fastest variant (last sweep point, first seed): compute, "
        "injected delay, arrivals, unused work and crashes.",
        lambda r, _: figures.worker_timeline(r.iterations, r.workers),
    ),
    FigureSpec(
        "scheme-map",
        "Computation load (partitions per worker, left) and upload per message (gradients, right) against the "
        "stragglers tolerated, per variant.",
        lambda r, _: figures.scheme_map(r.iterations, r.workers, figures.partition_shares(r.metadata)),
        "Upload per message (gradients) against the stragglers tolerated, per variant (no workers.parquet: no load).",
    ),
)
ATTRIBUTION = (
    "Who slowed the run: per variant (last sweep point, first seed, first iterations), each worker's compute per "
    "partition over its iteration's median worker, the workers whose result ended an iteration marked; the title "
    "names the worker whose slowness cost the most (what-if replay, docs/attribution.md)."
)
SIM_VS_REAL = (
    "Simulated against measured iteration times: distributions, and a parity plot of means whose legend gives "
    "the simulation's relative error per variant."
)


FIGURES_FOLDER = "figures"  # the default output, inside the (first) run plotted: the repository's figures/ is -o


@dataclass
class Written:
    name: str
    caption: str
    files: list[Path]


def runs_to_plot(paths: list[Path], out: Path | None) -> tuple[list[Run], Path, list[str]]:
    """The runs named (default: the most recent, and its other mode's), loaded and checked before anything is
    drawn; where their figures go (default: RUN/figures, beside the first); and the notes to tell about them."""
    paths = paths or latest_runs()
    out = out if out is not None else Path(paths[0]) / FIGURES_FOLDER
    runs = load_runs(paths, out)  # every damaged file is refused before anything is drawn
    return runs, out, [note for run in runs for note in run.notes()] + pairing_notes(runs)


def load_runs(paths: list[Path], out: Path) -> list[Run]:
    """Load and check every run, refusing two whose figures would share file names in out."""
    runs = [load_run(Path(p)) for p in paths]
    for run in runs:
        require_columns(run.iterations, [*ITERATION_COLUMNS, *run.sweep_columns], "iterations", run.path)
        if run.workers is not None:
            require_columns(run.workers, list(WORKER_COLUMNS), "workers", run.path)
    check_distinct(runs, out)
    return runs


def plot_runs(
    paths: list[Path], out: Path, formats: tuple[str, ...] = ("png", "pdf"), target: float | None = None
) -> tuple[list[Run], list[Written]]:
    """Render every figure for every run (and simulated-vs-real pairs); return what was written.

    ``target`` is the test accuracy whose time-to-reach is marked (default: the scenario's
    ``training.target_accuracy``, else 90% of the best reached).
    """
    runs = load_runs(paths, out)
    return runs, draw_runs(runs, out, formats, target)


def draw_runs(runs: list[Run], out: Path, formats: tuple[str, ...], target: float | None,
              attributions: dict[Path, pd.DataFrame] | None = None) -> list[Written]:  # fmt: skip
    """Render the figures of loaded runs into out; ``attributions`` (per run's path, its attribution table,
    gcbench/twin/attribution.py): the runs whose attribution figure is drawn, its panels titled from the table."""
    style.apply()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for run in runs:
        for spec in FIGURES:
            fig = spec.draw(run, run_target(run.iterations, run.metadata, target))
            if fig is not None:
                caption = spec.caption
                if run.workers is None and spec.caption_without_workers is not None:
                    caption = spec.caption_without_workers
                written.append(save_figure(fig, out / f"{run.stem}-{spec.name}", formats, _caption(caption, run)))
        table = (attributions or {}).get(run.path)  # none: the run cannot be attributed (plot said why)
        fig = None if table is None else attribution_figure(run.iterations, run.workers, table)
        if fig is not None:
            written.append(save_figure(fig, out / f"{run.stem}-attribution", formats, _caption(ATTRIBUTION, run)))
    for sims, reals in comparisons(runs):
        measured = {name: real.iterations for name, real in reals.items()}
        named = {simulation_name(sim, list(reals.values()), len(sims)): rows for sim, rows in sims}
        named = dict(sorted(named.items(), key=lambda item: not item[0].endswith(", paired")))  # (paired first)
        (first, rows), *others = named.items()
        fig = figures.sim_vs_real(rows, measured, first, dict(others))
        if fig is not None:
            caption = SIM_VS_REAL
            for run in (*(sim for sim, _ in sims), *reals.values()):
                caption = _caption(caption, run)
            simulations, measurements = (sim.stem for sim, _ in sims), (real.stem for real in reals.values())
            stem = f"{'-and-'.join(simulations)}-vs-{'-and-'.join(measurements)}"
            written.append(save_figure(fig, out / stem, formats, caption))
    return written


def simulation_name(sim: Run, reals: list[Run], count: int) -> str:
    """'simulated' or 'calibrated simulation' (a scenario gcbench calibrate wrote), with ', paired' where it ran
    the measured runs' seeds and iterations (its injected draws are theirs), and, beside another simulation, its
    length otherwise ('calibrated simulation, 5000 iterations')."""
    name = "calibrated simulation" if sim.metadata.get("scenario", {}).get("calibrated_from") else "simulated"
    iterations = int(sim.iterations.groupby(["variant", "seed"]).size().max())
    seeds = sorted(sim.iterations["seed"].unique().tolist())
    paired = all(
        sorted(real.iterations["seed"].unique().tolist()) == seeds
        and int(real.iterations.groupby(["variant", "seed"]).size().max()) == iterations
        for real in reals
    )
    if paired:
        return f"{name}, paired"
    return f"{name}, {iterations} iterations" if count > 1 else name


def pairs(runs: list[Run]) -> list[tuple[Run, Run, pd.DataFrame | None]]:
    """Each simulated and real run of one scenario, with the simulated rows comparable to the real ones."""
    return [
        (sim, real, comparable_rows(sim, real))
        for sim in runs
        if sim.mode == "sim"
        for real in runs
        if real.mode == "real" and real.scenario_name == sim.scenario_name
    ]


def comparisons(runs: list[Run]) -> list[tuple[list[tuple[Run, pd.DataFrame]], dict[str, Run]]]:
    """The simulated runs of a scenario with every real run of it that they can be compared with, by name (their
    backend; their directory's name where two share one), for one figure that puts them all side by side: a
    paired and a long-run simulation beside the measurement, or one measurement on two backends.

    The simulated rows are those at the real runs' sweep point (real runs at different points: one figure
    per point)."""
    found: dict[tuple[str, tuple[int, ...]], tuple[dict[int, tuple[Run, pd.DataFrame]], list[Run]]] = {}
    by_sim: dict[tuple[int, int], tuple[Run, list[Run], pd.DataFrame]] = {}
    for sim, real, rows in pairs(runs):
        if rows is not None:
            by_sim.setdefault((id(sim), comparable_point(sim, real)), (sim, [], rows))[1].append(real)
    for sim, reals, rows in by_sim.values():  # simulations compared with the same real runs share a figure
        sims, _ = found.setdefault((sim.scenario_name, tuple(id(r) for r in reals)), ({}, reals))
        sims[id(sim)] = (sim, rows)
    return [(list(sims.values()), _by_name(reals)) for sims, reals in found.values()]


def _by_name(reals: list[Run]) -> dict[str, Run]:
    backends = [str(real.metadata.get("backend", "measured")) for real in reals]
    if len(reals) == 1:
        return {"measured": reals[0]}
    unique = len(set(backends)) == len(backends)
    return {(backend if unique else real.label): real for backend, real in zip(backends, reals, strict=True)}


ALL_POINTS = -1  # a simulation of one sweep point: its rows are all comparable


def comparable_rows(sim: Run, real: Run) -> pd.DataFrame | None:
    """The simulated rows at the sweep point the real run's scenario is at (all of them without a sweep)."""
    point = comparable_point(sim, real)
    if point is None or point == ALL_POINTS:
        return None if point is None else sim.iterations
    return sim.iterations[sim.iterations["point"] == point]


def comparable_point(sim: Run, real: Run) -> int | None:
    """The simulated sweep point whose values the real run's scenario has, ``ALL_POINTS`` when the simulation
    has one point only, or None."""
    points = sim.metadata.get("sweep_points") or [{}]
    if len(points) == 1:
        return ALL_POINTS
    scenario = real.metadata.get("scenario", {})
    for index, values in enumerate(points):
        if all(_at_path(scenario, path) == value for path, value in values.items()):
            return index
    return None


def pairing_notes(runs: list[Run]) -> list[str]:
    return [
        f"no sweep point of {sim.path} has the values of {real.path}'s scenario: no simulated-against-measured figure"
        for sim, real, rows in pairs(runs)
        if rows is None
    ]


def _at_path(tree: dict, path: str):
    for key in path.split("."):
        tree = tree.get(key) if isinstance(tree, dict) else None
    return tree


def _caption(caption: str, run: Run) -> str:
    return f"{caption} ({run.label}: {run.partial})" if run.partial else caption


# no creation date in vector files, so the same results give the same bytes
REPRODUCIBLE = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}


def save_figure(fig: Figure, stem: Path, formats: tuple[str, ...], caption: str) -> Written:
    files = []
    for fmt in formats:
        path = stem.parent / f"{stem.name}.{fmt}"  # not with_suffix: a run's name may hold a dot
        fig.savefig(path, metadata=REPRODUCIBLE.get(fmt))
        files.append(path)
    return Written(stem.name, caption, files)
