"""The `gcbench` command: parses arguments, calls the library, prints. Nothing else."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from gcbench.errors import GcbenchError


def _plain_help_types(command: Any, ctx: Any) -> None:
    """No type placeholder after a flag (typer prints <bool>) or a variadic argument (<list[Path]>)."""
    for param in [*command.params, command.get_help_option(ctx)]:
        if param is None:
            continue
        if getattr(param, "is_flag", False) or (param.nargs != 1 and getattr(param, "metavar", None) is None):
            param.display_type_rich = lambda ctx: None


class _HelpGroup(TyperGroup):
    """The `gcbench` group, with help that shows only the placeholders a user types."""

    def get_command(self, ctx: Any, name: str) -> Any:
        command = super().get_command(ctx, name)
        if command is not None:
            _plain_help_types(command, ctx)
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _plain_help_types(self, ctx)
        super().format_help(ctx, formatter)


app = typer.Typer(
    cls=_HelpGroup,
    help="Benchmark gradient coding and aggregation policies for straggler-tolerant training.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


# options `simulate` and `run` share
SeedsOption = Annotated[
    str | None, typer.Option("--seeds", metavar="0,1,2", help="Override the scenario's seeds: comma-separated.")
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="PATH=VALUE",
        help="Override any field, e.g. --set straggling.probability=0.2 (YAML value; repeatable).",
    ),
]
ForceOption = Annotated[bool, typer.Option("--force", help="Overwrite the results already in --out.")]


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


class _SchemesCommand(TyperCommand):
    """`gcbench schemes`, whose help lists the parameters the registered schemes declare."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from gcbench.cli.schemes import scheme_options_help

        self.epilog = scheme_options_help()
        super().format_help(ctx, formatter)


# a scheme's own parameters (--m, --seed, ...) are not options of the command: they
# come from the registry, so unknown options reach the command as extra arguments
@app.command(cls=_SchemesCommand, context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@user_errors
def schemes(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="Show one scheme instance instead of the table.")] = None,
    n: Annotated[int, typer.Option("--n", help="Workers.")] = 12,
    s: Annotated[int, typer.Option("--s", help="Stragglers tolerated.")] = 1,
) -> None:
    """List the registered gradient-coding schemes, or show one instance in detail.

    After NAME, give any parameter the scheme declares as --NAME VALUE (e.g. --m 2 for cce_cr, --seed 4 for cr).
    """
    from gcbench.cli.schemes import print_scheme, print_scheme_table, scheme_options

    if name is not None and name.startswith("-"):
        raise GcbenchError(f"give the scheme name before its parameters, e.g. gcbench schemes cce_cr {name} 2.")
    if name is None:
        if ctx.args:
            raise GcbenchError(f"{ctx.args[0]} is a scheme parameter: name the scheme first, e.g. gcbench schemes cr.")
        print_scheme_table()
        return
    print_scheme(name, n, s, scheme_options(name, ctx.args))


@app.command()
@user_errors
def policies() -> None:
    """List the registered aggregation policies with their parameters."""
    from gcbench.cli.policies import print_policy_table

    print_policy_table()


@app.command()
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
    iterations: Annotated[int | None, typer.Option("--iterations", min=1, help="Override the scenario's.")] = None,
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
) -> None:
    """Simulate a scenario: every variant, seed and sweep point; print the summary and write results."""
    from gcbench.cli.schemes import wide_console
    from gcbench.cli.simulate import check_ray_options, check_scenario, simulate_scenario
    from gcbench.scenario.overrides import parse_seeds, parse_sets

    check_ray_options(ray, address, jobs)  # before anything: a missing Ray costs one sentence
    console = wide_console()
    overrides = parse_sets(sets or [])
    if seeds is not None:
        overrides["seeds"] = parse_seeds(seeds)
    if iterations is not None:
        overrides["iterations"] = iterations
    if engine is not None:
        overrides["engine"] = engine
    if check:
        check_scenario(scenario, console, overrides)
        return
    on_ray = {"address": address} if ray else None
    simulate_scenario(scenario, out, jobs, workers_table, console, overrides=overrides, force=force, ray=on_ray)


@app.command()
@user_errors
def plot(
    runs: Annotated[list[Path] | None, typer.Argument(help="Results directories (default: the most recent).")] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "-o", "--out", help="Where to write the figures (default: RUN/figures, beside the first run plotted)."
        ),
    ] = None,
    report: Annotated[bool, typer.Option("--report", help="Also write a Markdown and an HTML report.")] = False,
    vector: Annotated[str, typer.Option("--vector", help="Vector format beside each PNG: pdf or svg.")] = "pdf",
    target_accuracy: Annotated[
        float | None, typer.Option("--target-accuracy", help="Accuracy to time (default: 90% of the best reached).")
    ] = None,
) -> None:
    """Draw the figures of results directories: simulated, real, or both side by side."""
    from gcbench.cli.plot import plot_command

    plot_command(runs or [], out, report, vector, target_accuracy)


def _backend_help() -> str:
    """The backends of `gcbench run`, from the cluster registry (which imports none of them)."""
    from gcbench.cluster import real_backends

    names = [f"{entry.name} ({entry.note})" if entry.note else entry.name for entry in real_backends()]
    return f"{', '.join(names[:-1])}, or {names[-1]}."


BACKEND_HELP = _backend_help()  # "ray, torch (worker processes here), or local (one process)."


@app.command()
@user_errors
def run(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML file.")] = Path("scenarios/cifar10.yaml"),
    real: Annotated[bool, typer.Option("--real/--sim", help="Train for real (default) or simulate.")] = True,
    backend: Annotated[str, typer.Option("--backend", help=BACKEND_HELP)] = "ray",
    out: Annotated[Path | None, typer.Option("--out", help="Results directory.")] = None,
    address: Annotated[
        str | None, typer.Option("--address", help="With --backend ray: an existing Ray cluster (default: local).")
    ] = None,
    iterations: Annotated[int | None, typer.Option("--iterations", min=1, help="Override the scenario's.")] = None,
    batch_size: Annotated[int | None, typer.Option("--batch-size", min=1, help="Global mini-batch size.")] = None,
    lr: Annotated[float | None, typer.Option("--lr", help="Learning rate.")] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="small_cnn, resnet18, or softmax (cheap, for sweeps).")
    ] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", help="cifar10 or synthetic.")] = None,
    data_dir: Annotated[str | None, typer.Option("--data-dir", help="A local CIFAR-10 copy.")] = None,
    device: Annotated[str | None, typer.Option("--device", help="auto, cpu, cuda or cuda:N.")] = None,
    variants: Annotated[
        str | None, typer.Option("--variants", help="Run only these variants: labels, comma-separated.")
    ] = None,
    seeds: SeedsOption = None,
    resume: Annotated[
        Path | None, typer.Option("--resume", help="Continue an interrupted real run (its directory).")
    ] = None,
    sets: SetOption = None,
    force: ForceOption = False,
) -> None:
    """Train the scenario's variants on Ray, torch.distributed or one process (--backend), or simulate with --sim.

    The variants take turns, one block of training.checkpoint_every iterations each.

    Ctrl-C (exit 130) and SIGTERM (exit 143) keep the checkpoints and the rows so far; --resume DIR continues.
    """
    if real:  # before anything else: the one sentence a user without the [real] extra needs
        from gcbench.real.requirements import require_real_extra

        require_real_extra()
    from gcbench.cli.run import check_backend, console, refuse_with_resume, run_real, serve_as_helper
    from gcbench.cli.simulate import simulate_scenario

    if not real:
        from gcbench.scenario.overrides import parse_seeds, parse_sets

        overrides = parse_sets(sets or [])
        if seeds is not None:
            overrides["seeds"] = parse_seeds(seeds)
        simulate_scenario(scenario, out, None, True, console(), iterations, overrides=overrides, force=force)
        return
    check_backend(backend)
    if serve_as_helper(backend):  # (under torchrun, every rank but the driver's)
        return
    training = {"batch_size": batch_size, "learning_rate": lr, "model": model, "dataset": dataset}
    training.update(data_dir=data_dir, device=device)
    choose = {"variants": variants, "seeds": seeds, "sets": sets}
    if resume is not None:
        given = {"--out": out, "--iterations": iterations, "--batch-size": batch_size, "--lr": lr, "--model": model}
        given.update({"--dataset": dataset, "--data-dir": data_dir, "--device": device, "--variants": variants})
        refuse_with_resume({**given, "--seeds": seeds, "--set": sets or None, "--force": force or None})
    run_real(scenario, backend, out, address, iterations, training, console(), resume, choose, force)


def main() -> None:
    """Console-script entry point.

    A process that ran torch.distributed channels ends without the interpreter's teardown, once everything is
    written: gloo's teardown can wait on a receive still blocked in a thread until its timeout (a Ctrl-C'd
    torch run was seen taking more than 120 s to exit on a loaded machine)."""
    try:
        app()
    except SystemExit as done:
        if not torch_channels_used():
            raise
        end_now(done.code)


def torch_channels_used() -> bool:
    channel = sys.modules.get("gcbench.real.processes.channel")
    return channel is not None and channel.opened


def end_now(code) -> None:
    status = code if isinstance(code, int) else (0 if code is None else 1)
    if not isinstance(code, int | None):
        print(code, file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
