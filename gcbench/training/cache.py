"""A pipelined worker's cache: its latest gradient (and loss) of each partition it holds, and the step whose
weights computed it (gcbench/coding/pipelined.py).

The simulator's in-process workers (gcbench/sim/training.py) and the real ones
(gcbench/real/wallclock/gradient_worker.py) keep one each, so both modes compute the same partitions at the same
steps. An empty cache (the first job, or a worker restarted after a crash, whose process lost it) is filled in one
job on that job's weights: every held partition is computed, so the first decode is already of a whole gradient.
"""

from __future__ import annotations

from typing import Any

from gcbench.coding.pipelined import due_partitions


class PartitionCache:
    """Worker ``worker``'s cached partition gradients under a pipelined ``scheme``."""

    def __init__(self, scheme, worker: int) -> None:
        self.scheme, self.worker = scheme, worker
        self.entries: dict[int, tuple[Any, float, int]] = {}  # partition -> (gradient, loss, step computed)

    def due(self, step: int) -> list[int]:
        """What the job of ``step`` computes: the scheduled partition, and every held one not cached."""
        return due_partitions(self.scheme, self.worker, step, self)

    def missing(self) -> list[int]:
        return [j for j in self.scheme.partitions(self.worker) if j not in self]

    def store(self, partition: int, gradient: Any, loss: float, step: int) -> None:
        self.entries[partition] = (gradient, loss, step)

    def gradients(self) -> dict[int, Any]:
        return {j: entry[0] for j, entry in self.entries.items()}

    def versions(self) -> dict[int, int]:
        """Partition -> the step whose weights computed its cached gradient."""
        return {j: entry[2] for j, entry in self.entries.items()}

    def clear(self) -> None:
        self.entries.clear()

    def __contains__(self, partition: int) -> bool:
        return partition in self.entries
