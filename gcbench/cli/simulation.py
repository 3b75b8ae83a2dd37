"""A simulation from the command line, for `gcbench simulate` and `gcbench run --sim`: gcbench/sim/simulation.py
loads, checks, runs and writes it; this module shows its progress bar, says what the scenario is and prints the
summary."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gcbench.cli.console import say
from gcbench.cli.summary import print_summary

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

    from gcbench.scenario.loading import SweepPoint


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
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from gcbench.sim.simulation import load_simulation, plan_simulation, trains_in_simulator

    changes = dict(overrides or {})
    if iterations is not None:
        changes["iterations"] = iterations
    points = load_simulation(path, changes, out, force)
    if trains_in_simulator(points):
        from gcbench.real.run.requirements import TRAINING_MODULES, require_real_extra

        require_real_extra(
            "scenarios that train in the simulator", "or set training.in_simulator: false", TRAINING_MODULES
        )
    simulation = plan_simulation(path, points, out)
    cluster = None if ray is None else start_tasks_ray(ray["address"], console)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(f"simulating {points[0].scenario.name}", total=simulation.tasks)
        done = simulation.run(  # the tables go to disk as each task finishes
            jobs,
            with_workers,
            lambda finished: bar.update(task, completed=finished),
            ray_cluster=cluster,
        )
    variants = [v for point in points for v in point.scenario.variants]
    from gcbench.scenario.describe import scenario_sentence

    say(console, scenario_sentence(points[0].scenario))
    print_summary(done.summary, list(points[0].values), console, variants)
    from gcbench.results.summary import interval_note

    if (note := interval_note(done.summary)) and note.startswith("95% CI n/a"):  # (why a column says n/a)
        console.print(note)
    print_trace_cleaning(points, console)
    console.print(engine_sentence(done.engines, done.link))
    console.print(f"results: {done.out}  ({done.rows} iterations simulated in {done.seconds:.1f} s)")
    return done.out, done.summary


def start_tasks_ray(address: str | None, console: Console) -> str:
    """Ray for the tasks: the cluster at ``address`` (token authentication as in real mode), a Ray node on each
    node of the emulated cluster this process runs in, or a local instance on the loopback interface; a process
    that has joined one already keeps it. What run.json's ``ray_cluster`` records: the address, "emulated:
    ADDRESSES", or "local"."""
    from gcbench.real.emulation import Nodes
    from gcbench.real.ray.start import start_ray

    nodes = Nodes.from_environment()
    if nodes is not None:  # inside an emulated cluster (gcbench simulate --ray --emulate): a Ray node on each node
        from gcbench.real.emulation.ray_nodes import start_ray_nodes

        address = start_ray_nodes(nodes)
    start_ray(address)
    if nodes is not None:
        where, recorded = f"{len(nodes.addresses)} emulated nodes ({', '.join(nodes.addresses)})", "emulated: "
        recorded += ", ".join(nodes.addresses)
    else:
        where = f"the cluster at {address}" if address else "a local instance"
        recorded = address or "local"
    console.print(f"tasks on Ray: {where}", highlight=False)
    return recorded


def engine_sentence(chosen: dict[str, str], link: str | None = None) -> str:
    """Which engine ran the variants, e.g. "engine: vectorised (3 variants), event (1 variant)", and the event
    engine's shared link model where one ran."""
    counts = {name: list(chosen.values()).count(name) for name in dict.fromkeys(chosen.values())}
    engines = ", ".join(f"{name} ({c} variant{'s' if c > 1 else ''})" for name, c in counts.items())
    return f"engine: {engines}" + ("" if link is None else f"; shared link model: {link}")


def check_scenario(path: Path, console: Console, overrides: dict[str, Any] | None = None) -> None:
    """Validate as a run would, up to the engine of each variant, and say what the scenario holds."""
    from gcbench.sim.simulation import check_simulation

    points = check_simulation(path, overrides)
    scenario = points[0].scenario
    console.print(
        f"{path}: valid — {scenario.workers} workers, {len(scenario.variants)} variants, "
        f"{len(points)} sweep point(s), {len(scenario.seeds)} seed(s), {scenario.iterations} iterations each."
    )
    print_trace_cleaning(points, console)


def print_trace_cleaning(points: list[SweepPoint], console: Console) -> None:
    from gcbench.sim.simulation import cleanings

    for path, cleaning in cleanings(points).items():
        console.print(f"trace {Path(path).name}: {cleaning.sentence()}.")
