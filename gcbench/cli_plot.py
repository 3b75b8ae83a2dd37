"""What `gcbench plot` does: pick the runs, render, report, print what it wrote."""

from __future__ import annotations

from pathlib import Path

import typer

from gcbench.errors import GcbenchError

FIGURES_FOLDER = "figures"  # the default output, inside the (first) run plotted: the repository's figures/ is -o


def plot_command(runs: list[Path], out: Path | None, report: bool, vector: str, target: float | None) -> None:
    if vector not in ("pdf", "svg"):
        raise GcbenchError(f"--vector must be pdf or svg, got '{vector}'.")
    if target is not None and not 0 < target <= 1:
        raise GcbenchError(f"--target-accuracy must be in (0, 1], got {target}.")
    from gcbench.plot.make import draw_runs, load_runs, pairing_notes
    from gcbench.plot.report import write_report
    from gcbench.plot.runs import latest_runs

    paths = runs or latest_runs()
    out = out if out is not None else Path(paths[0]) / FIGURES_FOLDER
    loaded = load_runs(paths, out)  # every damaged file is refused before anything is drawn
    for note in [note for run in loaded for note in run.notes()] + pairing_notes(loaded):
        typer.echo(f"note: {note}")
    written = draw_runs(loaded, out, ("png", vector), target)
    for item in written:
        typer.echo(f"wrote {', '.join(str(f) for f in item.files)}")
    if report:
        for path in write_report(loaded, written, out, target):
            typer.echo(f"wrote {path}")
