"""`gcbench simulate`: the check, or the simulation with its progress bar and summary (gcbench/sim/simulation.py
loads, checks, runs and writes it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gcbench.cli.console import ForceOption, SeedsOption, SetOption, user_errors, wide_console
from gcbench.cli.simulation import check_scenario, simulate_scenario
from gcbench.errors import GcbenchError


@user_errors
def simulate(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML file.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Results directory (default: a new one under results/).")
    ] = None,
    check: Annotated[bool, typer.Option("--check", help="Validate the scenario and exit.")] = False,
    jobs: Annotated[int | None, typer.Option("--jobs", min=1, help="Parallel processes (default: automatic).")] = None,
    workers_table: Annotated[
        bool, typer.Option("--workers-table/--no-workers-table", help="Write workers.parquet.")
    ] = True,
    iterations: Annotated[int | None, typer.Option("--iterations", help="Override the scenario's.")] = None,
    seeds: SeedsOption = None,
    sets: SetOption = None,
    force: ForceOption = False,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            metavar="auto|event|vectorised",
            help="Override the scenario's engine: event (the master on SimPy), vectorised, or auto.",
        ),
    ] = None,
    ray: Annotated[
        bool, typer.Option("--ray", help="Run the tasks on Ray: a local instance, or the cluster at --address.")
    ] = False,
    address: Annotated[
        str | None, typer.Option("--address", metavar="HOST:PORT", help="With --ray: an existing Ray cluster.")
    ] = None,
    emulate: Annotated[
        int | None,
        typer.Option(
            "--emulate",
            metavar="NODES",
            min=2,
            help="With --ray: run the tasks on NODES Ray nodes emulated on this machine (each in a network "
            "namespace of its own, no root); the results are bit for bit a local run's. (Not the scenario's "
            "topology: gcbench run --emulate builds that.)",
        ),
    ] = None,
) -> None:
    """Simulate a scenario: every variant, seed and sweep point; print the summary and write results."""
    from gcbench.scenario.overrides import command_line

    check_ray_options(ray, address, jobs)  # before anything: a missing Ray costs one sentence
    if emulate is not None:
        emulated_tasks(emulate, ray, address, check)
    console = wide_console()
    overrides = command_line(sets, seeds, iterations, engine=engine)
    if check:
        check_scenario(scenario, console, overrides)
        return
    on_ray = {"address": address} if ray else None
    simulate_scenario(scenario, out, jobs, workers_table, console, overrides=overrides, force=force, ray=on_ray)


def emulated_tasks(nodes: int, ray: bool, address: str | None, check: bool) -> None:
    """--emulate outside the emulated cluster: check what it needs, then run this command again inside its node 0,
    where the tasks' Ray spans the nodes, and exit as that run did. Inside it, the run goes on here."""
    import sys

    from gcbench.real.emulation import NodeSpec, require_namespaces
    from gcbench.real.run.emulated import inside_emulation, run_inside

    if inside_emulation() is not None:
        return
    if not ray:
        raise GcbenchError(f"--emulate {nodes} runs the tasks on Ray nodes of an emulated cluster; add --ray.")
    if address is not None:
        raise GcbenchError(f"--emulate builds a cluster on this machine, and --address {address} joins another; "
                           "drop one.")  # fmt: skip
    require_namespaces()
    if not check:
        raise SystemExit(run_inside([NodeSpec() for _ in range(nodes)], sys.argv[1:]))


def check_ray_options(ray: bool, address: str | None, jobs: int | None) -> None:
    """--address and --jobs are refused where they would be ignored; --ray needs Ray, from the [real] extra."""
    if address is not None and not ray:
        raise GcbenchError(f"--address {address} is the Ray cluster to run the tasks on; add --ray, or drop it.")
    if ray and jobs is not None:
        raise GcbenchError("--jobs sets the processes on this machine, and with --ray Ray runs the tasks; drop one.")
    if ray:
        from gcbench.real.run.requirements import INSTALL, missing_real_modules

        if "ray" in missing_real_modules():
            raise GcbenchError(
                f"--ray needs Ray, part of the [real] extra (ray cannot be imported): install it with {INSTALL}, or "
                "drop --ray to run the tasks in processes on this machine."
            )
