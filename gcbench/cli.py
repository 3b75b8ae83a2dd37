"""The `gcbench` command: parses arguments, calls the library, prints. Nothing else."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from gcbench.errors import GcbenchError

app = typer.Typer(
    help="Benchmark gradient coding and aggregation policies for straggler-tolerant training.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def user_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Print an error a user caused as one sentence and exit with code 2."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except GcbenchError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(code=2) from None

    return wrapper


def _print_version(value: bool) -> None:
    if value:
        from gcbench import __version__

        typer.echo(f"gcbench {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Benchmark gradient coding and aggregation policies for straggler-tolerant training."""


@app.command()
@user_errors
def schemes(
    name: Annotated[str | None, typer.Argument(help="Show one scheme instance instead of the table.")] = None,
    n: Annotated[int, typer.Option("--n", help="Workers.")] = 12,
    s: Annotated[int, typer.Option("--s", help="Stragglers tolerated.")] = 1,
    m: Annotated[int | None, typer.Option("--m", help="Slices per gradient (cce_cr, cce_fr).")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of a randomized construction (cr).")] = None,
) -> None:
    """List the registered gradient-coding schemes, or show one instance in detail."""
    from gcbench.cli_schemes import print_scheme, print_scheme_table

    if name is None:
        print_scheme_table()
        return
    params = {key: value for key, value in {"m": m, "seed": seed}.items() if value is not None}
    print_scheme(name, n, s, params)


@app.command()
@user_errors
def simulate(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML file.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Results directory (default: a new one under results/).")
    ] = None,
    check: Annotated[bool, typer.Option("--check", help="Validate the scenario and exit.")] = False,
    jobs: Annotated[int | None, typer.Option("--jobs", help="Parallel processes (default: automatic).")] = None,
    workers_table: Annotated[
        bool, typer.Option("--workers-table/--no-workers-table", help="Write workers.parquet.")
    ] = True,
) -> None:
    """Simulate a scenario: every variant, seed and sweep point; print the summary and write results."""
    from gcbench.cli_schemes import wide_console
    from gcbench.cli_simulate import check_scenario, simulate_scenario

    console = wide_console()
    if check:
        check_scenario(scenario, console)
        return
    simulate_scenario(scenario, out, jobs, workers_table, console)


@app.command()
@user_errors
def plot(
    runs: Annotated[list[Path] | None, typer.Argument(help="Results directories (default: the most recent).")] = None,
    out: Annotated[Path, typer.Option("-o", "--out", help="Where to write the figures.")] = Path("figures"),
    report: Annotated[bool, typer.Option("--report", help="Also write a Markdown and an HTML report.")] = False,
    vector: Annotated[str, typer.Option("--vector", help="Vector format beside each PNG: pdf or svg.")] = "pdf",
    target_accuracy: Annotated[
        float | None, typer.Option("--target-accuracy", help="Accuracy to time (default: 90% of the best reached).")
    ] = None,
) -> None:
    """Draw the figures of results directories: simulated, real, or both side by side."""
    from gcbench.cli_plot import plot_command

    plot_command(runs or [], out, report, vector, target_accuracy)


@app.command()
@user_errors
def run(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML file.")] = Path("scenarios/cifar10.yaml"),
    real: Annotated[bool, typer.Option("--real/--sim", help="Train for real (default) or simulate.")] = True,
    backend: Annotated[str, typer.Option("--backend", help="ray, or local (one process, full mini-batch).")] = "ray",
    out: Annotated[Path | None, typer.Option("--out", help="Results directory.")] = None,
    address: Annotated[str | None, typer.Option("--address", help="An existing Ray cluster (default: local).")] = None,
    iterations: Annotated[int | None, typer.Option("--iterations", min=1, help="Override the scenario's.")] = None,
    batch_size: Annotated[int | None, typer.Option("--batch-size", min=1, help="Global mini-batch size.")] = None,
    lr: Annotated[float | None, typer.Option("--lr", help="Learning rate.")] = None,
    model: Annotated[str | None, typer.Option("--model", help="small_cnn or resnet18.")] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", help="cifar10 or synthetic.")] = None,
    data_dir: Annotated[str | None, typer.Option("--data-dir", help="A local CIFAR-10 copy.")] = None,
    device: Annotated[str | None, typer.Option("--device", help="auto, cpu or cuda.")] = None,
    resume: Annotated[Path | None, typer.Option("--resume", help="Continue an interrupted real run.")] = None,
) -> None:
    """Train the scenario's variants on Ray (or one process), or simulate them with --sim."""
    if real:  # before anything else: the one sentence a user without the [real] extra needs
        from gcbench.real.requirements import require_real_extra

        require_real_extra()
    from gcbench.cli_run import check_backend, console, run_real
    from gcbench.cli_simulate import simulate_scenario

    if not real:
        simulate_scenario(scenario, out, None, True, console(), iterations)
        return
    check_backend(backend)
    training = {"batch_size": batch_size, "learning_rate": lr, "model": model, "dataset": dataset}
    training.update(data_dir=data_dir, device=device)
    run_real(scenario, backend, out, address, iterations, training, console(), resume)


def main() -> None:
    """Console-script entry point."""
    app()
