"""The master for asynchronous policies (Dutta et al., AISTATS 2018), on any cluster.

Workers compute continuously. The master updates the model after k results
(``k_batch_async``, ``async``: any k; ``k_async``: k from distinct workers,
which then restart on the new model). A worker's j-th job computes mini-batch j
on row j (mod iterations) of the run's draws; a crashed job uses up its row,
and the job a worker starts after recovering does not crash, so every crash is
followed by progress. With ``k_batch_async`` and ``async`` a worker restarts as
its result arrives, on the weights published before the update its result
completes. Each recorded iteration is one update; its results' ``arrival`` is
the update's time, and ``staleness`` how many updates old they were on average.
A job whose worker sends its messages one at a time (``Result.message``) counts
as one result when its last message arrives: an update applies whole jobs.

A run is one block of updates in the simulator; a real run's blocks (between
checkpoints) each start every worker afresh on mini-batch ``first``, as a
resumed run does. When the run trains, each update hands the learner its k
results and publishes the new weights.
"""

from __future__ import annotations

import numpy as np

from gcbench import stops
from gcbench.cluster import Cluster, Failure, Restart, Result
from gcbench.master.learner import Learner
from gcbench.master.messages import gather
from gcbench.master.outcome import stuck_update, timed_out_update
from gcbench.results.recorder import RunRecorder
from gcbench.scenario.draw_rows import by_row

INF = float("inf")


class AsynchronousMaster:
    """Runs the updates of one asynchronous variant on ``cluster``, recording into ``rec``.

    ``crash``, ``straggling`` and ``injected``: the run's draws per (row, worker), arrays or rows drawn as they
    are read (``DrawnRows``'); straggling and injected are recorded for the used results."""

    def __init__(
        self,
        cluster: Cluster,
        variant,
        crash: np.ndarray,
        rec: RunRecorder,
        learner: Learner | None = None,
        straggling: np.ndarray | None = None,
        injected: np.ndarray | None = None,
    ) -> None:
        self.cluster, self.variant, self.rec, self.learner = cluster, variant, rec, learner
        self.k, self.distinct = variant.policy.batch, variant.policy.distinct
        self.crash = by_row(crash)
        self.mask = np.zeros(crash.shape, dtype=bool) if straggling is None else straggling
        self.injected = np.zeros(crash.shape) if injected is None else injected
        self.iterations = rec.iterations
        self.jobs = [0] * rec.n  # each worker's next job: its mini-batch (its draw row, mod iterations)
        self.version_of: dict[int, int] = {}  # job id -> model version it started from
        self.serial = 0
        self.version, self.previous, self.batch = 0, 0.0, []
        self.updates: list[tuple[int, float, float, float]] = []  # (update, start, end, staleness)
        self.used: list[tuple] = []  # (update, worker, row, compute start, ready, measured injected) per result
        self.parts: dict[int, list[Result]] = {}  # job id -> the messages of it taken so far, one at a time
        for column in (rec.compute_start, rec.compute_end, rec.arrival):
            column[:] = np.nan

    def run(self) -> None:
        for _ in self.steps(0, self.iterations):
            pass

    def steps(self, first: int, last: int):
        """Updates first..last-1 as one block, yielding each update's index once it is done."""
        cluster = self.cluster
        self.version, self.batch, self.previous = first, [], cluster.now
        self.jobs = [first] * self.rec.n
        self._publish()
        try:
            for w in range(self.rec.n):
                self.submit(w, True)
            next_event, timeout = cluster.next_event, cluster.timeout
            while self.version < last:
                if not cluster.pending():  # every worker dead for good: no wait, on any clock, can bring one
                    raise stuck_update(self.variant.display_label(), self.version, self.variant.policy)
                event = next_event(INF if timeout == INF else cluster.now + timeout)
                if event is None:
                    if timeout == INF or not cluster.pending():
                        raise stuck_update(self.variant.display_label(), self.version, self.variant.policy)
                    raise timed_out_update(self.version, timeout)
                kind = type(event)
                if kind is Result:
                    if self._arrive(event):
                        yield self.version - 1
                        self.previous = max(self.previous, cluster.now)  # the caller's time is no update's
                elif kind is Restart:
                    self.submit(event.worker, False)
                elif kind is Failure:
                    self._lost(event)
        finally:
            cluster.abandon(cluster.running(self.version_of))
            self.version_of.clear()
            self.parts.clear()
            self.record()

    def submit(self, w: int, may_crash: bool) -> None:
        batch = self.jobs[w]
        row = batch % self.iterations
        self.jobs[w] += 1
        crash = may_crash and self.crash[row][w]
        job_id, self.serial = self.serial, self.serial + 1
        self.cluster.submit(w, job=job_id, row=row, crash=crash, batch=batch)
        if crash:  # a Restart follows after the downtime (none when it crashed for good)
            self.rec.failed[min(self.version, self.iterations - 1), w] = True
        else:
            self.version_of[job_id] = self.version

    def _lost(self, failure: Failure) -> None:
        """A worker lost in a way the failure model did not draw: its job's result never comes; a Restart
        (if it comes back) starts its next job."""
        job = failure.job
        if job is not None and job.crash:
            return  # the failure model's crash, noted when it was submitted
        if job is not None:
            self.version_of.pop(job.id, None)
        self.rec.failed[min(self.version, self.iterations - 1), failure.worker] = True

    def _arrive(self, result: Result) -> bool:
        """Take a result; True when it completed an update."""
        if result.abandoned or result.job.id not in self.version_of:
            return False  # work of an earlier block, or of a job lost with its worker
        if result.message is not None:
            self.parts.setdefault(result.job.id, []).append(result)
            if not result.final:
                return False  # the job counts once its last message is in
            result = gather(self.parts.pop(result.job.id))
        batch = self.batch
        batch.append(result)
        if not self.distinct:
            self.submit(result.job.worker, True)
        if len(batch) < self.k:
            return False
        self._update(result.at)
        return True

    def _update(self, now: float) -> None:
        t, batch, version_of = self.version, self.batch, self.version_of
        started = [version_of.pop(r.job.id) for r in batch]
        self.updates.append((t, self.previous, now, t - sum(started) / len(batch)))
        self.used.extend((t, r.job.worker, r.job.row, r.compute_start, r.compute_end, r.injected) for r in batch)
        if self.learner is not None:
            self.rec.loss[t] = self.learner.update(batch, rescale=True)
            self.rec.compression_error[t] = self.learner.compression_error
        self.previous, self.version, self.batch = now, t + 1, []
        self._publish()
        if self.distinct and self.version < self.iterations:
            for r in batch:
                self.submit(r.job.worker, True)

    def _publish(self) -> None:
        if self.learner is not None:
            self.cluster.publish(self.learner.weights())

    def record(self) -> RunRecorder:
        """Scatter the logged updates and results into the tables (vectorised; again after every block)."""
        rec = self.rec
        if not self.updates:
            return rec
        t, starts, ends, staleness = np.array(self.updates).T
        t = t.astype(np.int64)
        rec.start[t], rec.end[t], rec.duration[t], rec.staleness[t] = starts, ends, ends - starts, staleness
        rec.reason[t] = stops.K_RESULTS
        if not self.used:
            return rec
        u, w, row, begun, ready, measured = np.array(self.used).T
        u, w, row = u.astype(np.int64), w.astype(np.int64), row.astype(np.int64)
        rec.used[u, w] = True
        rec.compute_start[u, w], rec.compute_end[u, w], rec.arrival[u, w] = begun, ready, rec.end[u]
        rec.straggling[u, w] = self.mask[row, w]
        rec.injected[u, w] = np.where(np.isnan(measured), self.injected[row, w], measured)
        return rec
