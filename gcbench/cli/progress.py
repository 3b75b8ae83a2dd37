"""A real run's progress: the variants take turns, so the time a run has left is estimated from its own seconds
per iteration (measured while it ran, not while it waited for its turn) times the iterations it has left; all
runs' estimate adds those up, beside the time elapsed since the runs began. A bar per (variant, seed) on a
terminal, a plain line now and then otherwise."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

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
        self.printed: dict[int, int] = {}  # per run, the iterations its latest line said
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
        key = id(run)
        if self.bar is None and self.printed.get(key) != self.paces[key].done:  # (not twice for one iteration)
            self.line(key)

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
        self.printed[key] = pace.done

    def say(self, message: str) -> None:
        self.console.print(message, highlight=False, soft_wrap=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
