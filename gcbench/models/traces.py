"""Trace replay: per-worker, per-iteration times from a long-form CSV or Parquet file.

Real traces are messy. The stated policy, tested in tests/test_traces.py:
- duplicated (worker, iteration) entries: ``duplicates: mean`` (default), ``first`` or ``error``;
- missing entries: ``missing: worker_median`` (default: that worker's median
  time), ``drop_iteration`` (iterations missing any worker are left out) or ``error``;
- rows whose time is not a finite non-negative number count as missing, and rows
  without a worker or iteration are dropped;
- scenario iterations beyond the trace wrap around to its first iteration.
What the policy did (rows dropped, entries merged or imputed) is counted in a
``TraceCleaning``, which the summary prints and run.json keeps.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from gcbench.errors import GcbenchError
from gcbench.models._config import Config

MAX_TRACE_SECONDS = 1e9  # the longest time a trace entry may replay (after time_scale), as for distributions


class TraceColumns(Config):
    worker: str = "worker"
    iteration: str = "iteration"
    time: str = "time"


@dataclass(frozen=True)
class TraceCleaning:
    """What the missing and duplicate policies did to a trace, in rows and (iteration, worker) entries."""

    rows: int  # rows in the file
    rows_without_id: int  # no worker, or no iteration number: dropped
    rows_not_numbers: int  # time not a number: counted as missing
    rows_out_of_range: int  # time negative, infinite or above the ceiling: counted as missing
    duplicates_merged: int  # extra rows of an (iteration, worker) entry, merged by the duplicates policy
    entries_imputed: int  # entries filled with the worker's median
    iterations_dropped: int  # iterations left out by drop_iteration
    iterations: int  # iterations replayed

    @property
    def changed(self) -> bool:
        return any(
            (self.rows_without_id, self.rows_not_numbers, self.rows_out_of_range, self.duplicates_merged)
            + (self.entries_imputed, self.iterations_dropped)
        )

    def sentence(self) -> str:
        """One line for the summary: only the counts that are not zero."""
        parts = [
            (self.rows_without_id, "rows without a worker or an iteration number dropped"),
            (self.rows_not_numbers, "rows whose time is not a number"),
            (self.rows_out_of_range, "rows whose time is negative or too large"),
            (self.duplicates_merged, "duplicated rows merged"),
            (self.entries_imputed, "missing entries filled with the worker's median"),
            (self.iterations_dropped, "incomplete iterations dropped"),
        ]
        said = ", ".join(f"{count} {what}" for count, what in parts if count)
        return f"{self.rows} rows, {self.iterations} iterations replayed: {said or 'nothing to clean'}"

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class Trace(Config):
    """Replay measured times; ``time_scale`` converts the file's unit to seconds."""

    path: str
    columns: TraceColumns = TraceColumns()
    time_scale: Annotated[float, Field(gt=0, le=1e9)] = 1.0
    duplicates: Literal["mean", "first", "error"] = "mean"
    missing: Literal["worker_median", "drop_iteration", "error"] = "worker_median"
    load_scaling: Literal["proportional", "none"] = "proportional"

    def resolve(self, base: Path) -> Trace:
        """The same trace with its path made absolute against the scenario's folder."""
        path = Path(self.path)
        return self if path.is_absolute() else self.model_copy(update={"path": str(base / path)})

    def matrix(self, workers: int) -> np.ndarray:
        """Times in seconds as an (iterations x workers) matrix, after the duplicate and missing policies."""
        return self.cleaned(workers)[0]

    def cleaned(self, workers: int) -> tuple[np.ndarray, TraceCleaning]:
        """The matrix, and what the policies did to get it."""
        frame = read_trace_frame(Path(self.path), self.columns)
        return clean_trace(frame, workers, self.duplicates, self.missing, self.time_scale)


@lru_cache(maxsize=8)
def cleaned_trace(trace: Trace, workers: int) -> tuple[np.ndarray, TraceCleaning]:
    """``trace.cleaned(workers)``, read once per process: validation, the summary and the engine share it."""
    return trace.cleaned(workers)


def read_trace_frame(path: Path, columns: TraceColumns) -> pd.DataFrame:
    """The trace's worker, iteration and time columns, renamed to those names (time kept as read)."""
    if not path.is_file():
        raise GcbenchError(f"compute.trace.path: no such file: {path}")
    try:
        frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except Exception as error:  # pandas raises many types for unreadable files
        raise GcbenchError(f"compute.trace.path: cannot read {path} as CSV or Parquet ({error}).") from None
    wanted = {columns.worker: "worker", columns.iteration: "iteration", columns.time: "time"}
    absent = [name for name in wanted if name not in frame.columns]
    if absent:
        have = ", ".join(map(str, frame.columns))
        raise GcbenchError(f"compute.trace.columns: {path.name} has no column '{absent[0]}' (it has {have}).")
    frame = frame[list(wanted)].rename(columns=wanted)
    frame.attrs["source"] = path.name
    frame.attrs["columns"] = {"worker": columns.worker, "iteration": columns.iteration, "time": columns.time}
    return frame


def _numbers(frame: pd.DataFrame, name: str) -> pd.Series:
    """A column as numbers; one with entries but no number at all is an error, with an example row."""
    values = pd.to_numeric(frame[name], errors="coerce")
    if len(frame) and values.isna().all() and frame[name].notna().any():
        row = frame[frame[name].notna()].iloc[0]
        column = frame.attrs.get("columns", {}).get(name, name)
        raise GcbenchError(
            f"compute.trace: the {name}s in column '{column}' of {frame.attrs.get('source', 'the trace')} are not "
            f"numbers (e.g. worker {_show(row['worker'])}, iteration {_show(row['iteration'])}, time "
            f"{_show(row['time'])}); "
            f"check compute.trace.columns.{name}."
        )
    return values


def _show(value: object) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _sorted_ids(values: pd.Series) -> list:
    try:
        return sorted(values.unique())
    except TypeError:  # worker ids of mixed types: sort them as text
        return sorted(values.unique(), key=str)


def trace_matrix(frame: pd.DataFrame, workers: int, duplicates: str, missing: str) -> np.ndarray:
    """Pivot a long (worker, iteration, time) frame to iterations x workers under the stated policies."""
    return clean_trace(frame, workers, duplicates, missing)[0]


def clean_trace(
    frame: pd.DataFrame, workers: int, duplicates: str, missing: str, scale: float = 1.0
) -> tuple[np.ndarray, TraceCleaning]:
    """The matrix in seconds (times x scale), and the counts of what each policy changed."""
    times = _numbers(frame, "time").astype(float) * scale
    frame = frame.assign(iteration=_numbers(frame, "iteration"))
    has_id = frame["worker"].notna() & frame["iteration"].notna()
    numbers = times.notna()
    usable = np.isfinite(times) & (times >= 0) & (times <= MAX_TRACE_SECONDS)
    counts = {
        "rows": len(frame),
        "rows_without_id": int((~has_id).sum()),
        "rows_not_numbers": int((has_id & ~numbers).sum()),
        "rows_out_of_range": int((has_id & numbers & ~usable).sum()),
    }
    kept = frame.assign(time=times)[has_id & usable]
    ids = _sorted_ids(kept["worker"])
    if len(ids) < workers:
        raise GcbenchError(f"compute.trace: the trace has {len(ids)} workers with times, the scenario needs {workers}.")
    kept = kept[kept["worker"].isin(ids[:workers])]
    table, counts["duplicates_merged"] = _pivot(kept, ids[:workers], duplicates)
    table, counts["entries_imputed"], counts["iterations_dropped"] = _fill(table, missing)
    return table.to_numpy(dtype=float), TraceCleaning(**counts, iterations=len(table))


def _pivot(frame: pd.DataFrame, ids: list, duplicates: str) -> tuple[pd.DataFrame, int]:
    counts = frame.groupby(["iteration", "worker"]).size()
    if duplicates == "error" and (counts > 1).any():
        first = counts[counts > 1].index[0]
        raise GcbenchError(f"compute.trace: duplicated entry for iteration {first[0]}, worker {first[1]}.")
    aggregate = "first" if duplicates == "first" else "mean"
    table = frame.groupby(["iteration", "worker"])["time"].agg(aggregate).unstack("worker")
    return table.reindex(columns=ids).sort_index(), int((counts - 1).sum())


def _fill(table: pd.DataFrame, missing: str) -> tuple[pd.DataFrame, int, int]:
    """Apply the missing policy; return the table, entries imputed and iterations dropped."""
    holes = table.isna()
    imputed = dropped = 0
    if holes.any().any():
        if missing == "error":
            iteration, worker = holes.stack()[holes.stack()].index[0]
            raise GcbenchError(f"compute.trace: no entry for iteration {iteration}, worker {worker}.")
        if missing == "drop_iteration":
            dropped = int(holes.any(axis=1).sum())
            table = table[~holes.any(axis=1)]
        else:
            imputed = int(holes.sum().sum())
            table = table.fillna(table.median())
    if table.empty or table.isna().any().any():
        raise GcbenchError("compute.trace: no complete iteration is left after the missing-entry policy.")
    return table, imputed, dropped
