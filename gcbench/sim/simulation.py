"""A `gcbench simulate` run, from the scenario file to its results directory.

The command parses and prints; this module does the rest: load and check the
scenario as the run would (up to the engine of each variant), choose the
results directory, stream every task's tables into it (runner.py), then write
``run.json`` and ``summary.csv``. What the command prints comes back in a
``Simulated``. Preparing and running are apart, so that the command can make
the environment ready between them (the [real] extra for a scenario that
trains, a Ray instance for ``--ray``: real mode's, which this layer may not
import) and draw the progress bar around the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from gcbench.errors import GcbenchError
from gcbench.models.traces import TraceCleaning, cleaned_trace
from gcbench.results.metadata import new_run_directory, run_metadata
from gcbench.results.store import check_out, write_metadata
from gcbench.scenario import load_scenario
from gcbench.scenario.build import partition_shares
from gcbench.scenario.loading import SweepPoint
from gcbench.sim.runner import engines, link_model, refuse_certain_stops, stream_points, task_count

RESULTS_ROOT = Path("results")  # where a run without --out gets a directory of its own


@dataclass(frozen=True)
class Simulated:
    """What a finished simulation wrote and what its command prints."""

    out: Path
    points: list[SweepPoint]
    summary: pd.DataFrame
    engines: dict[str, str]  # variant label -> the engine that ran it
    link: str | None  # the event engine's shared link model, where one ran
    rows: int  # iterations simulated
    seconds: float  # wall-clock seconds the tasks took


@dataclass(frozen=True)
class Simulation:
    """A simulation checked and ready to run: its scenario file, sweep points, engines and results directory."""

    path: Path
    points: list[SweepPoint]
    engines: dict[str, str]
    out: Path

    @property
    def tasks(self) -> int:
        return task_count(self.points)

    def run(
        self,
        jobs: int | None = None,
        with_workers: bool = True,
        progress: Callable[[int], None] | None = None,
        ray_cluster: str | None = None,
    ) -> Simulated:
        """Every task, its tables streamed into ``out``; then run.json and summary.csv. ``ray_cluster``: the
        tasks run on the Ray instance this process has joined, and run.json records it (an address, or local)."""
        began = time.perf_counter()
        running = stream_points(self.points, self.out, jobs, with_workers, progress, on_ray=ray_cluster is not None)
        scenario = self.points[0].scenario
        summary = running.summary(scenario.training.target_accuracy)
        elapsed = time.perf_counter() - began
        extra = {"backend": "simulator", "engines": self.engines, "wall_seconds": round(elapsed, 3),
                 "partition_shares": partition_shares(scenario)}  # fmt: skip
        extra.update(trace_cleaning(self.points))
        if (link := link_model(self.points, self.engines)) is not None:  # the event engine's model of a shared link
            extra["link_model"] = link
        if ray_cluster is not None:
            extra["ray_cluster"] = ray_cluster
        write_metadata(self.out, run_metadata("sim", self.path, self.points, extra))
        summary.to_csv(self.out / "summary.csv", index=False)
        return Simulated(self.out, self.points, summary, self.engines, link, running.rows, elapsed)


def load_simulation(path: Path, overrides: dict[str, Any], out: Path | None, force: bool) -> list[SweepPoint]:
    """The scenario's sweep points, ``overrides`` applied as the file would be; ``out`` checked (a directory that
    holds results is overwritten only with ``force``)."""
    points = load_scenario(path, overrides)
    if out is not None:
        check_out(out, force)
    return points


def plan_simulation(path: Path, points: list[SweepPoint], out: Path | None) -> Simulation:
    """Refuse what the simulator cannot run before any work (a real-only policy, a variant its engine cannot
    run), and choose the results directory: ``out``, or a new one under results/."""
    refuse_real_only(points[0].scenario)
    chosen = engines(points)  # before any work: an engine that cannot run a variant is the user's error
    return Simulation(path, points, chosen, out or new_run_directory(RESULTS_ROOT, points[0].scenario.name))


def check_simulation(path: Path, overrides: dict[str, Any] | None = None) -> list[SweepPoint]:
    """Validate as a run would, up to the engine of each variant (a variant its engine cannot run is refused
    here, as the run would refuse it, and so is a run the scenario alone shows can never finish, in the run's
    sentence); the sweep points, for the command to describe."""
    points = load_scenario(path, overrides)
    engines(points)
    refuse_certain_stops(points)
    return points


def trains_in_simulator(points: list[SweepPoint]) -> bool:
    return any(point.scenario.training.in_simulator for point in points)


def refuse_real_only(scenario) -> None:
    """A policy no master runs (allreduce: DistributedDataParallel) has no simulated counterpart to give."""
    for i, variant in enumerate(scenario.variants):
        if variant.policy.real_only:
            raise GcbenchError(
                f"variants[{i}].policy: {variant.policy.name} is DistributedDataParallel's all-reduce, which only "
                "gcbench run trains (the simulator models a master, not a ring of ranks); simulate scheme: uncoded "
                "with policy: wait_all for the same synchronous SGD, or drop the variant."
            )


def cleanings(points: list[SweepPoint]) -> dict[str, TraceCleaning]:
    """What the trace policies did, per trace file replayed (empty without a trace)."""
    found: dict[str, TraceCleaning] = {}
    for point in points:
        trace = point.scenario.compute.trace
        if trace is not None and trace.path not in found:
            found[trace.path] = cleaned_trace(trace, point.scenario.workers)[1]
    return found


def trace_cleaning(points: list[SweepPoint]) -> dict[str, Any]:
    """run.json's ``trace_cleaning``: the counts per trace file, when a trace is replayed."""
    found = cleanings(points)
    return {"trace_cleaning": {path: c.as_dict() for path, c in found.items()}} if found else {}
