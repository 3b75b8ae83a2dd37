"""The messages table (docs/results.md): one row per message that reached the master, for schemes whose
workers send more than one message each (``Scheme.messages_per_worker > 1``).

A single-message scheme's messages table would repeat its workers table row for row (ready is
``compute_end``, arrival is ``arrival``), so a run writes it only when some variant's workers send several
messages: every other run's files stay as they were.
"""

from __future__ import annotations

import numpy as np

FLOAT_COLUMNS = ("ready", "arrival")
LOG_COLUMNS = ("iteration", "worker", "message", "message_id", "ready", "arrival", "used")


class MessageLog:
    """The messages a master took, in the order it took them."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, int, int, int, float, float, bool]] = []
        self.used: dict[int, list[int]] = {}  # iteration -> the ids of the messages it used

    def add(self, iteration: int, worker: int, index: int, message_id: int, ready: float, arrival: float,
            used: bool) -> None:  # fmt: skip
        self.rows.append((iteration, worker, index, message_id, ready, arrival, used))
        if used:
            self.used.setdefault(iteration, []).append(message_id)

    def used_ids(self, iteration: int) -> list[int]:
        return self.used.get(iteration, [])

    def used_counts(self, workers_used: np.ndarray) -> np.ndarray:
        """Messages used per iteration: the log's count where it has the iteration, else the workers used (an
        iteration restored from a checkpoint, or logged by an earlier master)."""
        counts = workers_used.sum(axis=1)
        for t, ids in self.used.items():
            counts[t] = len(ids)
        return counts

    def columns(self, done: int | None = None) -> dict[str, np.ndarray]:
        """The table's columns (without the identity), sorted by iteration, worker and message index; only
        iterations 0..done-1 with ``done``."""
        names = LOG_COLUMNS
        rows = sorted((row for row in self.rows if done is None or row[0] < done), key=lambda row: row[:3])
        values = list(zip(*rows, strict=True)) if rows else [()] * len(names)
        kinds = (np.int64, np.int64, np.int64, np.int64, float, float, bool)
        return {name: np.array(column, dtype=kind) for name, column, kind in zip(names, values, kinds, strict=True)}

    def row_dicts(self, done: int) -> list[dict]:
        """Iterations 0..done-1 as plain row dicts (a real run's checkpoint keeps them)."""
        return [dict(zip(LOG_COLUMNS, row, strict=True)) for row in self.rows if row[0] < done]

    @classmethod
    def restored(cls, rows: list[dict]) -> MessageLog:
        """The log of a checkpoint's rows (what ``row_dicts`` took out)."""
        log = cls()
        for row in rows:
            log.add(*(row[name] for name in LOG_COLUMNS))
        return log


def used_message_ids(rec, scheme, t: int) -> np.ndarray:
    """The ids of the messages iteration t used: from the messages log where there is one, else every message
    of each worker used (whole jobs; a worker's one message has its index as id in every scheme so far)."""
    if rec.messages is not None:
        return np.array(sorted(rec.messages.used_ids(t)), dtype=np.int64)
    workers = np.flatnonzero(rec.used[t])
    if sends_several(scheme):
        return np.array([mid for w in workers for mid in scheme.messages(int(w))], dtype=np.int64)
    return workers


def sends_several(scheme) -> bool:
    """Whether the scheme's workers send more than one message each (then runs write the messages table)."""
    return scheme.messages_per_worker > 1
