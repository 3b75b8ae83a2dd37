"""`gcbench calibrate`: fit a scenario to real runs, write it, and say how well it follows them (gcbench/twin)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from gcbench.cli.console import say, user_errors, wide_console
from gcbench.errors import GcbenchError


@user_errors
def calibrate(
    runs: Annotated[
        list[Path], typer.Argument(metavar="RUNS...", help="Results directories of real runs of one cluster.")
    ],
    out: Annotated[Path, typer.Option("-o", "--out", help="Where to write the calibrated scenario (YAML).")],
    report: Annotated[
        Path | None, typer.Option("--report", help="Also write a report (Markdown and figures) to this directory.")
    ] = None,
    predict: Annotated[
        list[Path] | None,
        typer.Option(
            "--predict", metavar="RUN_DIR", help="A real run to predict with the calibrated scenario (repeatable)."
        ),
    ] = None,
    variants: Annotated[
        str | None, typer.Option("--variants", help="Fit only these variants' iterations: labels, comma-separated.")
    ] = None,
    train: Annotated[
        bool,
        typer.Option("--train", help="Also train in the simulator and compare the time to --target-accuracy."),
    ] = False,
    target_accuracy: Annotated[
        float | None,
        typer.Option(
            "--target-accuracy", help="With --train: the accuracy to time (default: 90% of the best reached)."
        ),
    ] = None,
    cores: Annotated[
        int | None,
        typer.Option(
            "--cores",
            min=1,
            help="The cores the runs' workers shared (default: what the runs recorded); fewer than the workers, "
            "their contention is modelled (compute.cores).",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --out if it exists.")] = False,
) -> None:
    """Fit a scenario to real runs: dispatch, compute, upload and the master's time, each part fitted and judged."""
    from gcbench.twin.calibrate import scenario_yaml
    from gcbench.twin.evaluate import ranking
    from gcbench.twin.judge import JUDGED, calibrate_runs

    if out.exists() and (out.is_dir() or not force):
        raise GcbenchError(f"-o {out}: exists already; add --force to overwrite it, or choose another path.")
    done = calibrate_runs(runs, variants, predict, cores, train, target_accuracy)
    calibration = done.calibration
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(scenario_yaml(calibration))
    console = wide_console()
    _print_fits(calibration, console)
    legs = [leg for leg in done.legs if leg.kind != "time to accuracy"]
    for leg in legs:
        _print_leg(leg.title, leg.table, ranking(leg.table), console)
    for leg in (leg for leg in legs if leg.kind in JUDGED):
        _print_verdicts(leg.run, "fitted to" if leg.kind == "fitted" else "predicted", leg.table, console)
    for leg in (leg for leg in done.legs if leg.kind == "time to accuracy"):
        _print_accuracy(leg.title, leg.table, console)
    for note in calibration.notes:
        say(console, f"note: {note}")
    if report is not None:
        from gcbench.twin.report import write_report

        tables = {leg.title: leg.table for leg in done.legs}
        judged = {leg.title: leg.run for leg in done.legs if leg.kind in JUDGED}
        for path in write_report(calibration, tables, report, judged):
            say(console, f"wrote {path}")
    say(console, f"calibrated scenario: {out} (gcbench simulate {out})")


def _print_fits(calibration, console) -> None:
    from rich.table import Table

    table = Table(title="fitted parts")
    for heading in ("part", "distribution", "samples", "censored", "order-stat. error", "KS", "measured mean (s)"):
        table.add_column(heading, justify="left" if heading in ("part", "distribution") else "right")
    for part, fit in calibration.fits.items():
        table.add_row(part, fit.distribution["distribution"], str(fit.samples), str(fit.censored),
                      f"{fit.score:.3f}", f"{fit.ks:.3f}", f"{fit.mean:.4g}")  # fmt: skip
    console.print(table)
    fixed = f"{calibration.fixed:.4g} s" if calibration.fixed else "none"
    speeds = ", ".join(f"{s:.3f}" for s in calibration.speeds) if calibration.speeds else "none"
    say(console, f"compute.fixed: {fixed}; speeds: {speeds}; {calibration.upload_words()}")


def _print_leg(title: str, table, ranking, console) -> None:
    from rich.table import Table

    grid = Table(title=title)
    long_run = table["long_run_mean"].notna().any()  # (the replay has none)
    headings = ["variant", "measured mean", "95% CI", "simulated mean", "error (paired)", "p50 error", "p99 error"]
    for heading in headings + (["long-run error"] if long_run else []):
        grid.add_column(heading, justify="left" if heading == "variant" else "right")
    for row in table.itertuples():
        interval = f"[{row.ci_low:.4f}, {row.ci_high:.4f}]" if not math.isnan(row.ci_low) else "n/a"
        cells = [row.variant, f"{row.measured_mean:.4f}", interval,
                 f"{row.simulated_mean:.4f}", f"{row.error_mean:+.1%}", f"{row.error_p50:+.1%}",
                 f"{row.error_p99:+.1%}", *([f"{row.error_long_run:+.1%}"] if long_run else [])]  # fmt: skip
        grid.add_row(*cells)
    console.print(grid)
    if long_run:
        from gcbench.twin.evaluate import SIMULATED_ITERATIONS

        say(console, "simulated and error (paired): the run's own seeds and iterations (its very stragglers): the "
                     "machine model's error where the run injected them; long-run error: the same scenario over "
                     f"{SIMULATED_ITERATIONS} iterations of other draws against the measured mean: the prediction "
                     "where the stragglers were the cluster's own")  # fmt: skip
    tau, kept = ranking
    if len(table) > 1 and table["ci_low"].isna().all():
        say(console, f"Kendall's tau {tau:.2f}; no measured mean has a 95% CI (one seed and fewer than 50 iterations), "
                     "so whether the ranking is kept where they are apart cannot be judged")  # fmt: skip
    elif len(table) > 1:
        say(console, f"Kendall's tau {tau:.2f}; ranking {'kept' if kept else 'NOT kept'} where the 95% CIs are apart")


def _print_verdicts(run, leg: str, table, console) -> None:
    """One verdict per variant (gcbench/twin/verdict.py), on the leg that suits how the run got its stragglers."""
    from gcbench.twin.verdict import injected_models, verdicts

    injected = injected_models(run.scenario)
    if injected:
        why = f"it injected {', '.join(injected)}, so the paired simulation replays its draws"
    else:
        why = "it injected nothing, so its stragglers were the cluster's own and the long run is the prediction"
    say(console, f"Verdicts, {leg} {run.path} ({why}):")
    for verdict in verdicts(table, bool(injected)):
        say(console, f"  {verdict.sentence()}")


def _print_accuracy(title: str, table, console) -> None:
    from rich.table import Table

    grid = Table(title=title)
    for heading in ("variant", "target", "measured (s)", "simulated (s)", "error"):
        grid.add_column(heading, justify="left" if heading == "variant" else "right")
    for row in table.itertuples():
        grid.add_row(row.variant, f"{row.target:.1%}", f"{row.measured_seconds:.2f}", f"{row.simulated_seconds:.2f}",
                     f"{row.error:+.1%}")  # fmt: skip
    console.print(grid)
