"""The wall-clock clusters' queue of known events (gcbench/real/wallclock/due_events.py)."""

from __future__ import annotations

from gcbench.real.wallclock.due_events import DueEvents


class SteppingClock:
    """A clock that reads the next of its times at each call (the last one for ever after)."""

    def __init__(self, *times: float) -> None:
        self.times = list(times)

    def __call__(self) -> float:
        return self.times.pop(0) if len(self.times) > 1 else self.times[0]


def no_wait(seconds: float) -> None:
    raise AssertionError(f"nothing should be waited for, asked to wait {seconds} s")


def test_an_event_falling_due_while_the_clock_is_read_is_delivered_not_taken_for_the_horizon():
    """The CI flake: read at 0.999 the event was not due, read again at 1.001 the wait looked <= 0, and
    next_event said "nothing before the horizon" (10 s away). Fails with the two-read loop."""
    events = DueEvents()
    events.schedule(1.0, "result")
    waits: list[float] = []
    clock = SteppingClock(0.999, 1.001)
    assert events.next_due(clock, 10.0, waits.append) == "result"
    assert all(wait > 0 for wait in waits), waits


def test_events_come_in_time_order_and_equal_times_in_the_order_scheduled():
    events = DueEvents()
    for at, name in [(2.0, "c"), (1.0, "a"), (2.0, "d"), (1.5, "b")]:
        events.schedule(at, name)
    assert [events.next_due(lambda: 5.0, 10.0, no_wait) for _ in range(4)] == ["a", "b", "c", "d"]
    assert len(events) == 0


def test_nothing_is_delivered_past_the_horizon_and_the_wait_stops_there():
    events = DueEvents()
    events.schedule(3.0, "late")
    waits: list[float] = []
    clock = SteppingClock(1.0, 2.0)
    assert events.next_due(clock, 2.0, waits.append) is None
    assert waits == [1.0] and len(events) == 1, "it waits until the horizon, not the event, and keeps the event"


def test_an_arrival_taken_while_waiting_is_delivered_once_due():
    events, waits = DueEvents(), []
    clock = SteppingClock(0.0, 0.5, 0.7)

    def take(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 1:
            events.schedule(0.6, "arrived")

    assert events.next_due(clock, 10.0, take) == "arrived"
    assert waits == [10.0, 0.6 - 0.5], "it waits up to the horizon with nothing known, then until the event"
