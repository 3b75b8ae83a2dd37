"""The `gcbench` command: one module per command (simulate, run, plot, calibrate, recommend, schemes, policies,
compressors) over the shared console (console.py); each parses, calls the library and prints. Nothing else.

``main`` is the console script's entry point (and ``python -m gcbench``'s); ``app`` the Typer group, for tests.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from gcbench.cli import calibrate, compressors, plot, policies, recommend, run, schemes, simulate

__all__ = ["app", "main"]


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


app.command(cls=schemes.SchemesCommand, context_settings=schemes.CONTEXT)(schemes.schemes)
app.command()(policies.policies)
app.command()(compressors.compressors)
app.command()(simulate.simulate)
app.command()(plot.plot)
app.command()(run.run)
app.command()(calibrate.calibrate)
app.command()(recommend.recommend)


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
