"""A recorder for asynchronous runs whose memory follows the results used, not iterations x n.

An update of an asynchronous policy uses k results, so of its n workers rows
only k carry times; the rest are NaN, False or 0. ``SparseCells`` keeps just
the cells written, as (flat index, value) pairs in the order they were
written, and gives the dense rows a reader asks for (a chunk of the workers
table, ``decoding_quality``'s rows); anything else (``np.asarray``, ``.sum``)
gets the whole dense array, for tests and small runs. ``SparseRecorder`` is a
``RunRecorder`` whose seven per-worker arrays are such cells, so the tables it
gives are those of the dense recorder, value for value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gcbench.results.recorder import RunRecorder

COMPACT_AT = 1 << 16  # cells written since the last compaction that trigger one (besides twice the kept ones)


class SparseCells:
    """An (iterations x n) array of ``dtype`` holding ``fill`` except where written (the last write wins)."""

    def __init__(self, shape: tuple[int, int], dtype: Any, fill: Any) -> None:
        self.shape, self.dtype, self.fill = shape, np.dtype(dtype), fill
        self.keys = np.zeros(0, dtype=np.int64)  # flat indices, sorted, one per cell written
        self.values = np.zeros(0, dtype=self.dtype)
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []  # writes since the last compaction, in order
        self.scalars: list[tuple[int, Any]] = []  # single cells written since the last array write
        self.written = 0

    def __len__(self) -> int:
        return self.shape[0]

    def __setitem__(self, key, value) -> None:
        if isinstance(key, slice) and key == slice(None):  # every cell: what was written goes
            self.fill, self.pending, self.scalars = value, [], []
            self.keys, self.values = self.keys[:0], self.values[:0]
            return
        rows, columns = key
        if np.ndim(rows) == 0 and np.ndim(columns) == 0 and np.ndim(value) == 0:
            self.scalars.append((int(rows) * self.shape[1] + int(columns), value))
            return
        self._flush_scalars()
        rows, columns = np.broadcast_arrays(np.asarray(rows, dtype=np.int64), np.asarray(columns, dtype=np.int64))
        flat = (rows * self.shape[1] + columns).ravel()
        values = np.broadcast_to(np.asarray(value, dtype=self.dtype), rows.shape).ravel()
        self.pending.append((flat.copy(), values.copy()))
        self.written += len(flat)
        if self.written > max(COMPACT_AT, 2 * len(self.keys)):
            self._compact()

    def _flush_scalars(self) -> None:
        if self.scalars:
            keys, values = zip(*self.scalars, strict=True)
            self.pending.append((np.array(keys, dtype=np.int64), np.array(values, dtype=self.dtype)))
            self.written += len(keys)
            self.scalars = []

    def _compact(self) -> None:
        """One value per cell, the last written, sorted by flat index."""
        self._flush_scalars()
        if not self.pending:
            return
        keys = np.concatenate([self.keys, *(k for k, _ in self.pending)])
        values = np.concatenate([self.values, *(v for _, v in self.pending)])
        last, first_of_reversed = np.unique(keys[::-1], return_index=True)
        self.keys, self.values = last, values[::-1][first_of_reversed]
        self.pending, self.written = [], 0

    def cells(self) -> int:
        """Cells kept (written at least once)."""
        self._compact()
        return len(self.keys)

    def rows(self, first: int, end: int) -> np.ndarray:
        """Rows first..end-1, dense."""
        self._compact()
        n = self.shape[1]
        out = np.full((end - first, n), self.fill, dtype=self.dtype)
        a, b = np.searchsorted(self.keys, [first * n, end * n])
        out.ravel()[self.keys[a:b] - first * n] = self.values[a:b]
        return out

    def __getitem__(self, key) -> np.ndarray:
        if isinstance(key, slice) and key.step in (None, 1):
            first, end, _ = key.indices(self.shape[0])
            return self.rows(first, max(first, end))
        if np.ndim(key) == 0 and not isinstance(key, tuple):
            return self.rows(int(key), int(key) + 1)[0]
        wanted = np.asarray(key, dtype=np.int64)
        if wanted.ndim == 1 and wanted.size and np.all(wanted[1:] > wanted[:-1]):  # increasing rows: one span
            span = self.rows(int(wanted[0]), int(wanted[-1]) + 1)
            return span[wanted - wanted[0]]
        return np.asarray(self)[key]

    def row_counts(self, first: int, end: int) -> np.ndarray:
        """Per row of first..end-1, the cells that differ from the fill (``used``: the messages used)."""
        self._compact()
        n = self.shape[1]
        a, b = np.searchsorted(self.keys, [first * n, end * n])
        differ = self.values[a:b] != self.fill
        return np.bincount(self.keys[a:b][differ] // n - first, minlength=end - first)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        dense = self.rows(0, self.shape[0])
        return dense if dtype is None else dense.astype(dtype)

    def __getattr__(self, name: str):
        if name.startswith("_") or name in ("shape", "dtype", "fill", "keys", "values", "pending", "scalars"):
            raise AttributeError(name)
        return getattr(np.asarray(self), name)  # anything else (sum, any, ...): on the dense array


class SparseRecorder(RunRecorder):
    """A ``RunRecorder`` whose per-worker arrays keep only the cells written (an asynchronous run's results)."""

    def __init__(self, iterations: int, n: int) -> None:
        super().__init__(iterations, n, window=1)  # (its dense (iterations, n) zeros are replaced, never touched)
        shape = (iterations, n)
        self.compute_start = SparseCells(shape, float, 0.0)
        self.compute_end = SparseCells(shape, float, 0.0)
        self.arrival = SparseCells(shape, float, 0.0)
        self.used = SparseCells(shape, bool, False)
        self.failed = SparseCells(shape, bool, False)
        self.straggling = SparseCells(shape, bool, False)
        self.injected = SparseCells(shape, float, 0.0)

    def _messages_used(self, rows: slice) -> np.ndarray:
        first, end, _ = rows.indices(self.iterations)
        return self.used.row_counts(first, max(first, end))
