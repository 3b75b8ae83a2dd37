"""The run's draws read per (row, worker), each block of rows drawn the first time one of its rows is read.

An asynchronous run reads row j of a worker's draws for its j-th job, so it
reads about (updates x k) / n rows, not every row: drawing them all (and making
them Python lists) cost more than simulating the jobs. ``DrawnRows`` draws with
``DrawBlocks``, so each row is ``draw_run``'s, bit for bit, whatever the block
size; only the cost depends on it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gcbench.coding import Scheme
from gcbench.scenario.draws import DrawBlocks, RunDraws
from gcbench.scenario.schema import Scenario

BLOCK_DRAWS = 1 << 16  # draws of one (row, worker) table in a block: rows per block = max(1, BLOCK_DRAWS // n)


class DrawnRows:
    """``draw_run``'s draws, drawn ``block_rows`` rows at a time as rows are read (rows come in order)."""

    def __init__(self, scenario: Scenario, scheme: Scheme, seed: int, block_rows: int | None = None) -> None:
        self.iterations, self.n = scenario.iterations, scenario.workers
        self.block_rows = block_rows or max(1, BLOCK_DRAWS // self.n)
        self.blocks = DrawBlocks(scenario, scheme, seed)
        self.loads = self.blocks.loads
        self.drawn: list[RunDraws] = []
        self.busy, self.crash = Rows(self, "busy", lists=True), Rows(self, "crash", lists=True)
        self.straggling, self.injected = Rows(self, "straggling"), Rows(self, "injected")
        self.dispatch = Rows(self, "dispatch", lists=True) if scenario.network.dispatch is not None else None
        scheduled = bool(getattr(scenario.failures, "schedule", []))  # (each crash's own downtime)
        self.downtime = Rows(self, "downtime", lists=True) if scheduled else None
        self.between = None  # the master's time between iterations: synchronous runs only (their draws are whole)

    @property
    def rows_drawn(self) -> int:
        return self.blocks.drawn

    def draw_to(self, row: int) -> None:
        """Draw blocks until row ``row`` is drawn (a row past the last iteration is an IndexError)."""
        if not 0 <= row < self.iterations:
            raise IndexError(f"draw row {row} of a run of {self.iterations} iterations")
        while self.blocks.drawn <= row:
            block = self.blocks.next(min(self.block_rows, self.iterations - self.blocks.drawn))
            self.drawn.append(block)
            for rows in (self.busy, self.crash, self.straggling, self.injected, self.dispatch, self.downtime):
                if rows is not None:
                    rows.add(getattr(block, rows.field))


class Rows:
    """One (iterations, n) draw: ``rows[row]`` is a row as a Python list (when kept as ``lists``: scalar access
    per job is several times faster than numpy's), ``rows[rows_array, workers_array]`` the draws at those
    (row, worker) pairs, as numpy indexes an array."""

    def __init__(self, draws: DrawnRows, field: str, lists: bool = False) -> None:
        self.draws, self.field, self.lists = draws, field, lists
        self.shape = (draws.iterations, draws.n)
        self.rows: list[list] = []
        self.blocks: list[np.ndarray] = []

    def add(self, block: np.ndarray) -> None:
        self.blocks.append(block)
        if self.lists:
            self.rows.extend(block.tolist())

    def __getitem__(self, key):
        if isinstance(key, tuple):
            rows, workers = key
            self.draws.draw_to(int(np.max(rows)) if len(rows) else 0)
            return np.concatenate(self.blocks)[rows, workers]
        assert self.lists, f"the {self.field} draws are read at (row, worker) pairs, not by row"
        if key >= len(self.rows):
            self.draws.draw_to(key)
        return self.rows[key]


def by_row(values: np.ndarray | Rows) -> Sequence[list]:
    """A draw as rows of Python lists: an array's ``tolist()``; drawn rows as they are (drawn when read)."""
    return values.tolist() if isinstance(values, np.ndarray) else values
