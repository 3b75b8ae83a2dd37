"""What every command shows alike: the console, a user's error as one sentence with exit code 2, the options
`simulate` and `run` share, the progress bars (a simulation's; a real run's, a bar per (variant, seed)), and
the summary table. Light at import: `gcbench --help` loads none of rich's tables, pandas or the simulator.
"""

from __future__ import annotations

import functools
import math
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gcbench.errors import GcbenchError

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console
    from rich.progress import Progress

    from gcbench.scenario.loading import SweepPoint


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


# -- a simulation: `gcbench simulate`, and `gcbench run --sim` ------------------------------------------------------


def simulate_scenario(
    path: Path,
    out: Path | None,
    jobs: int | None,
    with_workers: bool,
    console: Console,
    iterations: int | None = None,
    *,
    overrides: dict[str, Any] | None = None,
    force: bool = False,
    ray: dict[str, str | None] | None = None,
) -> tuple[Path, pd.DataFrame]:
    """Simulate and write results (gcbench/sim/simulation.py), with a progress bar; print the summary.

    ``iterations`` and ``overrides`` change the scenario as the file would. ``force``: overwrite the results
    already in ``out``. ``ray``: run the tasks on Ray, ``{"address": None}`` for a local instance (started here
    unless this process has joined one) or the cluster's address.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from gcbench.sim.simulation import load_simulation, plan_simulation, trains_in_simulator

    changes = dict(overrides or {})
    if iterations is not None:
        changes["iterations"] = iterations
    points = load_simulation(path, changes, out, force)
    if trains_in_simulator(points):
        from gcbench.real.requirements import TRAINING_MODULES, require_real_extra

        require_real_extra(
            "scenarios that train in the simulator", "or set training.in_simulator: false", TRAINING_MODULES
        )
    simulation = plan_simulation(path, points, out)
    if ray is not None:
        start_tasks_ray(ray["address"], console)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(f"simulating {points[0].scenario.name}", total=simulation.tasks)
        done = simulation.run(  # the tables go to disk as each task finishes
            jobs,
            with_workers,
            lambda finished: bar.update(task, completed=finished),
            ray_cluster=None if ray is None else ray["address"] or "local",
        )
    variants = [v for point in points for v in point.scenario.variants]
    from gcbench.scenario.describe import scenario_sentence

    say(console, scenario_sentence(points[0].scenario))
    print_summary(done.summary, list(points[0].values), console, variants)
    from gcbench.results.summary import interval_note

    if (note := interval_note(done.summary)) and note.startswith("95% CI n/a"):  # (why a column says n/a)
        console.print(note)
    print_trace_cleaning(points, console)
    console.print(engine_sentence(done.engines, done.link))
    console.print(f"results: {done.out}  ({done.rows} iterations simulated in {done.seconds:.1f} s)")
    return done.out, done.summary


def start_tasks_ray(address: str | None, console: Console) -> None:
    """Ray for the tasks: the cluster at ``address`` (token authentication as in real mode), or a local instance
    on the loopback interface; a process that has joined one already keeps it."""
    from gcbench.real.ray.start import start_ray

    start_ray(address)
    console.print(f"tasks on Ray: {f'the cluster at {address}' if address else 'a local instance'}", highlight=False)


def engine_sentence(chosen: dict[str, str], link: str | None = None) -> str:
    """Which engine ran the variants, e.g. "engine: vectorised (3 variants), event (1 variant)", and the event
    engine's shared link model where one ran."""
    counts = {name: list(chosen.values()).count(name) for name in dict.fromkeys(chosen.values())}
    engines = ", ".join(f"{name} ({c} variant{'s' if c > 1 else ''})" for name, c in counts.items())
    return f"engine: {engines}" + ("" if link is None else f"; shared link model: {link}")


def check_scenario(path: Path, console: Console, overrides: dict[str, Any] | None = None) -> None:
    """Validate as a run would, up to the engine of each variant, and say what the scenario holds."""
    from gcbench.sim.simulation import check_simulation

    points = check_simulation(path, overrides)
    scenario = points[0].scenario
    console.print(
        f"{path}: valid — {scenario.workers} workers, {len(scenario.variants)} variants, "
        f"{len(points)} sweep point(s), {len(scenario.seeds)} seed(s), {scenario.iterations} iterations each."
    )
    print_trace_cleaning(points, console)


def print_trace_cleaning(points: list[SweepPoint], console: Console) -> None:
    from gcbench.sim.simulation import cleanings

    for path, cleaning in cleanings(points).items():
        console.print(f"trace {Path(path).name}: {cleaning.sentence()}.")


# -- the summary table: a simulation's, and a real run's -------------------------------------------------------------


def print_summary(
    summary: pd.DataFrame, sweep_columns: list[str], console: Console, variants: list | None = None
) -> None:
    """The summary table per sweep point; ``variants`` (every point's) say which staleness sentences apply."""
    import pandas as pd
    from rich.table import Table

    from gcbench.results.conclusion import conclusions

    for _, rows in summary.groupby("point", sort=True):
        where = ", ".join(f"{c} = {rows[c].iloc[0]}" for c in sweep_columns)
        stale = bool((rows["staleness"] > 0).any())
        title = f"iteration time (s){f' at {where}' if where else ''}; speedup over {rows['baseline'].iloc[0]}"
        table = Table(title=title)
        names = ["variant", "kind", "mean", "95% CI", "p50", "p99", "speedup", "exact"]
        names += ["staleness"] if stale else []
        for name in names + training_headings(rows):
            table.add_column(name, justify="left" if name in ("variant", "kind") else "right")
        for row in rows.itertuples():
            interval = f"[{interval_low(row.ci_low)}, {row.ci_high:.4g}]" if pd.notna(row.ci_low) else "n/a"
            cells = [row.variant, row.kind, f"{row.mean:.4g}", interval, f"{row.p50:.4g}", f"{row.p99:.4g}"]
            speedup = f"{row.speedup:.2f}x" if pd.notna(row.speedup) else "n/a"
            cells += [speedup, f"{row.exact_share:.0%}"] + ([f"{row.staleness:.2f}"] if stale else [])
            table.add_row(*cells, *training_cells(row))
        console.print(table)
        if "final_loss" in rows.columns:
            console.print(TRAINED_NOTE + (TARGET_NOTE if "time_to_target" in rows.columns else ""))
        if stale:
            console.print(staleness_note(variants))
    say(console, KIND_NOTE)
    for line in conclusions(summary, sweep_columns):
        say(console, line)


KIND_NOTE = (
    "kind: exact (every decode exact), approximate (some decodes were not: an approximate scheme, or a policy that "
    "stopped waiting) or stale (results older than the model); exact: the share of exact decodes."
)


def interval_low(low: float) -> str:
    """A 95% interval's lower end as printed: one clipped at 0 (a mean time cannot be negative) says so."""
    return "0 (clipped)" if low == 0.0 else f"{low:.4g}"


STALENESS_NOTES = {
    "asynchronous": "Asynchronous policies: an iteration is one model update from k results, and staleness is how "
    "many updates old the used results were on average; their speedup over synchronous iterations is not "
    "comparable (n/a).",
    "pipelined": "Pipelined schemes: staleness is the mean age, in steps, of the oldest cached partition gradient a "
    "decode used.",
    "sequential": "Sequential schemes (sr_sgc, m_sgc): staleness is the rounds between a job's dispatch and its "
    "decode (sr_sgc's B, m_sgc's W - 2 + B); an iteration is a round.",
}


def staleness_note(variants: list | None) -> str:
    """What staleness means for the kinds of stale variants run (``variants``: the scenarios' variants; every kind
    where not known)."""
    from gcbench.coding import scheme_class

    kinds = set(STALENESS_NOTES)
    if variants is not None:
        kinds = {kind for v in variants for kind, stale in (("asynchronous", not v.policy.synchronous),
                 ("pipelined", scheme_class(v.scheme).pipelined), ("sequential", scheme_class(v.scheme).sequential))
                 if stale}  # fmt: skip
    return " ".join(note for kind, note in STALENESS_NOTES.items() if kind in kinds)


TRAINED_NOTE = "Final loss and test accuracy: each seed's last, averaged over the seeds."
TARGET_NOTE = (
    " Time to the target: seconds on the run's clock (simulated, or wall-clock for a real run) to the first test "
    "evaluation reaching it, averaged over the seeds that did."
)


def training_headings(rows: pd.DataFrame) -> list[str]:
    """The summary's training columns, for a run that trained: final loss and accuracy, time to the target."""
    if "final_loss" not in rows.columns:
        return []
    target = [f"time to {rows['target_accuracy'].iloc[0]:.1%}"] if "time_to_target" in rows.columns else []
    return ["final loss", "final accuracy", *target]


def training_cells(row) -> list[str]:
    import pandas as pd

    if not hasattr(row, "final_loss"):
        return []
    accuracy = f"{row.final_accuracy:.1%}" if pd.notna(row.final_accuracy) else "n/a"
    cells = [f"{row.final_loss:.4g}", accuracy]
    if hasattr(row, "time_to_target"):
        cells.append(time_to_target_cell(row))
    return cells


def time_to_target_cell(row) -> str:
    """'1.234 s', '1.234 s (2 of 3 seeds)' or 'not reached' (in the run's clock: simulated seconds here)."""
    if not row.target_reached:
        return "not reached"
    seeds = "" if row.target_reached == row.seeds else f" ({row.target_reached} of {row.seeds} seeds)"
    return f"{row.time_to_target:.4g} s{seeds}"


# -- a real run's progress: the variants take turns, so the time a run has left is estimated from its own seconds
# per iteration (measured while it ran, not while it waited for its turn) times the iterations it has left; all
# runs' estimate adds those up, beside the time elapsed since the runs began. A bar per (variant, seed) on a
# terminal, a plain line now and then otherwise.

LINE_SECONDS = 30.0  # off a terminal: a line after each block, and at least this often


@dataclass
class Pace:
    """What one run did in this process: iterations, the seconds they took, and the latest loss and accuracy."""

    total: int
    done: int
    ran: int = 0
    seconds: float = 0.0
    loss: float = math.nan
    accuracy: float = math.nan
    since: float | None = None  # when its current block's latest iteration ended

    def seconds_left(self, fallback: float | None) -> float | None:
        rate = self.seconds / self.ran if self.ran else fallback
        return None if rate is None else rate * (self.total - self.done)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


class RunProgress:
    """Bars on a terminal, lines elsewhere; told of every iteration and of every block's end."""

    def __init__(self, console: Console, line_seconds: float = LINE_SECONDS) -> None:
        self.console, self.line_seconds = console, line_seconds
        self.paces: dict[int, Pace] = {}
        self.names: dict[int, str] = {}
        self.bar: Progress | None = None
        self.tasks: dict[int, int] = {}
        self.last_line = self.started = time.monotonic()

    def begin(self, runs: list) -> None:
        for run in runs:
            key = id(run)
            self.paces[key] = Pace(run.scenario.iterations, run.next_iteration)
            self.names[key] = f"{run.label}, seed {run.seed}"
        if not self.console.is_terminal:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
        )
        self.bar = Progress(*columns, console=self.console, transient=True)
        self.bar.start()
        for run in runs:
            pace = self.paces[id(run)]
            self.tasks[id(run)] = self.bar.add_task(self.names[id(run)], total=pace.total, completed=pace.done, info="")

    def on_iteration(self, run):
        pace, key = self.paces[id(run)], id(run)
        pace.since = time.monotonic()

        def tick(done: int, loss: float, accuracy: float) -> None:
            now = time.monotonic()
            pace.ran, pace.seconds, pace.done, pace.since = pace.ran + 1, pace.seconds + now - pace.since, done, now
            pace.loss = loss
            pace.accuracy = accuracy if not math.isnan(accuracy) else pace.accuracy
            if self.bar is not None:
                self.bar.update(self.tasks[key], completed=done, info=self.info(key))
            elif now - self.last_line >= self.line_seconds:
                self.line(key)

        return tick

    def block_done(self, run) -> None:
        if self.bar is None:
            self.line(id(run))

    def info(self, key: int) -> str:
        pace, rates = self.paces[key], [p.seconds / p.ran for p in self.paces.values() if p.ran]
        fallback = sum(rates) / len(rates) if rates else None
        parts = [f"loss {pace.loss:.3g}" if not math.isnan(pace.loss) else "loss -"]
        if not math.isnan(pace.accuracy):
            parts.append(f"accuracy {pace.accuracy:.1%}")
        parts.append(f"this run ~{duration(pace.seconds_left(fallback))} left")
        left = [p.seconds_left(fallback) for p in self.paces.values()]
        elapsed = duration(time.monotonic() - self.started)
        parts.append(f"all runs ~{duration(None if None in left else sum(left))} left (estimated), {elapsed} elapsed")
        return ", ".join(parts)

    def line(self, key: int) -> None:
        pace = self.paces[key]
        self.console.print(
            f"{self.names[key]}: {pace.done}/{pace.total} iterations, {self.info(key)}", highlight=False, soft_wrap=True
        )
        self.last_line = time.monotonic()

    def say(self, message: str) -> None:
        self.console.print(message, highlight=False, soft_wrap=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


# -- listing registered configs (gcbench policies, gcbench compressors) --
_BOUNDS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))


def type_text(annotation: Any, metadata: list[Any]) -> str:
    """``int >= 1``, ``float > 0``, ``wait | approximate``: a field's type as a user writes it."""
    if typing.get_origin(annotation) is typing.Literal:
        return " | ".join(str(choice) for choice in typing.get_args(annotation))
    name = getattr(annotation, "__name__", str(annotation))
    bounds = [f"{sign} {getattr(m, attr)}" for m in metadata for attr, sign in _BOUNDS if hasattr(m, attr)]
    return " ".join([name, *bounds])


def config_parameters(cls: type, tag: str) -> list[str]:
    """``k: int >= 1 (required)``, ``fallback: wait | approximate (default wait)``: a registered config's
    parameters (a policy's, a compressor's), required ones first; neither the registry's ``tag`` nor a field the
    class declares internal (gcbench.models.internal)."""
    from gcbench.models import is_internal

    fields = [(name, f) for name, f in cls.model_fields.items() if name != tag and not is_internal(f)]
    fields.sort(key=lambda item: not item[1].is_required())
    return [
        f"{name}: {type_text(field.annotation, field.metadata)} "
        f"({'required' if field.is_required() else f'default {_yaml(field.default)}'})"
        for name, field in fields
    ]


def summary_line(cls: type) -> str:
    """The first paragraph of a class's docstring, on one line, without reST quotes."""
    paragraph = (cls.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(paragraph.split()).replace("``", "")


def _yaml(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
