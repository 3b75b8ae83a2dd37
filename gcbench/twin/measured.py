"""A real run's tables, read and checked for calibration: its scenario, and per variant its iterations and its
workers' rows joined to their iteration's start and end."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from gcbench.errors import GcbenchError
from gcbench.results.store import read_results
from gcbench.scenario.schema import Scenario

MIN_ITERATIONS = 10  # per run: fewer finished iterations cannot be fitted (nor their order statistics judged)
NEEDED = {
    "iterations": ("variant", "seed", "point", "iteration", "start", "end", "duration", "policy", "scheme", "s"),
    "workers": ("variant", "seed", "point", "iteration", "worker", "partitions", "compute_start", "compute_end",
                "injected_delay", "arrival", "used", "straggling", "failed"),
}  # fmt: skip


@dataclass(frozen=True)
class MeasuredRun:
    """One real run: where it is, its scenario as run, its iterations, and its workers' rows (with ``start`` and
    ``end``, their iteration's)."""

    path: Path
    scenario: Scenario
    iterations: pd.DataFrame
    workers: pd.DataFrame
    backend: str
    # a job the master stopped waiting for ends where its worker stopped (a real worker is told to stop), so its
    # work is a lower bound; False for the simulator's tables, which give such a job the times it would have had
    cut_short: bool = True
    # the cores its workers shared, as run.json records them (None: not recorded, or each worker had its own)
    cores: int | None = None
    # each message's arrival, where a scheme sends several a worker (messages.parquet; None: no such table)
    messages: pd.DataFrame | None = None
    # on an emulated cluster, the message bytes each node's uplink sent at once after idling (its token bucket,
    # as run.json records it: network.burst); None: not recorded, or not emulated
    bursts: tuple[float, ...] | None = None

    @property
    def variants(self) -> list[str]:
        """The labels of the variants a master ran (the simulator models them), in the run's order."""
        modelled = {v.display_label() for v in self.scenario.variants if v.policy.needs_master}
        return [label for label in dict.fromkeys(self.iterations["variant"]) if label in modelled]

    @property
    def unmodelled(self) -> list[str]:
        """Variants no master ran (the DDP baseline): the simulator does not model them, calibration skips them."""
        return [label for label in dict.fromkeys(self.iterations["variant"]) if label not in self.variants]


def read_measured(path: Path) -> MeasuredRun:
    """The run in ``path``, refused in one sentence when it is not a real run that calibration can read."""
    path = Path(path)
    if not path.is_dir():
        raise GcbenchError(f"{path}: no such results directory.")
    try:
        iterations, workers, meta = read_results(path)
        messages = pd.read_parquet(path / "messages.parquet") if (path / "messages.parquet").is_file() else None
    except json.JSONDecodeError as error:  # (a ValueError: first)
        raise GcbenchError(
            f"{path / 'run.json'} is not valid JSON ({error.msg} at line {error.lineno}, column {error.colno})."
        ) from None
    except (OSError, ValueError):  # a damaged Parquet file
        raise GcbenchError(f"{path}: its results tables are not readable Parquet (damaged or truncated).") from None
    if not meta:
        raise GcbenchError(f"{path}: has no run.json, so its scenario is unknown; calibrate a run gcbench wrote.")
    if meta.get("mode") != "real":
        raise GcbenchError(
            f"{path}: is a {meta.get('mode', 'unknown')} run, not a real one; calibrate from a run of "
            "`gcbench run --real` (a simulation only measures its own scenario)."
        )
    if workers is None:
        raise GcbenchError(f"{path}: has no workers.parquet; calibration needs every worker's times.")
    for table, frame in (("iterations", iterations), ("workers", workers)):
        missing = [column for column in NEEDED[table] if column not in frame.columns]
        if missing:
            raise GcbenchError(f"{path}: its {table} table lacks the columns {', '.join(missing)}.")
    try:
        scenario = Scenario.model_validate(meta["scenario"])
    except (KeyError, ValueError) as error:
        raise GcbenchError(f"{path}: run.json's scenario is not one gcbench can read ({error}).") from None
    cores = meta.get("cores")
    cores = cores if isinstance(cores, int) and not isinstance(cores, bool) and cores > 0 else None
    backend = str(meta.get("backend", "?"))
    run = measured_run(path, scenario, iterations, workers, backend, cores=cores, messages=messages)
    return replace(run, bursts=_bursts(meta))


def _bursts(meta: dict) -> tuple[float, ...] | None:
    """Each emulated node's uplink's burst, as run.json records it (None: it records none)."""
    nodes = (meta.get("emulated") or {}).get("nodes") if isinstance(meta.get("emulated"), dict) else None
    if not isinstance(nodes, list) or not all(isinstance(node, dict) and "up_burst" in node for node in nodes):
        return None
    bursts = [node["up_burst"] for node in nodes]
    if not all(isinstance(b, int | float) and not isinstance(b, bool) and 0 <= b < float("inf") for b in bursts):
        return None
    return tuple(float(b) for b in bursts)


def measured_run(path: Path, scenario: Scenario, iterations: pd.DataFrame, workers: pd.DataFrame,
                 backend: str, cut_short: bool = True, cores: int | None = None,
                 messages: pd.DataFrame | None = None) -> MeasuredRun:  # fmt: skip
    """A run's tables joined for calibration (the simulator's tables too: tests calibrate from known scenarios)."""
    finished = iterations[iterations["end"].notna()]
    if finished.empty:
        raise GcbenchError(f"{path}: no iteration finished, so there is nothing to calibrate from.")
    if len(finished) < MIN_ITERATIONS:
        raise GcbenchError(
            f"{path}: only {len(finished)} iterations finished; calibration needs at least {MIN_ITERATIONS}."
        )
    keys = ["variant", "point", "seed", "iteration"]
    joined = workers.merge(finished[[*keys, "start", "end"]], on=keys, how="inner")
    run = MeasuredRun(path, scenario, finished.reset_index(drop=True), joined, backend, cut_short, cores, messages)
    if not run.variants:
        raise GcbenchError(f"{path}: no master ran its variants ({', '.join(run.unmodelled)}): nothing to calibrate.")
    return run


def recorded_message_arrivals(messages: pd.DataFrame, iterations: np.ndarray, starts: pd.Series,
                              count: int) -> np.ndarray:  # fmt: skip
    """The recorded arrival of each message, from its iteration's start (rows: ``iterations``, sorted; columns:
    the scheme's ``count`` message ids; inf: never arrived). ``messages``: one (variant, point, seed)'s rows;
    ``starts``: each iteration's start, by iteration."""
    grid = np.full((len(iterations), count), np.inf)
    kept = messages[messages["iteration"].isin(iterations)]
    row = np.searchsorted(iterations, kept["iteration"].to_numpy())
    grid[row, kept["message_id"].to_numpy()] = kept["arrival"].to_numpy(dtype=float) - kept["iteration"].map(
        starts
    ).to_numpy(dtype=float)
    return grid
