"""Column builders for the two results tables (docs/results.md) from one run of the master or the fast path."""

from __future__ import annotations

import numpy as np


class RunRecorder:
    """Collects per-iteration and per-worker arrays of one (variant, seed) run."""

    def __init__(self, iterations: int, n: int) -> None:
        self.iterations, self.n = iterations, n
        shape = (iterations, n)
        self.compute_start = np.zeros(shape)
        self.compute_end = np.zeros(shape)
        self.arrival = np.zeros(shape)
        self.used = np.zeros(shape, dtype=bool)
        self.failed = np.zeros(shape, dtype=bool)
        self.straggling = np.zeros(shape, dtype=bool)
        self.injected = np.zeros(shape)
        self.start = np.zeros(iterations)
        self.end = np.zeros(iterations)
        self.duration = np.zeros(iterations)  # kept apart from end - start, which loses the last bits
        self.reason = np.empty(iterations, dtype=object)
        self.exact = np.zeros(iterations, dtype=bool)
        self.residual = np.zeros(iterations)
        self.staleness = np.zeros(iterations)
        self.loss = np.full(iterations, np.nan)  # when the run trains
        self.accuracy = np.full(iterations, np.nan)  # where it was evaluated

    def iteration_columns(self, trained: bool = False, done: int | None = None) -> dict[str, np.ndarray]:
        """The iterations table's columns for iterations 0..done-1 (all by default); ``trained`` adds loss and
        accuracy."""
        rows = slice(0, self.iterations if done is None else done)
        columns = {
            "iteration": np.arange(self.iterations)[rows],
            "start": self.start[rows],
            "end": self.end[rows],
            "duration": self.duration[rows],
            "messages_used": self.used[rows].sum(axis=1),
            "stop": self.reason[rows].astype(str),
            "exact": self.exact[rows],
            "residual": self.residual[rows],
            "staleness": self.staleness[rows],
        }
        if trained:
            columns.update(loss=self.loss[rows], accuracy=self.accuracy[rows])
        return columns

    def worker_columns(self, loads: np.ndarray, done: int | None = None) -> dict[str, np.ndarray]:
        """The workers table's columns for iterations 0..done-1 (all by default), one row per worker each."""
        count = self.iterations if done is None else done
        t, w = np.meshgrid(np.arange(count), np.arange(self.n), indexing="ij")
        never = ~np.isfinite(self.arrival[:count])
        compute_end = self.compute_end[:count]
        return {
            "iteration": t.ravel(),
            "worker": w.ravel(),
            "partitions": np.broadcast_to(loads, (count, self.n)).ravel(),
            "compute_start": self.compute_start[:count].ravel(),
            "compute_end": np.where(np.isfinite(compute_end), compute_end, np.nan).ravel(),
            "injected_delay": self.injected[:count].ravel(),
            "arrival": np.where(never, np.nan, self.arrival[:count]).ravel(),
            "used": self.used[:count].ravel(),
            "straggling": self.straggling[:count].ravel(),
            "failed": self.failed[:count].ravel(),
        }
