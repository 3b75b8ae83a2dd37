"""`gcbench recommend`: which scheme, s and policy for a cluster (gcbench/twin/recommend.py ranks them)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from gcbench.cli.console import ForceOption, SeedsOption, SetOption, say, user_errors, wide_console
from gcbench.cli.summary import interval_low
from gcbench.errors import GcbenchError


@user_errors
def recommend(
    source: Annotated[Path, typer.Argument(help="A scenario file, or a real run's results directory (calibrated).")],
    schemes: Annotated[
        str | None, typer.Option("--schemes", metavar="a,b", help="Only these schemes (default: every registered one).")
    ] = None,
    max_s: Annotated[
        int | None, typer.Option("--max-s", help="Stragglers tolerated, at most (default: 4, and below n).")
    ] = None,
    policies: Annotated[
        str | None,
        typer.Option(
            "--policies",
            metavar="a,b",
            help="Only these policies: wait_all, decodable, fastest_k (and k_async where the scenario trains).",
        ),
    ] = None,
    placements: Annotated[
        str | None,
        typer.Option(
            "--placements",
            metavar="a,b",
            help="Where a scenario with a topology has each candidate's workers: spread, pack, by_code (default: all).",
        ),
    ] = None,
    max_burst: Annotated[
        int, typer.Option("--max-burst", min=1, help="sr_sgc: the longest burst B it tries (W - 1 a multiple of B).")
    ] = 2,
    max_window: Annotated[int, typer.Option("--max-window", min=2, help="sr_sgc: the widest window W it tries.")] = 5,
    top: Annotated[int, typer.Option("--top", min=1, help="How many candidates to print per kind.")] = 5,
    iterations: Annotated[
        int | None, typer.Option("--iterations", min=1, help="Iterations per candidate and seed (default: 2000).")
    ] = None,
    seeds: SeedsOption = None,
    sets: SetOption = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Where to write recommend.json and the figure (default: under results/)."),
    ] = None,
    force: ForceOption = False,
    write_scenario: Annotated[
        Path | None,
        typer.Option(
            "--write-scenario",
            metavar="PATH",
            help="Write a scenario that runs the pick beside uncoded and its near ties (gcbench run PATH).",
        ),
    ] = None,
) -> None:
    """Rank every scheme, s and policy that applies to a cluster by its simulated speed (or time to accuracy)."""
    from gcbench.results.metadata import new_run_directory
    from gcbench.scenario.overrides import command_line
    from gcbench.twin.advice import advise
    from gcbench.twin.advice import write_scenario as write_scenario_file
    from gcbench.twin.candidates import check_scheme_names, enumerate_candidates
    from gcbench.twin.recommend import DEFAULT_ITERATIONS, cluster_of, write_recommendation
    from gcbench.twin.recommend import recommend as rank

    console = wide_console()
    if out is not None and out.exists() and any(out.iterdir()) and not force:
        raise GcbenchError(f"--out {out}: holds files already; add --force to overwrite them, or choose another.")
    check_scheme_names(_names(schemes))
    scenario, origin = cluster_of(source, command_line(sets, seeds))
    candidates = enumerate_candidates(scenario, _names(schemes), max_s, _names(policies), max_burst, max_window,
                                      _names(placements))  # fmt: skip
    count = iterations or DEFAULT_ITERATIONS
    say(console, f"{origin}: {len(candidates)} candidates, {count} iterations x {len(scenario.seeds)} seed(s) each")
    if write_scenario is not None and write_scenario.is_dir():  # (said before the candidates' minutes, not after)
        raise GcbenchError(f"--write-scenario {write_scenario}: is a directory; give a file name such as picked.yaml.")
    table, basis = rank(scenario, candidates, count, _progress(console))
    out = out or new_run_directory(Path("results"), f"{scenario.name}-recommend")
    out.mkdir(parents=True, exist_ok=True)
    advice = advise(table, basis, candidates, scenario)
    for line in advice.lines:
        say(console, line)
    _print_top(table, top, console)
    for note in _notes(basis):
        say(console, f"note: {note}")
    written = write_recommendation(table, basis, origin, scenario, top, out)
    if write_scenario is not None:
        written.append(write_scenario_file(scenario, advice, write_scenario))
        say(console, f"run the pick beside uncoded{' and its near ties' if advice.close else ''}: gcbench run "
                     f"{write_scenario} (or gcbench simulate {write_scenario})")  # fmt: skip
    for path in written:
        say(console, f"wrote {path}")


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise GcbenchError("--schemes, --policies and --placements take comma-separated names, and one was empty.")
    return names


def _progress(console):
    def tick(done: int, total: int) -> None:
        if done == total or done % 10 == 0:
            say(console, f"  simulated {done} of {total}")

    return tick


def _print_top(table, top: int, console) -> None:
    import numpy as np
    from rich.table import Table

    for kind, rows in table.groupby("kind", sort=False):
        shown = rows.head(top)
        grid = Table(title=f"best {kind} candidates" if table["rank"].duplicated().any() else "best candidates")
        for heading in ("rank", "candidate", str(table["metric"].iloc[0]), "95% CI", "speedup", "why"):
            grid.add_column(heading)
        for row in shown.itertuples():
            interval = f"{interval_low(row.ci_low)} - {row.ci_high:.4g}" if not math.isnan(row.ci_low) else "n/a"
            speedup = f"{row.speedup:.2f}x" if np.isfinite(row.speedup) and row.speedup > 0 else "n/a"
            value = f"{row.value:.4g}" if np.isfinite(row.value) else "never"
            grid.add_row(str(row.rank), row.candidate, value, interval, speedup, row.reason)
        console.print(grid)


def _notes(basis: dict) -> list[str]:
    notes = []
    chronic = basis["chronic_workers"]
    if chronic:
        named = ", ".join(f"worker {w} ({share:.0%} of uncoded's slowdown)" for w, share in chronic.items())
        notes.append(f"chronic stragglers under uncoded training: {named}")
    for kind, labels in basis["near_ties"].items():
        notes.append(
            f"{', '.join(labels)} ({kind}) are predicted within 10% of the best of their kind, closer than a "
            "simulation can be trusted to rank them on a real cluster (docs/calibration.md, Limits)"
        )
    kinds = basis["kinds"]
    if basis["target_accuracy"] is None and len(kinds) > 1:
        notes.append(
            f"{', '.join(kinds[:-1])} and {kinds[-1]} candidates are ranked apart: an approximate or stale update "
            "buys less progress per iteration; train in the simulator (training.in_simulator, target_accuracy) to "
            "rank them together"
        )
    return notes
