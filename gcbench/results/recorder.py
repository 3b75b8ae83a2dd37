"""Column builders for the two results tables (docs/results.md) from one run of the master or the fast path.

A recorder keeps every iteration's per-worker times, or, given a ``window`` and
an ``emit`` callback, only a window of iterations: an engine that fills rows in
order asks ``times(first, end)`` for them and says ``rows_done(end)``, and when
the window is full the finished rows go to ``emit`` (the workers table is
streamed) and the window starts again. The vectorised engine streams; the
master (every backend) keeps them all.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Emit = Callable[["RunRecorder", int, int], None]  # emit(rec, first, end): rows first..end-1 are final
_kept_tiles: tuple | None = None  # (count, loads, worker column, partitions column) of the latest chunk size


class RunRecorder:
    """Collects per-iteration and per-worker arrays of one (variant, seed) run."""

    def __init__(self, iterations: int, n: int, window: int | None = None, emit: Emit | None = None) -> None:
        self.iterations, self.n = iterations, n
        kept = iterations if window is None else min(window, iterations)
        self.first_kept, self.done, self.emit = 0, 0, emit  # the per-worker times hold rows first_kept.. on
        shape = (kept, n)
        self.compute_start = np.zeros(shape)
        self.compute_end = np.zeros(shape)
        self.arrival = np.zeros(shape)
        shape = (iterations, n)
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
        self.compression_error = np.full(iterations, np.nan)  # where it trains with compressed messages
        self.messages = None  # a MessageLog (gcbench/results/messages.py) where workers send several messages
        # bytes of one message as sent (its compressed payload where the variant compresses), set by whoever knows
        # the variant; NaN where no master receives messages (DDP's all-reduce, the local backend)
        self.message_bytes = float("nan")

    def iteration_columns(
        self, trained: bool = False, done: int | None = None, stop_text: bool = True
    ) -> dict[str, np.ndarray]:
        """The iterations table's columns for iterations 0..done-1 (all by default); ``trained`` adds loss,
        accuracy and compression_error; ``stop_text`` false leaves the stop reasons Python strings (for a
        dictionary to encode)."""
        rows = slice(0, self.iterations if done is None else done)
        used = self._messages_used(rows)
        columns = {
            "iteration": np.arange(self.iterations)[rows],
            "start": self.start[rows],
            "end": self.end[rows],
            "duration": self.duration[rows],
            "messages_used": used,
            "bytes_received": used * float(self.message_bytes),
            "stop": self.reason[rows].astype(str) if stop_text else self.reason[rows],
            "exact": self.exact[rows],
            "residual": self.residual[rows],
            "staleness": self.staleness[rows],
        }
        if trained:
            columns.update(loss=self.loss[rows], accuracy=self.accuracy[rows],
                           compression_error=self.compression_error[rows])  # fmt: skip
        return columns

    def _messages_used(self, rows: slice) -> np.ndarray:
        """Per iteration of ``rows``: the messages used (a worker's one message each, unless a messages log
        counts them)."""
        if self.messages is None:
            return self.used[rows].sum(axis=1)
        return self.messages.used_counts(self.used)[rows]

    def times(self, first: int, end: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows first..end-1 of compute_start, compute_end and arrival, to fill (rows come in order)."""
        if end - self.first_kept > len(self.compute_start):
            self.flush()
            self.first_kept = first
            # new arrays, not the old ones overwritten: what was emitted may still be being written; empty, not
            # zeros (the engine writes every row it marks done, and only those are emitted): no pass to clear them
            self.compute_start, self.compute_end, self.arrival = (np.empty_like(a) for a in self._times())
        rows = slice(first - self.first_kept, end - self.first_kept)
        return self.compute_start[rows], self.compute_end[rows], self.arrival[rows]

    def _times(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.compute_start, self.compute_end, self.arrival

    def rows_done(self, end: int) -> None:
        """Rows up to end-1 are final (their times, ``used`` and ``failed``)."""
        self.done = end

    def flush(self) -> None:
        """Hand the finished rows still in the window to ``emit`` (at the end of a streamed run)."""
        if self.emit is not None and self.done > self.first_kept:
            self.emit(self, self.first_kept, self.done)
            self.first_kept = self.done

    def _tiles(self, loads: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The worker and partitions columns of ``count`` iterations: the same for every chunk of a size, and
        for every task of a run (kept across recorders, read only)."""
        global _kept_tiles
        kept = _kept_tiles
        if kept is None or kept[0] != count or not np.array_equal(kept[1], loads):
            tiles = np.tile(np.arange(self.n), count), np.tile(loads, count)
            for tile in tiles:
                tile.flags.writeable = False
            kept = _kept_tiles = (count, loads.copy(), *tiles)
        return kept[2], kept[3]

    def worker_columns(self, loads: np.ndarray, done: int | None = None) -> dict[str, np.ndarray]:
        """The workers table's columns for iterations 0..done-1 (all by default), one row per worker each."""
        return self.worker_rows(loads, 0, self.iterations if done is None else done)

    def worker_rows(self, loads: np.ndarray, first: int, end: int) -> dict[str, np.ndarray]:
        """The workers table's columns for iterations first..end-1 (still in the window), n rows each."""
        a, b = first - self.first_kept, end - self.first_kept
        if a < 0 or b > len(self.compute_start):
            raise ValueError(f"iterations {first}..{end - 1} are not in the recorder (it kept {self.first_kept} on)")
        count = end - first
        workers, partitions = self._tiles(np.asarray(loads), count)
        return {
            "iteration": np.repeat(np.arange(first, end), self.n),
            "worker": workers,
            "partitions": partitions,
            "compute_start": self.compute_start[a:b].ravel(),
            "compute_end": _nan_for_infinite(self.compute_end[a:b].ravel()),
            "injected_delay": self.injected[first:end].ravel(),
            "arrival": _nan_for_infinite(self.arrival[a:b].ravel()),
            "used": self.used[first:end].ravel(),
            "straggling": self.straggling[first:end].ravel(),
            "failed": self.failed[first:end].ravel(),
        }


def _nan_for_infinite(times: np.ndarray) -> np.ndarray:
    """NaN where a time is infinite (never): the array itself when every time is finite (no copy).

    A finite sum says every time is finite (an inf or NaN would carry into it) in one read of the array,
    without the isfinite flags' array; times of a few thousand seconds cannot overflow it."""
    if np.isfinite(np.add.reduce(times, axis=None)):
        return times
    finite = np.isfinite(times)
    return times if finite.all() else np.where(finite, times, np.nan)
