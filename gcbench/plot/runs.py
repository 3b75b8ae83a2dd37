"""Load results directories for plotting, refusing damaged ones in one sentence each.

A run directory holds run.json (written first, so an interrupted run has it), iterations.parquet and
workers.parquet (rewritten at each checkpoint, so a partial run has them too). Plotting needs run.json:
its mode decides the time axis (simulated or wall-clock) and which runs pair as simulated against real,
and the columns cannot tell a simulation that trained from a real run, so a directory without it is
refused rather than guessed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa

from gcbench.errors import GcbenchError
from gcbench.results.schema import LATER_ITERATION_COLUMNS

MODES = ("sim", "real")
COMPLETE = "complete"  # run.json without "status" is an older, finished run
RUN_FILES = ("run.json", "iterations.parquet")  # what only running a run writes (its age: latest_runs)


@dataclass
class Run:
    """One results directory as plotting sees it."""

    path: Path
    iterations: pd.DataFrame
    workers: pd.DataFrame | None
    metadata: dict

    @property
    def mode(self) -> str:
        return self.metadata["mode"]

    @property
    def scenario_name(self) -> str:
        return str(self.metadata.get("scenario", {}).get("name", self.label))

    @property
    def label(self) -> str:
        """The run directory's name: figure file names start with it, so two runs never share a file."""
        return self.path.resolve().name

    @property
    def stem(self) -> str:
        """The directory's name and the mode, unless the name already ends with it (cifar10-sim)."""
        return self.label if self.label.endswith(f"-{self.mode}") else f"{self.label}-{self.mode}"

    @property
    def sweep_columns(self) -> list[str]:
        points = self.metadata.get("sweep_points") or [{}]
        return list(points[0])

    @property
    def status(self) -> str:
        return str(self.metadata.get("status", COMPLETE))

    @property
    def partial(self) -> str | None:
        """'partial: X of Y iterations' for a run that did not finish, else None."""
        if self.status == COMPLETE:
            return None
        planned = planned_iterations(self.metadata)
        total = f"of {planned} " if planned else ""
        return f"partial: {len(self.iterations)} {total}iterations (run {self.status})"

    def notes(self) -> list[str]:
        """What `gcbench plot` should say about this run before drawing it."""
        notes = [f"{self.path}: {self.partial}"] if self.partial else []
        if self.workers is None:
            why = " (simulated with --no-workers-table?)" if self.mode == "sim" else ""
            notes.append(
                f"{self.path} has no workers.parquet{why}: "
                "the worker timeline is skipped and the scheme map shows the upload only"
            )
        return notes


def planned_iterations(metadata: dict) -> int | None:
    """Iteration rows the run planned: run.json's count, else the scenario's iterations x variants x seeds."""
    planned = metadata.get("iterations_planned")
    if isinstance(planned, int) and not isinstance(planned, bool) and planned > 0:
        return planned
    scenario = metadata.get("scenario", {})
    try:
        runs = len(scenario["variants"]) * len(scenario["seeds"]) * max(1, len(metadata.get("sweep_points") or []))
        return int(scenario["iterations"]) * runs
    except (KeyError, TypeError, ValueError):
        return None


def load_run(path: Path) -> Run:
    path = Path(path)
    metadata = _read_metadata(path)
    iterations = _read_table(path / "iterations.parquet")
    if iterations.empty:
        raise GcbenchError(f"{path / 'iterations.parquet'} has no rows yet: nothing to plot.")
    for column in LATER_ITERATION_COLUMNS:  # a run an earlier gcbench wrote: the column as NaN (it recorded none)
        if column not in iterations.columns:
            iterations[column] = float("nan")
    workers_path = path / "workers.parquet"
    workers = _read_table(workers_path) if workers_path.is_file() else None
    return Run(path, iterations, workers, metadata)


def _read_metadata(path: Path) -> dict:
    if path.is_file():
        raise GcbenchError(
            f"{path}: is a file, not a results directory; plot the directories gcbench simulate and gcbench run write."
        )
    if not path.is_dir():
        raise GcbenchError(f"{path}: no such results directory.")
    has_json, has_rows = (path / "run.json").is_file(), (path / "iterations.parquet").is_file()
    if not has_json and not has_rows:
        raise GcbenchError(f"{path}: not a gcbench results directory (no run.json, no iterations.parquet).")
    if not has_json:
        raise GcbenchError(
            f"{path} has iterations.parquet but no run.json, so whether it was simulated or real is unknown: "
            'restore run.json (one holding {"mode": "sim"} or {"mode": "real"} is enough).'
        )
    if not has_rows:
        raise GcbenchError(f"{path} has run.json but no iterations yet (the run wrote no checkpoint): nothing to plot.")
    try:
        metadata = json.loads((path / "run.json").read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise GcbenchError(f"{path / 'run.json'} is not valid JSON ({error}).") from None
    if not isinstance(metadata, dict) or metadata.get("mode") not in MODES:
        raise GcbenchError(f"{path / 'run.json'} must be a JSON object whose 'mode' is 'sim' or 'real'.")
    for key, kind, what in SHAPES:
        if key in metadata and not kind(metadata[key]):
            raise GcbenchError(f"{path / 'run.json'}: '{key}' must be {what}, not {json.dumps(metadata[key])[:60]}.")
    return metadata


def _sweep_points(value) -> bool:
    return isinstance(value, list) and all(isinstance(point, dict) for point in value)


def _names(value) -> bool:
    return isinstance(value, dict) and all(isinstance(name, str) for name in value.values())


SHAPES = (  # what plotting reads from run.json besides the mode
    ("scenario", lambda v: isinstance(v, dict), "an object (the scenario as loaded)"),
    ("sweep_points", _sweep_points, "a list of objects (one per sweep point)"),
    ("compression", _names, "an object naming each variant's compressor"),
)


def _read_table(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError, pa.ArrowException):
        raise GcbenchError(f"{path} is not a readable parquet table (damaged or truncated): nothing to plot.") from None


def check_distinct(runs: list[Run], out: Path) -> None:
    """Refuse two runs whose figures would have the same file names in one folder."""
    seen: dict[str, Run] = {}
    for run in runs:
        if run.stem in seen:
            raise GcbenchError(
                f"{seen[run.stem].path} and {run.path} are both named '{run.label}': their figures would overwrite "
                f"each other in {out}; plot them into separate folders with -o."
            )
        seen[run.stem] = run


def latest_runs(root: Path = Path("results")) -> list[Path]:
    """The most recent run under root, plus the latest run of the other mode for the same scenario.

    A run that has only its run.json so far counts (and is then refused, saying so) rather than being passed over
    for an older one without a word. A run's age is its tables' and run.json's, which only running it writes (its
    folder's own changes whenever figures are drawn into it).
    """
    candidates = sorted(
        (p for p in root.glob("*/") if (p / "iterations.parquet").is_file() or (p / "run.json").is_file()),
        key=_last_written,
    )
    if not candidates:
        raise GcbenchError(f"no results directories under {root}/; run gcbench simulate first or name one.")
    newest = _identity(_read_metadata(candidates[-1]))
    for path in reversed(candidates[:-1]):
        try:
            other = _identity(_read_metadata(path))
        except GcbenchError:  # an older damaged run is not what the user asked for: pass it by
            continue
        if other[0] == newest[0] and other[1] != newest[1]:
            return [candidates[-1], path]
    return [candidates[-1]]


def _last_written(run: Path) -> float:
    """When the run last wrote its results (run.json or its iterations table)."""
    return max((run / name).stat().st_mtime for name in RUN_FILES if (run / name).is_file())


def _identity(metadata: dict) -> tuple[str | None, str]:
    return metadata.get("scenario", {}).get("name"), metadata["mode"]


def require_columns(frame: pd.DataFrame, columns: list[str], what: str, path: Path) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise GcbenchError(
            f"{path}: the {what} table has no column '{missing[0]}'; is this a gcbench results directory?"
        )
