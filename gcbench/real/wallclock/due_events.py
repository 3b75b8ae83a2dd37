"""Events a wall-clock cluster knows ahead of their time, delivered once their time has come.

A real cluster learns of a result before the master may see it (the modelled
network holds a timing-only result back), so it keeps such events in time
order and hands each one over once the clock has reached it. Both real
backends (Ray, torch.distributed) wait for their workers the same way: here.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

INF = float("inf")


class DueEvents:
    """A time-ordered heap of (at, order, event); events with equal times come in the order scheduled."""

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, Any]] = []
        self.order = itertools.count()

    def __len__(self) -> int:
        return len(self.heap)

    def schedule(self, at: float, event: Any) -> None:
        heapq.heappush(self.heap, (at, next(self.order), event))

    def clear(self) -> None:
        self.heap.clear()

    def holds(self, wanted: Callable[[Any], bool]) -> bool:
        """Whether an event not yet delivered is one ``wanted`` picks."""
        return any(wanted(event) for _, _, event in self.heap)

    def next_due(self, now: Callable[[], float], until: float, take: Callable[[float], None]) -> Any | None:
        """The earliest event once ``now()`` has reached its time, if that is no later than ``until``; meanwhile
        ``take(seconds)`` waits up to that long for the workers (and may schedule events). None once the clock
        has reached ``until`` with nothing due.

        The clock is read once a round: read twice, an event falling due between the reads looked like the
        horizon passing, and a run saw "nothing more before ``until``" long before ``until`` (a flaky check).
        """
        while True:
            current = now()
            if self.heap and self.heap[0][0] <= min(until, current):
                return heapq.heappop(self.heap)[2]
            if current >= until:
                return None
            take(min(until, self.heap[0][0] if self.heap else INF) - current)
