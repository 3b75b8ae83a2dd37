"""The retired asynchronous engine (a heap calendar of callbacks), kept as the reference the
asynchronous master on the SimPy cluster is checked against (tests/test_event_engine.py).

It was gcbench/sim/asynchronous.py and gcbench/sim/calendar.py until the one master replaced them.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from itertools import count
from typing import Any

import numpy as np

from gcbench.coding import Scheme
from gcbench.master.outcome import decoding_quality, stuck_update
from gcbench.results.recorder import RunRecorder
from gcbench.scenario.draws import draw_run, message_bytes
from gcbench.scenario.schema import Scenario, Variant


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


class _AsyncRun:
    """State of one asynchronous run; SimPy callbacks advance it."""

    def __init__(self, scenario: Scenario, variant: Variant, scheme: Scheme, seed: int) -> None:
        self.calendar = Calendar()
        self.scheme, self.k, self.distinct = scheme, variant.policy.batch, variant.policy.distinct
        self.iterations, n = scenario.iterations, scenario.workers
        draws = draw_run(scenario, scheme, seed)
        self.mask, self.injected = draws.straggling, draws.injected
        # plain Python lists: scalar access in callbacks is several times faster than numpy indexing
        self.busy, self.crash = draws.busy.tolist(), draws.crash.tolist()
        self.downtime = getattr(scenario.failures, "downtime", None)
        network = scenario.network
        self.latency = network.latency
        self.transfer = 0.0 if network.bandwidth is None else message_bytes(scenario, scheme) / network.bandwidth
        self.shared = network.shared_link and self.transfer > 0
        self.link_free = 0.0
        self.jobs = [0] * n
        self.version, self.previous, self.batch = 0, 0.0, []
        self.updates: list[tuple[float, float, float]] = []  # (start, end, staleness) per update
        self.used: list[tuple] = []  # (update, worker, row, compute start, ready) per used result
        self.finished = False
        self.rec = RunRecorder(self.iterations, n)
        for column in (self.rec.compute_start, self.rec.compute_end, self.rec.arrival):
            column[:] = np.nan

    def start(self, w: int, may_crash: bool = True) -> None:
        """Worker w starts a job on the current model now (or crashes, and restarts after its downtime).

        The job a worker starts after recovering does not crash, as in the synchronous
        engine's redo, so every crash is followed by progress.
        """
        row = self.jobs[w] % self.iterations
        self.jobs[w] += 1
        now, seconds = self.calendar.now, self.busy[row][w]
        if may_crash and self.crash[row][w]:
            self.rec.failed[min(self.version, self.iterations - 1), w] = True
            if self.downtime is not None:
                self.calendar.schedule(self.downtime, self._recover, w)
            return
        job = (w, row, now, now + seconds, self.version)
        if self.shared:
            self.calendar.schedule(seconds + self.latency, self._reach_link, job)
        else:
            self.calendar.schedule(seconds + self.latency + self.transfer, self._arrive, job)

    def _recover(self, w: int) -> None:
        self.start(w, may_crash=False)

    def _reach_link(self, job: tuple) -> None:
        now = self.calendar.now
        self.link_free = max(now, self.link_free) + self.transfer
        self.calendar.schedule(self.link_free - now, self._arrive, job)

    def _arrive(self, job: tuple) -> None:
        batch = self.batch
        batch.append(job)
        if not self.distinct:
            self.start(job[0])
        if len(batch) == self.k:
            self._update()

    def _update(self) -> None:
        t, now, batch = self.version, self.calendar.now, self.batch
        self.updates.append((self.previous, now, t - sum(job[4] for job in batch) / len(batch)))
        self.used.extend((t, job[0], job[1], job[2], job[3]) for job in batch)
        self.previous, self.version, self.batch = now, t + 1, []
        if self.version == self.iterations:
            self.calendar.stop()
        elif self.distinct:
            for job in batch:
                self.start(job[0])

    def record(self) -> RunRecorder:
        """Scatter the logged updates and results into the tables (once, vectorised)."""
        rec = self.rec
        starts, ends, staleness = np.array(self.updates).T
        rec.start[:], rec.end[:], rec.duration[:], rec.staleness[:] = starts, ends, ends - starts, staleness
        rec.reason[:] = "k_results"
        t, w, row, begun, ready = np.array(self.used).T
        t, w, row = t.astype(np.int64), w.astype(np.int64), row.astype(np.int64)
        rec.used[t, w] = True
        rec.compute_start[t, w], rec.compute_end[t, w], rec.arrival[t, w] = begun, ready, ends[t]
        rec.straggling[t, w], rec.injected[t, w] = self.mask[row, w], self.injected[row, w]
        return rec


def simulate_calendar(scenario: Scenario, variant: Variant, scheme: Scheme, seed: int) -> RunRecorder:
    """Simulate an asynchronous policy; each recorded iteration is one model update."""
    run = _AsyncRun(scenario, variant, scheme, seed)
    for w in range(scenario.workers):
        run.start(w)
    run.calendar.run()
    if run.version < scenario.iterations:
        raise stuck_update(variant.display_label(), run.version, variant.policy)
    rec = run.record()
    decoding_quality(rec, scheme)
    return rec
