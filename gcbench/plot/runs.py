"""Load results directories for plotting: one table of iterations (and of workers) across runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gcbench.errors import GcbenchError
from gcbench.results import read_results


@dataclass
class Run:
    """One results directory as plotting sees it."""

    path: Path
    iterations: pd.DataFrame
    workers: pd.DataFrame | None
    metadata: dict

    @property
    def mode(self) -> str:
        return self.metadata.get("mode", "sim")

    @property
    def scenario_name(self) -> str:
        return self.metadata.get("scenario", {}).get("name", self.path.name)

    @property
    def sweep_columns(self) -> list[str]:
        points = self.metadata.get("sweep_points") or [{}]
        return list(points[0])


def load_run(path: Path) -> Run:
    iterations, workers, metadata = read_results(Path(path))
    return Run(Path(path), iterations, workers, metadata)


def latest_runs(root: Path = Path("results")) -> list[Path]:
    """The most recent run under root, plus the latest run of the other mode for the same scenario."""
    candidates = sorted(
        (p for p in root.glob("*/") if (p / "iterations.parquet").is_file()), key=lambda p: p.stat().st_mtime
    )
    if not candidates:
        raise GcbenchError(f"no results directories under {root}/; run gcbench simulate first or name one.")
    newest = load_run(candidates[-1])
    chosen = [candidates[-1]]
    for path in reversed(candidates[:-1]):
        other = load_run(path)
        if other.scenario_name == newest.scenario_name and other.mode != newest.mode:
            chosen.append(path)
            break
    return chosen


def require_columns(frame: pd.DataFrame, columns: list[str], what: str, path: Path) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise GcbenchError(
            f"{path}: the {what} table has no column '{missing[0]}'; is this a gcbench results directory?"
        )
