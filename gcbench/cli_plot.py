"""What `gcbench plot` does: pick the runs, render, report, print what it wrote."""

from __future__ import annotations

from pathlib import Path

import typer

from gcbench.errors import GcbenchError


def plot_command(runs: list[Path], out: Path, report: bool, vector: str, target: float | None) -> None:
    if vector not in ("pdf", "svg"):
        raise GcbenchError(f"--vector must be pdf or svg, got '{vector}'.")
    from gcbench.plot.make import plot_runs
    from gcbench.plot.report import write_report
    from gcbench.plot.runs import latest_runs

    for path in runs:
        if not (Path(path) / "iterations.parquet").is_file():
            raise GcbenchError(f"{path}: not a gcbench results directory (no iterations.parquet).")
    if target is not None and not 0 < target <= 1:
        raise GcbenchError(f"--target-accuracy must be in (0, 1], got {target}.")
    loaded, written = plot_runs(runs or latest_runs(), out, ("png", vector), target)
    for item in written:
        typer.echo(f"wrote {', '.join(str(f) for f in item.files)}")
    if report:
        for path in write_report(loaded, written, out, target):
            typer.echo(f"wrote {path}")
