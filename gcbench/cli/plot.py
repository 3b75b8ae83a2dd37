"""`gcbench plot`: the notes on the runs and every file it wrote (gcbench/plot/make.py draws them)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gcbench.cli.console import user_errors
from gcbench.errors import GcbenchError


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
    plot_command(runs or [], out, report, vector, target_accuracy)


def plot_command(runs: list[Path], out: Path | None, report: bool, vector: str, target: float | None) -> None:
    if vector not in ("pdf", "svg"):
        raise GcbenchError(f"--vector must be pdf or svg, got '{vector}'.")
    if target is not None and not 0 < target <= 1:
        raise GcbenchError(f"--target-accuracy must be in (0, 1], got {target}.")
    from gcbench.plot.attribution import signal_sentence
    from gcbench.plot.make import draw_runs, runs_to_plot
    from gcbench.plot.report import write_report
    from gcbench.twin.attribution import attribute_runs

    loaded, out, notes = runs_to_plot(runs, out)
    attributions, tables, more = attribute_runs(loaded, out)
    for note in notes + more:
        typer.echo(f"note: {note}")
    for run in loaded:
        if run.path in attributions:
            point = int(run.iterations["point"].max())
            typer.echo(f"attribution, {run.label}: {signal_sentence(attributions[run.path], point)}")
    written = draw_runs(loaded, out, ("png", vector), target, attributions)
    for item in written:
        typer.echo(f"wrote {', '.join(str(f) for f in item.files)}")
    for path in tables:
        typer.echo(f"wrote {path}")
    if report:
        for path in write_report(loaded, written, out, target, attributions):
            typer.echo(f"wrote {path}")
