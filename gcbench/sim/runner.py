"""Run every (sweep point, variant, seed) of a scenario and gather the results tables.

Tasks are independent and each is seeded only by its seed, so running them in
parallel processes gives the same numbers, bit for bit, as running them in turn.
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
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gcbench.results.rows import identity, table_columns
from gcbench.scenario.build import scheme_for
from gcbench.scenario.loading import SweepPoint

PARALLEL_THRESHOLD = 2_000_000  # worker-iterations below which process start-up costs more than it saves


@dataclass(frozen=True)
class Task:
    point: int
    variant: int
    seed: int


def run_task(point: SweepPoint, index: int, task: Task, with_workers: bool) -> tuple[dict, dict | None]:
    """Simulate one variant at one sweep point with one seed; return column dicts of both tables."""
    from gcbench.sim.event import engine_for, simulate_with

    scenario = point.scenario
    variant = scenario.variants[task.variant]
    scheme = scheme_for(scenario, variant)
    rec = simulate_with(engine_for(scenario, variant), scenario, variant, scheme, task.seed)
    keys = identity(variant.display_label(), variant.scheme, variant.s, scheme.m, variant.policy.name, task.seed,
                    point=index, values=point.values)  # fmt: skip
    loads = np.array([len(scheme.partitions(w)) for w in range(scenario.workers)]) if with_workers else None
    iterations, workers = table_columns(rec, keys, loads, trained=scenario.training.in_simulator)
    return iterations, workers


def simulate_points(
    points: list[SweepPoint],
    jobs: int | None = None,
    with_workers: bool = True,
    progress: Callable[[int], None] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """All tasks of all sweep points; ``progress(done)`` is called as tasks finish."""
    tasks = [
        (i, Task(i, v, seed))
        for i, point in enumerate(points)
        for v in range(len(point.scenario.variants))
        for seed in point.scenario.seeds
    ]
    size = sum(points[i].scenario.iterations * points[i].scenario.workers for i, _ in tasks)
    trains = any(point.scenario.training.in_simulator for point in points)
    jobs = jobs if jobs is not None else (os.cpu_count() or 1) if size >= PARALLEL_THRESHOLD and not trains else 1
    results: list[tuple[dict, dict | None]] = []
    if jobs <= 1 or len(tasks) == 1:
        for done, (i, task) in enumerate(tasks, start=1):
            results.append(run_task(points[i], i, task, with_workers))
            if progress:
                progress(done)
    else:
        context = multiprocessing.get_context("spawn") if trains and "torch" in sys.modules else None
        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=context) as pool:
            futures = [pool.submit(run_task, points[i], i, task, with_workers) for i, task in tasks]
            for done, future in enumerate(futures, start=1):
                results.append(future.result())
                if progress:
                    progress(done)
    iterations = pd.concat([pd.DataFrame(r[0]) for r in results], ignore_index=True)
    workers = pd.concat([pd.DataFrame(r[1]) for r in results], ignore_index=True) if with_workers else None
    return iterations, workers


def engines(points: list[SweepPoint]) -> dict[str, str]:
    """Which engine ran each variant (run.json's ``engines``); raises when a variant's engine cannot run it."""
    from gcbench.sim.event import engine_for

    return {v.display_label(): engine_for(p.scenario, v) for p in points for v in p.scenario.variants}


def task_count(points: list[SweepPoint]) -> int:
    return sum(len(p.scenario.variants) * len(p.scenario.seeds) for p in points)
