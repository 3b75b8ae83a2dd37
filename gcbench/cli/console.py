"""What every command shares: the console, a user's error as one sentence with exit code 2, and the options
several commands take. The other shared modules have one job each: summary.py the summary table, progress.py a
real run's progress, simulation.py a simulation with its progress bar (for `simulate` and `run --sim`), configs.py
the listing of a registry's configs. Light at import: `gcbench --help` loads none of rich's tables, pandas or the
simulator.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gcbench.errors import GcbenchError

if TYPE_CHECKING:
    from rich.console import Console


def wide_console() -> Console:
    """A console that does not squeeze tables when output goes to a file or pipe."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=160)


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


def say(console: Console, message: str) -> None:
    """One line as written: no highlighting, no wrapping inside it."""
    console.print(message, highlight=False, soft_wrap=True)


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
