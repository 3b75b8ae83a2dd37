"""What `gcbench run` does: the scenario's variants trained for real (or simulated with --sim)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from gcbench.errors import GcbenchError
from gcbench.results import summarize, write_results
from gcbench.results.metadata import new_run_directory, run_metadata
from gcbench.scenario import load_scenario
from gcbench.scenario.build import scheme_for
from gcbench.scenario.loading import SweepPoint, with_overrides
from gcbench.scenario.schema import Scenario


def real_points(path: Path, iterations: int | None, training: dict[str, Any]) -> list[SweepPoint]:
    points = load_scenario(path)
    if len(points) > 1:
        raise GcbenchError(f"{path}: real runs do not sweep; remove 'sweep' or simulate it with --sim.")
    changes = {f"training.{key}": value for key, value in training.items() if value is not None}
    if iterations is not None:
        changes["iterations"] = iterations
    scenario = with_overrides(points[0].scenario, path, changes) if changes else points[0].scenario
    check_real(scenario, path)
    return [SweepPoint({}, scenario)]


def check_real(scenario: Scenario, path: Path) -> None:
    """What real mode needs beyond a valid scenario: equal partitions, and data options that apply."""
    training = scenario.training
    if training.dataset == "synthetic" and training.data_dir:
        raise GcbenchError(f"{path}: training.data_dir ({training.data_dir}) is for cifar10; the dataset is synthetic.")
    partitions_of = [(f"variant '{v.display_label()}'", scheme_for(scenario, v).k) for v in scenario.variants]
    for label, partitions in partitions_of + [("the local backend", scenario.workers)]:
        if training.batch_size % partitions:
            fit = max(partitions, round(training.batch_size / partitions) * partitions)
            raise GcbenchError(
                f"{path}: training.batch_size ({training.batch_size}) must be a multiple of the {partitions} data "
                f"partitions of {label}, so each partition gets as many samples; use {fit}, for example."
            )


def resume_points(run_dir: Path) -> tuple[Path, list[SweepPoint], str]:
    """The scenario file, scenario (as it ran) and backend of an interrupted run."""
    meta_path = run_dir / "run.json"
    if not meta_path.is_file():
        raise GcbenchError(f"--resume {run_dir}: not a real-run directory (no run.json).")
    meta = json.loads(meta_path.read_text())
    if meta.get("mode") != "real":
        raise GcbenchError(f"--resume {run_dir}: only real runs resume; this one is '{meta.get('mode')}'.")
    scenario = Scenario.model_validate(meta["scenario"])
    return Path(meta["scenario_file"]), [SweepPoint({}, scenario)], meta["backend"]


def run_real(
    path: Path,
    backend: str,
    out: Path | None,
    address: str | None,
    iterations: int | None,
    training: dict,
    console,
    resume: Path | None = None,
) -> Path:
    from gcbench.real.requirements import check_device
    from gcbench.real.runner import load_data, start_ray

    if resume is not None:
        path, points, backend = resume_points(resume)
        out = resume
    else:
        points = real_points(path, iterations, training)
    scenario = points[0].scenario
    check_device(scenario.training.device)  # before the data is read and Ray starts
    data = load_data(scenario)
    out = out or new_run_directory(Path("results"), f"{scenario.name}-real")
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text(json.dumps(run_metadata("real", path, points, {"backend": backend}), default=str))
    began = time.perf_counter()
    runs = [(None, seed) for seed in scenario.seeds] if backend == "local" else [
        (variant, seed) for variant in scenario.variants for seed in scenario.seeds
    ]  # fmt: skip
    if backend == "ray":
        start_ray(address)
    try:
        tables, workers, stopped = _train(scenario, runs, data, out, console)
    except KeyboardInterrupt:
        console.print(f"interrupted; the checkpoints are kept: continue with  gcbench run --resume {out}")
        raise SystemExit(130) from None
    if not tables:
        raise GcbenchError(f"no variant finished an iteration; nothing was written to {out} but run.json.")
    iterations = pd.concat(tables, ignore_index=True)
    meta = run_metadata(
        "real", path, points, {"backend": backend, "wall_seconds": round(time.perf_counter() - began, 3)}
    )
    write_results(out, iterations, pd.concat(workers, ignore_index=True) if workers else None, meta)
    summary = summarize(iterations)
    summary.to_csv(out / "summary.csv", index=False)
    from gcbench.cli_simulate import print_summary

    print_summary(summary, [], console)
    evaluated = iterations.dropna(subset=["accuracy"]).groupby("variant", sort=False)
    for variant, last in evaluated[["accuracy", "iteration"]].last().iterrows():
        console.print(f"{variant}: test accuracy {last['accuracy']:.1%} after {int(last['iteration']) + 1} iterations")
    console.print(f"results: {out}")
    if stopped:
        raise GcbenchError(
            f"{len(stopped)} variant(s) stopped early ({', '.join(stopped)}); "
            f"the iterations they finished are in {out}."
        )
    return out


def _train(scenario: Scenario, runs: list, data, out: Path, console) -> tuple[list, list, list[str]]:
    """Every (variant, seed) in turn, with a progress bar; a stopped variant keeps what it finished."""
    from gcbench.real.runner import VariantStopped, run_local, run_variant

    tables, workers, stopped = [], [], []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        for variant, seed in runs:
            label = "local" if variant is None else variant.display_label()
            task = bar.add_task(f"{label}, seed {seed}", total=scenario.iterations)
            tick = lambda done, task=task: bar.update(task, completed=done)  # noqa: E731
            if variant is None:
                frame, worker_frame = run_local(scenario, data, seed, tick)
            else:
                index = scenario.variants.index(variant)
                saved = out / "checkpoints" / f"variant{index}-seed{seed}.pt"
                try:
                    frame, worker_frame = run_variant(scenario, variant, data, seed, tick, saved)
                except VariantStopped as error:  # keep what it finished, and go on with the other variants
                    console.print(f"error: {error}")
                    stopped.append(label)
                    frame, worker_frame = error.iterations, error.workers
            if len(frame):
                tables.append(frame)
            if worker_frame is not None and len(worker_frame):
                workers.append(worker_frame)
    return tables, workers, stopped


def check_backend(backend: str) -> None:
    if backend not in ("ray", "local"):
        raise GcbenchError(f"--backend must be ray or local, got '{backend}'.")


def console() -> Console:
    from gcbench.cli_schemes import wide_console

    return wide_console()
