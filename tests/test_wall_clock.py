"""A real run's clock: a worker's wall time is read as the clock read it then, whatever pauses came after."""

from __future__ import annotations

import pytest

from gcbench.real.wallclock import clock as clock_module
from gcbench.real.wallclock.clock import WallClock


@pytest.fixture
def wall(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(clock_module.time, "time", lambda: now[0])
    return now


def test_a_reply_from_before_a_pause_keeps_its_true_time_after_it(wall):
    """A straggler's reply (computed at wall 103) handled after an evaluation paused the clock from 104 to 106 was
    read 2 s early: its job then seemed to start before its iteration (seen in real torch runs' tables)."""
    clock = WallClock()
    wall[0] = 104.0
    assert clock.now() == 4.0
    clock.pause()
    wall[0] = 106.0
    clock.resume()
    assert clock.now() == 4.0  # the pause is no one's time
    assert clock.at(103.0) == 3.0  # from before the pause: as it read then
    assert clock.at(107.0) == 5.0  # after it: the pause removed
    wall[0] = 110.0
    clock.pause()
    wall[0] = 111.0
    clock.resume()
    assert clock.at(105.0) == 5.0  # inside the first pause: the clock read on then, as now() did
    assert clock.at(108.0) == 6.0 and clock.at(111.5) == 8.5 and clock.at(103.0) == 3.0


def test_a_resumed_run_s_clock_goes_on_from_its_checkpoint(wall):
    clock = WallClock()
    wall[0] = 104.0
    clock.pause()
    wall[0] = 106.0
    clock.resume()
    clock.continue_from(50.0)
    assert clock.now() == 50.0 and clock.at(107.0) == 51.0
