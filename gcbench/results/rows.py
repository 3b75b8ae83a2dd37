"""The results tables' rows, built in one place for the simulator, every real backend and ``local``.

A run's identity columns (variant, scheme, s, m, policy, point, sweep values,
seed) repeat on its every row; the rest come from its ``RunRecorder``. A real
run's checkpoint keeps its rows as plain dicts (``row_dicts``), and a resumed
run puts them back into its recorder (``restore``). The simulator streams its
tables as columns (``worker_keys``, ``chunks``; gcbench/results/stream.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gcbench.results.recorder import RunRecorder

WORKER_IDENTITY = ("variant", "point", "seed")  # the workers table repeats only these of the identity columns


def identity(
    variant: str, scheme: str, s: int, m: int, policy: str, seed: int, point: int = 0, values: dict | None = None
) -> dict[str, Any]:
    """A run's identity columns; ``values``: the sweep point's value of each swept path."""
    return {"variant": variant, "scheme": scheme, "s": s, "m": m, "policy": policy, "point": point,
            **(values or {}), "seed": seed}  # fmt: skip


def table_columns(
    rec: RunRecorder,
    keys: dict[str, Any],
    loads: np.ndarray | None,
    done: int | None = None,
    trained: bool = False,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]:
    """Both tables' columns for iterations 0..done-1 (all by default); no workers table without ``loads``."""
    iterations = rec.iteration_columns(trained, done)
    count = len(iterations["iteration"])
    iterations = {**{k: np.repeat(v, count) for k, v in keys.items()}, **iterations}
    if loads is None:
        return iterations, None
    columns = rec.worker_columns(loads, done)
    rows = len(columns["worker"])
    return iterations, {**{k: np.repeat(keys[k], rows) for k in WORKER_IDENTITY if k in keys}, **columns}


def worker_keys(keys: dict[str, Any]) -> dict[str, Any]:
    """The identity columns the workers table repeats."""
    return {k: keys[k] for k in WORKER_IDENTITY if k in keys}


def chunks(iterations: int, n: int, elements: int) -> list[tuple[int, int]]:
    """(first, end) iteration ranges of about ``elements`` worker rows each."""
    rows = max(1, elements // n)
    return [(first, min(first + rows, iterations)) for first in range(0, iterations, rows)]


def row_dicts(rec: RunRecorder, loads: np.ndarray, done: int) -> tuple[list[dict], list[dict]]:
    """Iterations 0..done-1 as plain row dicts (a checkpoint's ``rows`` and ``workers``), without identity."""
    iterations, workers = table_columns(rec, {}, loads, done, trained=True)
    return _dicts(iterations, done), _dicts(workers, done * rec.n)


def restore(rec: RunRecorder, rows: list[dict], workers: list[dict]) -> None:
    """Put a checkpoint's rows back into the recorder (what ``row_dicts`` took out)."""
    for row in rows:
        t = row["iteration"]
        rec.start[t], rec.end[t], rec.duration[t], rec.reason[t] = (
            row["start"],
            row["end"],
            row["duration"],
            row["stop"],
        )
        rec.exact[t], rec.residual[t], rec.staleness[t] = row["exact"], row["residual"], row["staleness"]
        rec.loss[t], rec.accuracy[t] = row["loss"], row["accuracy"]
        rec.compression_error[t] = row.get("compression_error", np.nan)  # (a checkpoint written before it had none)
    for row in workers:
        t, w = row["iteration"], row["worker"]
        rec.compute_start[t, w], rec.compute_end[t, w] = row["compute_start"], row["compute_end"]
        rec.arrival[t, w], rec.injected[t, w] = row["arrival"], row["injected_delay"]
        rec.used[t, w], rec.straggling[t, w], rec.failed[t, w] = row["used"], row["straggling"], row["failed"]


def _dicts(columns: dict[str, np.ndarray], count: int) -> list[dict]:
    names = list(columns)
    values = [columns[name].tolist() for name in names]  # numpy scalars to Python ones
    return [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)] if count else []
