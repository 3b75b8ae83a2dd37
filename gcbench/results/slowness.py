"""How slow each worker was in each iteration, read from a workers table (docs/attribution.md).

One seed's rows of one variant at one sweep point become (iterations, workers) grids. A worker's slowness in an
iteration is its compute time per partition over the median worker's in that iteration (per partition, so a
heterogeneous load is not mistaken for slowness); it straggled where that exceeds ``STRAGGLE_FACTOR`` or where it
failed. Attribution (gcbench/twin/attribution.py) and its figure (gcbench/plot/attribution.py) both read it here.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

STRAGGLE_FACTOR = 1.5  # slower than 1.5 times the iteration's median worker: straggled


def grid(frame: pd.DataFrame, values: np.ndarray, workers: int, fill: float = np.nan) -> np.ndarray:
    """``values`` (one per row of ``frame``, one seed's rows) as an (iterations, workers) array, iterations in
    order; cells without a row hold ``fill``."""
    iterations, position = np.unique(frame["iteration"].to_numpy(), return_inverse=True)
    out = np.full((len(iterations), workers), fill, dtype=np.result_type(values, type(fill)))
    out[position, frame["worker"].to_numpy()] = values
    return out


def compute_per_partition(frame: pd.DataFrame, workers: int) -> np.ndarray:
    """Seconds of compute per partition (``compute_end`` − ``compute_start`` over the load); NaN where the job
    never ended (crashed, never began) or computed nothing."""
    seconds = (frame["compute_end"] - frame["compute_start"]).to_numpy(dtype=float)
    load = frame["partitions"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        per = np.where(np.isfinite(seconds) & (load > 0), seconds / np.where(load > 0, load, 1.0), np.nan)
    return grid(frame, per, workers)


def row_medians(values: np.ndarray) -> np.ndarray:
    """Each row's median over its finite cells (NaN for a row with none), without numpy's all-NaN warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(np.where(np.isfinite(values), values, np.nan), axis=1)


def slowness(per_partition: np.ndarray) -> np.ndarray:
    """Each worker's compute per partition over its iteration's median worker (NaN where it computed nothing)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return per_partition / row_medians(per_partition)[:, None]


def straggled(slow: np.ndarray, failed: np.ndarray, factor: float = STRAGGLE_FACTOR) -> np.ndarray:
    """True where a worker was slower than ``factor`` times its iteration's median worker, or failed."""
    with np.errstate(invalid="ignore"):
        return (slow > factor) | failed


def failed_grid(frame: pd.DataFrame, workers: int) -> np.ndarray:
    return grid(frame, frame["failed"].to_numpy(dtype=bool), workers, fill=False).astype(bool)


def used_arrivals(frame: pd.DataFrame, workers: int, messages: pd.DataFrame | None = None) -> np.ndarray:
    """When each worker's latest used result reached the master (NaN where the master used none of it). A scheme
    whose workers send several messages is read from its messages table (one seed's rows) where there is one:
    the worker's last message may have come after the stop, unused."""
    if messages is not None and len(messages):
        taken = messages[messages["used"].astype(bool)]
        latest = taken.groupby(["iteration", "worker"], sort=True)["arrival"].max().reset_index()
        out = np.full((frame["iteration"].nunique(), workers), np.nan)
        rows = np.searchsorted(np.unique(frame["iteration"].to_numpy()), latest["iteration"].to_numpy())
        out[rows, latest["worker"].to_numpy()] = latest["arrival"].to_numpy()
        return out
    arrival = np.where(frame["used"].to_numpy(dtype=bool), frame["arrival"].to_numpy(dtype=float), np.nan)
    return grid(frame, arrival, workers)


def ended_by(arrivals: np.ndarray) -> np.ndarray:
    """Per iteration, the worker whose used result arrived last (the one the master waited for), -1 where the
    master used none (an iteration with no used result, or an asynchronous update's idle workers)."""
    finite = np.where(np.isfinite(arrivals), arrivals, -np.inf)
    last = finite.argmax(axis=1)
    return np.where(np.isfinite(finite.max(axis=1)), last, -1)
