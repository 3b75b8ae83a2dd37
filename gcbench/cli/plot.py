"""What `gcbench plot` shows: the notes on the runs and every file it wrote (gcbench/plot/make.py draws them)."""

from __future__ import annotations

from pathlib import Path

import typer

from gcbench.errors import GcbenchError


def plot_command(runs: list[Path], out: Path | None, report: bool, vector: str, target: float | None) -> None:
    if vector not in ("pdf", "svg"):
        raise GcbenchError(f"--vector must be pdf or svg, got '{vector}'.")
    if target is not None and not 0 < target <= 1:
        raise GcbenchError(f"--target-accuracy must be in (0, 1], got {target}.")
    from gcbench.plot.make import draw_runs, runs_to_plot
    from gcbench.plot.report import write_report

    loaded, out, notes = runs_to_plot(runs, out)
    for note in notes:
        typer.echo(f"note: {note}")
    written = draw_runs(loaded, out, ("png", vector), target)
    for item in written:
        typer.echo(f"wrote {', '.join(str(f) for f in item.files)}")
    if report:
        for path in write_report(loaded, written, out, target):
            typer.echo(f"wrote {path}")
