"""Trace replay: per-worker, per-iteration times from a long-form CSV or Parquet file.

Real traces are messy. The stated policy, tested in tests/test_traces.py:
- duplicated (worker, iteration) entries: ``duplicates: mean`` (default), ``first`` or ``error``;
- missing entries: ``missing: worker_median`` (default: that worker's median
  time), ``drop_iteration`` (iterations missing any worker are left out) or ``error``;
- rows whose time is not a finite non-negative number count as missing;
- scenario iterations beyond the trace wrap around to its first iteration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import PositiveFloat

from gcbench.errors import GcbenchError
from gcbench.models._config import Config


class TraceColumns(Config):
    worker: str = "worker"
    iteration: str = "iteration"
    time: str = "time"


class Trace(Config):
    """Replay measured times; ``time_scale`` converts the file's unit to seconds."""

    path: str
    columns: TraceColumns = TraceColumns()
    time_scale: PositiveFloat = 1.0
    duplicates: Literal["mean", "first", "error"] = "mean"
    missing: Literal["worker_median", "drop_iteration", "error"] = "worker_median"
    load_scaling: Literal["proportional", "none"] = "proportional"

    def resolve(self, base: Path) -> Trace:
        """The same trace with its path made absolute against the scenario's folder."""
        path = Path(self.path)
        return self if path.is_absolute() else self.model_copy(update={"path": str(base / path)})

    def matrix(self, workers: int) -> np.ndarray:
        """Times in seconds as an (iterations x workers) matrix, after the duplicate and missing policies."""
        frame = read_trace_frame(Path(self.path), self.columns)
        return trace_matrix(frame, workers, self.duplicates, self.missing) * self.time_scale


def read_trace_frame(path: Path, columns: TraceColumns) -> pd.DataFrame:
    """The trace's worker, iteration and time columns, renamed to those names."""
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
    frame["time"] = pd.to_numeric(frame["time"], errors="coerce")
    return frame


def trace_matrix(frame: pd.DataFrame, workers: int, duplicates: str, missing: str) -> np.ndarray:
    """Pivot a long (worker, iteration, time) frame to iterations x workers under the stated policies."""
    frame = frame[np.isfinite(frame["time"]) & (frame["time"] >= 0)]
    ids = sorted(frame["worker"].unique())
    if len(ids) < workers:
        raise GcbenchError(f"compute.trace: the trace has {len(ids)} workers, the scenario needs {workers}.")
    frame = frame[frame["worker"].isin(ids[:workers])]
    counts = frame.groupby(["iteration", "worker"]).size()
    if duplicates == "error" and (counts > 1).any():
        first = counts[counts > 1].index[0]
        raise GcbenchError(f"compute.trace: duplicated entry for iteration {first[0]}, worker {first[1]}.")
    aggregate = "first" if duplicates == "first" else "mean"
    table = frame.groupby(["iteration", "worker"])["time"].agg(aggregate).unstack("worker")
    table = table.reindex(columns=ids[:workers]).sort_index()
    holes = table.isna()
    if holes.any().any():
        if missing == "error":
            iteration, worker = holes.stack()[holes.stack()].index[0]
            raise GcbenchError(f"compute.trace: no entry for iteration {iteration}, worker {worker}.")
        if missing == "drop_iteration":
            table = table[~holes.any(axis=1)]
        else:
            table = table.fillna(table.median())
    if table.empty or table.isna().any().any():
        raise GcbenchError("compute.trace: no complete iteration is left after the missing-entry policy.")
    return table.to_numpy(dtype=float)
