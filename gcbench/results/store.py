"""Write and read a results directory: iterations.parquet, workers.parquet, run.json."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from gcbench.errors import GcbenchError
from gcbench.results.schema import ITERATION_COLUMNS, MESSAGE_COLUMNS, WORKER_COLUMNS

RESULT_FILES = ("iterations.parquet", "workers.parquet", "run.json", "summary.csv")


def check_out(out: Path, force: bool) -> None:
    """Refuse to overwrite a results directory (or a file) unless told to (``--out``, ``--force``)."""
    if out.exists() and not out.is_dir():
        raise GcbenchError(f"--out {out}: is a file, not a directory; choose another path.")
    if not force and out.is_dir() and any((out / name).exists() for name in RESULT_FILES):
        raise GcbenchError(f"--out {out}: holds results already; add --force to overwrite them, or choose another.")


def write_results(
    directory: Path, iterations: pd.DataFrame, workers: pd.DataFrame | None, metadata: dict[str, Any]
) -> None:
    """Write the tables after checking they carry the shared schema's columns."""
    write_tables(directory, iterations, workers)
    write_metadata(directory, metadata)


def write_tables(directory: Path, iterations: pd.DataFrame, workers: pd.DataFrame | None) -> None:
    """iterations.parquet and workers.parquet, each replaced whole (a reader never sees half a file)."""
    _require(iterations, ITERATION_COLUMNS, "iterations")
    if workers is not None:
        _require(workers, WORKER_COLUMNS, "workers")
    directory.mkdir(parents=True, exist_ok=True)
    _replace(directory / "iterations.parquet", lambda path: iterations.to_parquet(path, index=False))
    if workers is not None:
        _replace(directory / "workers.parquet", lambda path: workers.to_parquet(path, index=False))
    else:  # never leave an earlier run's workers table beside this run's iterations
        (directory / "workers.parquet").unlink(missing_ok=True)


def write_messages(directory: Path, messages: pd.DataFrame | None) -> None:
    """messages.parquet, replaced whole; none (and no earlier run's) when no variant sends several messages."""
    if messages is None:
        (directory / "messages.parquet").unlink(missing_ok=True)
        return
    _require(messages, MESSAGE_COLUMNS, "messages")
    _replace(directory / "messages.parquet", lambda path: messages.to_parquet(path, index=False))


def write_metadata(directory: Path, metadata: dict[str, Any]) -> None:
    """run.json, replaced whole."""
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps(metadata, indent=2, default=str) + "\n"
    _replace(directory / "run.json", lambda path: path.write_text(text))


def _replace(path: Path, write) -> None:
    partial = path.with_name(f".{path.name}.partial")
    write(partial)
    os.replace(partial, path)


def read_results(directory: Path) -> tuple[pd.DataFrame, pd.DataFrame | None, dict[str, Any]]:
    """The iterations table, the workers table (None if absent) and the metadata of a run."""
    directory = Path(directory)
    if not (directory / "iterations.parquet").is_file():
        raise GcbenchError(f"{directory}: not a gcbench results directory (no iterations.parquet).")
    iterations = pd.read_parquet(directory / "iterations.parquet")
    workers_path = directory / "workers.parquet"
    workers = pd.read_parquet(workers_path) if workers_path.is_file() else None
    metadata = json.loads((directory / "run.json").read_text()) if (directory / "run.json").is_file() else {}
    return iterations, workers, metadata


def _require(frame: pd.DataFrame, columns: dict[str, str], table: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"the {table} table lacks the schema's columns {missing}")
