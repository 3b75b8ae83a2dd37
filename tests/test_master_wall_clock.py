"""What the one master does on a wall-clock cluster that the simulator never shows: a wait past the cluster's
timeout is a clear error, and a worker lost in a way the failure model did not draw (a process killed from
outside) redoes its work once it is back. A scripted cluster (virtual time, events as the test says) stands in
for Ray, so these run in milliseconds."""

from __future__ import annotations

import heapq
import itertools

import numpy as np
import pytest

from gcbench.cluster import Cluster, Failure, Job, Restart, Result
from gcbench.master import AsynchronousMaster, ClusterTimeout, SynchronousMaster
from gcbench.results.recorder import RunRecorder
from gcbench.scenario.build import scheme_for
from gcbench.scenario.schema import Scenario

INF = float("inf")


class ScriptedCluster(Cluster):
    """Every job computes for 1 s; ``silent`` workers never answer; ``killed[w] = t``: worker w's process dies
    0.5 s into its first job of iteration (or draw row) t, a failure nobody drew, and is back 2 s later."""

    def __init__(self, n: int, timeout: float, silent=(), killed=None) -> None:
        self.n, self.timeout, self.silent, self.killed = n, timeout, set(silent), dict(killed or {})
        self.clock, self.heap, self.order = 0.0, [], itertools.count()
        self.flight: dict[Job, bool] = {}  # jobs that may still deliver
        self.lost: set[int] = set()  # workers down after a kill, until their Restart

    @property
    def now(self) -> float:
        return self.clock

    @property
    def dead(self) -> set[int]:
        return set()

    def submit(self, worker, job, row, crash, batch=None):
        handle = Job(worker, job, row, self.clock, crash)
        self.flight[handle] = True
        if worker in self.silent:
            return handle
        if self.killed.get(worker) == row:
            del self.killed[worker]
            self._at(self.clock + 0.5, Failure(worker, self.clock + 0.5, handle))
            self._at(self.clock + 2.5, Restart(worker, self.clock + 2.5))
            self.lost.add(worker)
            return handle
        self._at(self.clock + 1.0, Result(handle, self.clock + 1.0, self.clock, self.clock + 1.0))
        return handle

    def _at(self, at: float, event) -> None:
        heapq.heappush(self.heap, (at, next(self.order), event))

    def next_event(self, until):
        if not self.heap or self.heap[0][0] > until:
            self.clock = max(self.clock, until) if until < INF else self.clock
            return None
        self.clock, _, event = heapq.heappop(self.heap)
        if type(event) in (Result, Failure) and event.job is not None:
            self.flight.pop(event.job, None)
        if type(event) is Restart:
            self.lost.discard(event.worker)
        return event

    def abandon(self, jobs):
        for job in jobs:
            self.flight.pop(job, None)
        self.heap = [item for item in self.heap if not (type(item[2]) is Result and item[2].job in set(jobs))]
        heapq.heapify(self.heap)

    def down(self, worker):
        return worker in self.lost

    def running(self, job_ids):
        ids = set(job_ids)
        return [job for job in self.flight if job.id in ids]

    def pending(self):
        return bool(self.heap or self.flight)

    def drain(self, seconds):
        return []

    def leftovers(self):
        return []


def setup(policy, iterations: int = 3, n: int = 4):
    sc = Scenario.model_validate(
        {"name": "wall", "workers": n, "iterations": iterations,
         "compute": {"per_partition": {"distribution": "deterministic", "value": 1.0}},
         "variants": [{"scheme": "uncoded", "policy": policy}]}
    )  # fmt: skip
    variant = sc.variants[0]
    return sc, variant, scheme_for(sc, variant), RunRecorder(iterations, n), np.zeros((iterations, n), dtype=bool)


def test_a_synchronous_wait_past_the_clusters_timeout_is_a_clear_error():
    sc, variant, scheme, rec, crash = setup("wait_all")
    master = SynchronousMaster(ScriptedCluster(4, timeout=5.0, silent={3}), scheme, variant, crash, "abandon", rec)
    with pytest.raises(ClusterTimeout, match=r"^iteration 0: the messages received within 5 s do not decode \(3 of 4"):
        master.run()


def test_an_asynchronous_wait_past_the_clusters_timeout_is_a_clear_error():
    sc, variant, scheme, rec, crash = setup({"name": "k_async", "k": 4})
    master = AsynchronousMaster(ScriptedCluster(4, timeout=5.0, silent={3}), variant, crash, rec)
    with pytest.raises(ClusterTimeout, match=r"^update 0: no result arrived within 5 s; raise training.timeout"):
        master.run()


def test_a_worker_killed_from_outside_redoes_the_iteration_once_it_is_back():
    """Worker 2 dies 0.5 s into iteration 1 and is back at 2.5 s: wait_all waits for its redo (1 s more)."""
    sc, variant, scheme, rec, crash = setup("wait_all")
    SynchronousMaster(ScriptedCluster(4, timeout=60.0, killed={2: 1}), scheme, variant, crash, "abandon", rec).run()
    assert rec.duration.tolist() == [1.0, 3.5, 1.0]
    assert rec.failed[1, 2] and rec.failed.sum() == 1 and rec.used.all()
    assert rec.compute_start[1, 2] == rec.start[1] + 2.5  # the redo, after the restart


def test_an_asynchronous_worker_killed_from_outside_starts_again_once_it_is_back():
    """k_async with k = 4: update 0 waits for worker 0's job after its restart (at 2.5 s, done at 3.5 s)."""
    sc, variant, scheme, rec, crash = setup({"name": "k_async", "k": 4}, iterations=2)
    AsynchronousMaster(ScriptedCluster(4, timeout=60.0, killed={0: 0}), variant, crash, rec).run()
    assert rec.end.tolist() == [3.5, 4.5] and rec.failed[0, 0] and rec.used.all()
    assert rec.compute_start[0, 0] == 2.5


class EveryoneGone(ScriptedCluster):
    """Every worker crashed for good: nothing is in flight, and a wait would only run out the timeout."""

    def submit(self, worker, job, row, crash, batch=None):
        return Job(worker, job, row, self.clock, crash)

    def next_event(self, until):
        self.waited = until
        return super().next_event(until)


def test_an_asynchronous_run_with_nothing_pending_is_stuck_at_once_not_after_the_timeout():
    sc, variant, scheme, rec, crash = setup("async")
    cluster = EveryoneGone(4, timeout=60.0)
    with pytest.raises(Exception, match="update 0 can never finish \\(every worker crashed for good\\)"):
        AsynchronousMaster(cluster, variant, crash, rec).run()
    assert cluster.now == 0.0 and not hasattr(cluster, "waited")
