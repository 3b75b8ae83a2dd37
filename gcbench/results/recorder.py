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

    def iteration_columns(self, trained: bool = False) -> dict[str, np.ndarray]:
        """The iterations table's columns; ``trained`` adds loss and accuracy."""
        columns = {
            "iteration": np.arange(self.iterations),
            "start": self.start,
            "end": self.end,
            "duration": self.duration,
            "messages_used": self.used.sum(axis=1),
            "stop": self.reason.astype(str),
            "exact": self.exact,
            "residual": self.residual,
            "staleness": self.staleness,
        }
        if trained:
            columns.update(loss=self.loss, accuracy=self.accuracy)
        return columns

    def worker_columns(self, loads: np.ndarray) -> dict[str, np.ndarray]:
        t, w = np.meshgrid(np.arange(self.iterations), np.arange(self.n), indexing="ij")
        never = ~np.isfinite(self.arrival)
        return {
            "iteration": t.ravel(),
            "worker": w.ravel(),
            "partitions": np.broadcast_to(loads, (self.iterations, self.n)).ravel(),
            "compute_start": self.compute_start.ravel(),
            "compute_end": np.where(np.isfinite(self.compute_end), self.compute_end, np.nan).ravel(),
            "injected_delay": self.injected.ravel(),
            "arrival": np.where(never, np.nan, self.arrival).ravel(),
            "used": self.used.ravel(),
            "straggling": self.straggling.ravel(),
            "failed": self.failed.ravel(),
        }
