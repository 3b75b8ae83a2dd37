"""What `gcbench simulate` shows: the check, the progress bar and the summary (gcbench/sim/simulation.py loads,
checks, runs and writes the simulation)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from gcbench.errors import GcbenchError
from gcbench.scenario.loading import SweepPoint
from gcbench.sim.simulation import (
    check_simulation,
    cleanings,
    load_simulation,
    plan_simulation,
    trains_in_simulator,
)


def check_scenario(path: Path, console: Console, overrides: dict[str, Any] | None = None) -> None:
    """Validate as a run would, up to the engine of each variant, and say what the scenario holds."""
    points = check_simulation(path, overrides)
    scenario = points[0].scenario
    console.print(
        f"{path}: valid — {scenario.workers} workers, {len(scenario.variants)} variants, "
        f"{len(points)} sweep point(s), {len(scenario.seeds)} seed(s), {scenario.iterations} iterations each."
    )
    print_trace_cleaning(points, console)


def simulate_scenario(
    path: Path,
    out: Path | None,
    jobs: int | None,
    with_workers: bool,
    console: Console,
    iterations: int | None = None,
    *,
    overrides: dict[str, Any] | None = None,
    force: bool = False,
    ray: dict[str, str | None] | None = None,
) -> tuple[Path, pd.DataFrame]:
    """Simulate and write results (gcbench/sim/simulation.py), with a progress bar; print the summary.

    ``iterations`` and ``overrides`` change the scenario as the file would. ``force``: overwrite the results
    already in ``out``. ``ray``: run the tasks on Ray, ``{"address": None}`` for a local instance (started here
    unless this process has joined one) or the cluster's address.
    """
    changes = dict(overrides or {})
    if iterations is not None:
        changes["iterations"] = iterations
    points = load_simulation(path, changes, out, force)
    if trains_in_simulator(points):
        from gcbench.real.requirements import require_real_extra

        require_real_extra("scenarios that train in the simulator", "or set training.in_simulator: false")
    simulation = plan_simulation(path, points, out)
    if ray is not None:
        start_tasks_ray(ray["address"], console)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(f"simulating {points[0].scenario.name}", total=simulation.tasks)
        done = simulation.run(  # the tables go to disk as each task finishes
            jobs,
            with_workers,
            lambda finished: bar.update(task, completed=finished),
            ray_cluster=None if ray is None else ray["address"] or "local",
        )
    print_summary(done.summary, list(points[0].values), console)
    print_trace_cleaning(points, console)
    console.print(engine_sentence(done.engines, done.link))
    console.print(f"results: {done.out}  ({done.rows} iterations simulated in {done.seconds:.1f} s)")
    return done.out, done.summary


def check_ray_options(ray: bool, address: str | None, jobs: int | None) -> None:
    """--address and --jobs are refused where they would be ignored; --ray needs Ray, from the [real] extra."""
    if address is not None and not ray:
        raise GcbenchError(f"--address {address} is the Ray cluster to run the tasks on; add --ray, or drop it.")
    if ray and jobs is not None:
        raise GcbenchError("--jobs sets the processes on this machine, and with --ray Ray runs the tasks; drop one.")
    if ray:
        from gcbench.real.requirements import INSTALL, missing_real_modules

        if "ray" in missing_real_modules():
            raise GcbenchError(
                f"--ray needs Ray, part of the [real] extra (ray cannot be imported): install it with {INSTALL}, or "
                "drop --ray to run the tasks in processes on this machine."
            )


def start_tasks_ray(address: str | None, console: Console) -> None:
    """Ray for the tasks: the cluster at ``address`` (token authentication as in real mode), or a local instance
    on the loopback interface; a process that has joined one already keeps it."""
    from gcbench.real.ray.start import start_ray

    start_ray(address)
    console.print(f"tasks on Ray: {f'the cluster at {address}' if address else 'a local instance'}", highlight=False)


def engine_sentence(chosen: dict[str, str], link: str | None = None) -> str:
    """Which engine ran the variants, e.g. "engine: vectorised (3 variants), event (1 variant)", and the event
    engine's shared link model where one ran."""
    counts = {name: list(chosen.values()).count(name) for name in dict.fromkeys(chosen.values())}
    engines = ", ".join(f"{name} ({c} variant{'s' if c > 1 else ''})" for name, c in counts.items())
    return f"engine: {engines}" + ("" if link is None else f"; shared link model: {link}")


def print_summary(summary: pd.DataFrame, sweep_columns: list[str], console: Console) -> None:
    for _, rows in summary.groupby("point", sort=True):
        where = ", ".join(f"{c} = {rows[c].iloc[0]}" for c in sweep_columns)
        stale = bool((rows["staleness"] > 0).any())
        table = Table(title=f"iteration time (s){f' at {where}' if where else ''}")
        names = ["variant", "mean", "95% CI", "p50", "p99", "speedup", "exact"] + (["staleness"] if stale else [])
        for name in names + training_headings(rows):
            table.add_column(name, justify="left" if name == "variant" else "right")
        for row in rows.itertuples():
            interval = f"[{row.ci_low:.4g}, {row.ci_high:.4g}]" if pd.notna(row.ci_low) else "n/a"
            cells = [row.variant, f"{row.mean:.4g}", interval, f"{row.p50:.4g}", f"{row.p99:.4g}"]
            speedup = f"{row.speedup:.2f}x" if pd.notna(row.speedup) else "n/a"
            cells += [speedup, f"{row.exact_share:.0%}"] + ([f"{row.staleness:.2f}"] if stale else [])
            table.add_row(*cells, *training_cells(row))
        console.print(table)
        if "final_loss" in rows.columns:
            console.print(TRAINED_NOTE + (TARGET_NOTE if "time_to_target" in rows.columns else ""))
        if stale:
            console.print(
                "Asynchronous policies: an iteration is one model update from k results, "
                "and staleness is how many updates old the used results were on average; "
                "their speedup over synchronous iterations is not comparable (n/a). "
                "Pipelined schemes: staleness is the mean age, in steps, of the oldest cached partition gradient "
                "a decode used."
            )


TRAINED_NOTE = "Final loss and test accuracy: each seed's last, averaged over the seeds."
TARGET_NOTE = (
    " Time to the target: seconds on the run's clock (simulated, or wall-clock for a real run) to the first test "
    "evaluation reaching it, averaged over the seeds that did."
)


def training_headings(rows: pd.DataFrame) -> list[str]:
    """The summary's training columns, for a run that trained: final loss and accuracy, time to the target."""
    if "final_loss" not in rows.columns:
        return []
    target = [f"time to {rows['target_accuracy'].iloc[0]:.1%}"] if "time_to_target" in rows.columns else []
    return ["final loss", "final accuracy", *target]


def training_cells(row) -> list[str]:
    if not hasattr(row, "final_loss"):
        return []
    accuracy = f"{row.final_accuracy:.1%}" if pd.notna(row.final_accuracy) else "n/a"
    cells = [f"{row.final_loss:.4g}", accuracy]
    if hasattr(row, "time_to_target"):
        cells.append(time_to_target_cell(row))
    return cells


def time_to_target_cell(row) -> str:
    """'1.234 s', '1.234 s (2 of 3 seeds)' or 'not reached' (in the run's clock: simulated seconds here)."""
    if not row.target_reached:
        return "not reached"
    seeds = "" if row.target_reached == row.seeds else f" ({row.target_reached} of {row.seeds} seeds)"
    return f"{row.time_to_target:.4g} s{seeds}"


def print_trace_cleaning(points: list[SweepPoint], console: Console) -> None:
    for path, cleaning in cleanings(points).items():
        console.print(f"trace {Path(path).name}: {cleaning.sentence()}.")
