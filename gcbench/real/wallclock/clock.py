"""A real run's clock: wall seconds since the run began, minus the time it stood aside.

Variants take turns on one machine; while one runs, the others' clocks must
not advance, so each variant's times are as if it had run alone. ``pause``
marks where a variant's turn ends (the clock still reads on, so the late work
it drains afterwards keeps true times) and ``resume`` removes the time since
the mark. A resumed run's clock continues from its checkpoint (``continue_from``).
"""

from __future__ import annotations

import time


class WallClock:
    def __init__(self) -> None:
        self.origin = time.time()
        self.paused_at: float | None = None
        # (wall time a pause ended, the origin before it), oldest first: a wall time from before a pause ended is
        # read on the origin it had then (a late reply taken after an evaluation keeps its true time)
        self.resumed: list[tuple[float, float]] = []

    def now(self) -> float:
        return time.time() - self.origin

    def at(self, wall: float) -> float:
        """A wall time (``time.time()``, as a worker reports it) on this clock: what ``now()`` read then, so a
        pause that ended after it does not move it."""
        origin = self.origin
        for ended, before in reversed(self.resumed):
            if wall >= ended:
                break
            origin = before
        return wall - origin

    def pause(self) -> None:
        """The variant's turn ends here: the time until ``resume`` is no one's."""
        self.paused_at = time.time()

    def resume(self) -> None:
        if self.paused_at is not None:
            now = time.time()
            self.resumed.append((now, self.origin))
            self.origin += now - self.paused_at
            self.paused_at = None

    def continue_from(self, seconds: float) -> None:
        """Read ``seconds`` now (a resumed run goes on from its checkpoint's last time)."""
        self.origin = time.time() - seconds
        self.resumed = []
