"""Run every (sweep point, variant, seed) of a scenario, streaming its results tables to Parquet.

Each task's tables go to the files as it finishes (gcbench/results/stream.py),
so memory holds one task, not the run; the summary is gathered as they go.
Tasks are independent and each is seeded only by its seed, so running them in
parallel processes gives the same numbers, bit for bit, as running them in turn
(their parts are appended in task order); so does running them as Ray tasks
(``--ray``: gcbench/sim/ray_tasks.py), whose parts come back and are appended the same way.
A scenario that trains in the simulator gets the loss and accuracy columns. Its
tasks run in turn unless ``jobs`` says otherwise: measured on the two shared
cores, two processes took longer than one (each imports torch and builds the
data again). Worker processes are forked, unless this process has imported
torch already: then they are spawned, as a forked child of a process whose
torch ran multi-threaded work hangs in its own first one (seen here: a 2-thread
matmul in the parent, then one in the child).
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

from gcbench.results.arrow import value_types
from gcbench.results.messages import sends_several
from gcbench.results.stream import ResultsWriter
from gcbench.results.summary import RunningSummary
from gcbench.scenario.build import scheme_for
from gcbench.scenario.loading import SweepPoint
from gcbench.sim.ray_tasks import in_ray
from gcbench.sim.tasks import Tables, Task, append_part, run_part, write_task

PARALLEL_THRESHOLD = 2_000_000  # worker-iterations below which process start-up costs more than it saves


def stream_points(
    points: list[SweepPoint],
    out: Path,
    jobs: int | None = None,
    with_workers: bool = True,
    progress: Callable[[int], None] | None = None,
    on_ray: bool = False,
) -> RunningSummary:
    """Every task of every sweep point, its tables written into ``out`` as it finishes (in task order);
    returns what the summary needs. A run that fails leaves no table behind (nor ``out``, if it made it).

    ``on_ray``: the tasks run as Ray tasks on the instance this process has joined (gcbench/sim/ray_tasks.py),
    whatever ``jobs`` says."""
    tasks = [
        (i, Task(i, v, seed))
        for i, point in enumerate(points)
        for v in range(len(point.scenario.variants))
        for seed in point.scenario.seeds
    ]
    trains = any(point.scenario.training.in_simulator for point in points)
    several = with_workers and any(
        sends_several(scheme_for(p.scenario, v)) for p in points for v in p.scenario.variants
    )
    tables = Tables(value_types(p.values for p in points), trains, with_workers, several)
    made = not out.exists()
    writer = ResultsWriter(out, with_workers, with_messages=several)
    running = RunningSummary(list(points[0].values))
    try:
        if on_ray:
            in_ray(points, tasks, tables, writer, running, progress)
        elif _jobs(points, tasks, jobs, trains) <= 1 or len(tasks) == 1:
            for done, (i, task) in enumerate(tasks, start=1):
                running.add_task(*write_task(points[i], i, task, tables, writer))
                if progress:
                    progress(done)
        else:
            _in_processes(points, tasks, tables, writer, running, _jobs(points, tasks, jobs, trains), progress)
    except BaseException:
        writer.abort()
        if made:
            shutil.rmtree(out, ignore_errors=True)
        raise
    writer.close()
    return running


def _in_processes(points, tasks, tables: Tables, writer: ResultsWriter, running: RunningSummary, jobs, progress):
    context = multiprocessing.get_context("spawn") if tables.trained and "torch" in sys.modules else None
    with tempfile.TemporaryDirectory(prefix=".parts-", dir=writer.directory) as parts:
        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=context) as pool:
            futures = [
                pool.submit(run_part, points[i], i, task, tables, Path(parts) / f"task{k}")
                for k, (i, task) in enumerate(tasks)
            ]
            for done, future in enumerate(futures, start=1):
                append_part(writer, running, future.result())
                if progress:
                    progress(done)


def _jobs(points: list[SweepPoint], tasks: list, jobs: int | None, trains: bool) -> int:
    if jobs is not None:
        return jobs
    size = sum(points[i].scenario.iterations * points[i].scenario.workers for i, _ in tasks)
    return (os.cpu_count() or 1) if size >= PARALLEL_THRESHOLD and not trains else 1


def simulate_points(
    points: list[SweepPoint],
    jobs: int | None = None,
    with_workers: bool = True,
    progress: Callable[[int], None] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """All tasks of all sweep points, as the frames pandas reads from their files (streamed to a temporary
    folder: the tables a run writes, for tests and small studies held in memory)."""
    with tempfile.TemporaryDirectory(prefix="gcbench-") as folder:
        stream_points(points, Path(folder), jobs, with_workers, progress)
        iterations = pd.read_parquet(Path(folder) / "iterations.parquet")
        workers = pd.read_parquet(Path(folder) / "workers.parquet") if with_workers else None
    return iterations, workers


def engines(points: list[SweepPoint]) -> dict[str, str]:
    """Which engine ran each variant (run.json's ``engines``); raises when a variant's engine cannot run it."""
    from gcbench.sim.engines import engine_for

    return {v.display_label(): engine_for(p.scenario, v) for p in points for v in p.scenario.variants}


def refuse_certain_stops(points: list[SweepPoint]) -> None:
    """Raise the run's own "can never finish" error, word for word, for the first variant (in task order) that
    the scenario alone shows can never finish (gcbench.master.outcome.certainly_stuck)."""
    from gcbench.master.outcome import certainly_stuck
    from gcbench.scenario.build import placed

    for point in points:
        for variant in point.scenario.variants:
            scheme = scheme_for(point.scenario, variant)
            stuck = certainly_stuck(placed(point.scenario, scheme), variant, scheme)
            if stuck is not None:
                raise stuck


def link_model(points: list[SweepPoint], chosen: dict[str, str]) -> str | None:
    """The event engine's model of the shared link (run.json's ``link_model``), where a shared link ran on it;
    the vectorised engine's link is closed-form, the same times."""
    if "event" not in chosen.values():
        return None
    models = {p.scenario.network.link_model for p in points if p.scenario.network.shared_link}
    return ", ".join(sorted(models)) or None


def task_count(points: list[SweepPoint]) -> int:
    return sum(len(p.scenario.variants) * len(p.scenario.seeds) for p in points)
