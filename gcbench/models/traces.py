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
from pydantic import Field, model_validator

from gcbench.errors import GcbenchError
from gcbench.models._config import Config
from gcbench.models.delay_profiles import at_load, read_base_compute, read_profile

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


class BaseComputeFile(Config):
    """``base_comp.pkl`` of a delay-profile folder, and the region whose line's slope is the base compute."""

    path: str
    region: str


class Trace(Config):
    """Replay measured times; ``time_scale`` converts the file's unit to seconds.

    ``format``: ``table`` (a long-form CSV or Parquet file) or ``delay_profile`` (a pickled delay profile of
    Sequential-Gradient-Coding-2, gcbench/models/delay_profiles.py); ``auto`` tells them by the suffix (.pkl).
    ``load_scaling``: ``proportional`` (time x load: the trace measured one partition), ``none``, or
    ``base_compute``, that repository's load model: the time at a worker's normalised load L (its partitions over
    the workers) is the trace's, measured at ``base_load``, plus (L - base_load) x ``base_compute`` seconds (a
    number, or ``{path: base_comp.pkl, region: ...}``, the slope of that file's line for the region).
    """

    path: str
    format: Literal["auto", "table", "delay_profile"] = "auto"
    columns: TraceColumns = TraceColumns()
    time_scale: Annotated[float, Field(gt=0, le=1e9)] = 1.0
    duplicates: Literal["mean", "first", "error"] = "mean"
    missing: Literal["worker_median", "drop_iteration", "error"] = "worker_median"
    load_scaling: Literal["proportional", "none", "base_compute"] = "proportional"
    base_load: Annotated[float, Field(ge=0, le=1)] = 0.0
    base_compute: Annotated[float, Field(ge=0, le=1e9)] | BaseComputeFile | None = None

    @model_validator(mode="after")
    def _base_compute_with_its_model(self) -> Trace:
        if (self.load_scaling == "base_compute") != (self.base_compute is not None):
            raise ValueError(
                "load_scaling: base_compute and base_compute (seconds, or {path, region}) go together"
                if self.load_scaling == "base_compute"
                else f"base_compute is the base_compute load model's; give load_scaling: base_compute, not "
                f"{self.load_scaling}"
            )
        return self

    @property
    def is_profile(self) -> bool:
        """A pickled delay profile (``format``, or ``auto`` and a .pkl file), else a long-form table."""
        return self.format == "delay_profile" or (self.format == "auto" and Path(self.path).suffix == ".pkl")

    def resolve(self, base: Path) -> Trace:
        """The same trace with its paths made absolute against the scenario's folder."""
        path = Path(self.path)
        update = {} if path.is_absolute() else {"path": str(base / path)}
        if isinstance(self.base_compute, BaseComputeFile) and not Path(self.base_compute.path).is_absolute():
            update["base_compute"] = self.base_compute.model_copy(update={"path": str(base / self.base_compute.path)})
        return self.model_copy(update=update) if update else self

    def base_compute_seconds(self) -> float:
        """``base_compute`` in seconds (read from its file where it names one)."""
        if isinstance(self.base_compute, BaseComputeFile):
            return _base_compute(self.base_compute.path, self.base_compute.region)
        return float(self.base_compute or 0.0)

    def at_loads(self, times: np.ndarray, loads: np.ndarray) -> np.ndarray:
        """Replayed times of workers holding ``loads`` partitions, by ``load_scaling``."""
        if self.load_scaling == "proportional":
            return times * loads
        if self.load_scaling == "base_compute":
            return at_load(times, loads / len(loads), self.base_load, self.base_compute_seconds())
        return times

    def matrix(self, workers: int) -> np.ndarray:
        """Times in seconds as an (iterations x workers) matrix, after the duplicate and missing policies."""
        return self.cleaned(workers)[0]

    def cleaned(self, workers: int) -> tuple[np.ndarray, TraceCleaning]:
        """The matrix, and what the policies did to get it."""
        if self.is_profile:
            return profile_matrix(Path(self.path), workers, self.time_scale)
        frame = read_trace_frame(Path(self.path), self.columns)
        return clean_trace(frame, workers, self.duplicates, self.missing, self.time_scale)


@lru_cache(maxsize=8)
def _base_compute(path: str, region: str) -> float:
    return read_base_compute(Path(path), region)


def profile_matrix(path: Path, workers: int, scale: float = 1.0) -> tuple[np.ndarray, TraceCleaning]:
    """A delay profile's first ``workers`` workers (by worker_id), rounds as iterations, times x ``scale``."""
    delays = read_profile(path) * scale
    if delays.shape[1] < workers:
        raise GcbenchError(
            f"compute.trace: {path.name} profiles {delays.shape[1]} workers, the scenario needs {workers}."
        )
    usable = np.isfinite(delays) & (delays >= 0) & (delays <= MAX_TRACE_SECONDS)
    if not usable[:, :workers].all():
        round_, worker = np.argwhere(~usable[:, :workers])[0]
        raise GcbenchError(
            f"compute.trace: {path.name}: worker {worker}'s delay in round {round_} is {delays[round_, worker]} s, "
            "not a time a profile can replay."
        )
    table = delays[:, :workers]
    return table, TraceCleaning(table.size, 0, 0, 0, 0, 0, 0, len(table))


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
