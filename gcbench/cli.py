"""The `gcbench` command: parses arguments, calls the library, prints. Nothing else."""

from __future__ import annotations

import functools
from collections.abc import Callable
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


def main() -> None:
    """Console-script entry point."""
    app()
