"""A minimal discrete-event calendar: callbacks at future times, run in time order.

Ties run in the order they were scheduled, so a run is deterministic.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from itertools import count
from typing import Any


class Calendar:
    """Simulated time ``now`` and a heap of (time, sequence, callback, argument)."""

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, Callable[[Any], None], Any]] = []
        self._sequence = count()
        self._stopped = False

    def schedule(self, delay: float, callback: Callable[[Any], None], argument: Any) -> None:
        """Call ``callback(argument)`` at now + delay."""
        heapq.heappush(self._heap, (self.now + delay, next(self._sequence), callback, argument))

    def stop(self) -> None:
        """End ``run`` after the current callback."""
        self._stopped = True

    def run(self) -> None:
        """Process events in time order until ``stop`` is called or none are left."""
        heap, pop = self._heap, heapq.heappop
        self._stopped = False
        while heap and not self._stopped:
            self.now, _, callback, argument = pop(heap)
            callback(argument)
