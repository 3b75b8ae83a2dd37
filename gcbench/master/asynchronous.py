"""The master for asynchronous policies (Dutta et al., AISTATS 2018), on any cluster.

Workers compute continuously. The master updates the model after k results
(``k_batch_async``, ``async``: any k; ``k_async``: k from distinct workers,
which then restart on the new model). A worker's j-th job uses row j (mod
iterations) of the run's draws; a crashed job uses up its row, and the job a
worker starts after recovering does not crash, so every crash is followed by
progress. With ``k_batch_async`` and ``async`` a worker restarts as its result
arrives, on the model of that moment (the update its result completes comes
after it). Each recorded iteration is one update; its results' ``arrival`` is
the update's time, and ``staleness`` how many updates old they were on average.
"""

from __future__ import annotations

import numpy as np

from gcbench.cluster import Cluster, Restart, Result
from gcbench.master.outcome import stuck_update
from gcbench.results.recorder import RunRecorder

INF = float("inf")


class AsynchronousMaster:
    """Runs the updates of one asynchronous variant on ``cluster``, recording into ``rec``."""

    def __init__(self, cluster: Cluster, variant, crash: np.ndarray, rec: RunRecorder) -> None:
        self.cluster, self.variant, self.rec = cluster, variant, rec
        self.k, self.distinct = variant.policy.batch, variant.policy.distinct
        self.crash = crash.tolist()
        self.iterations = rec.iterations
        self.jobs = [0] * rec.n  # each worker's next job (its draw row, mod iterations)
        self.version_of: dict[int, int] = {}  # job id -> model version it started from
        self.serial = 0
        self.version, self.previous, self.batch = 0, 0.0, []
        self.updates: list[tuple[float, float, float]] = []  # (start, end, staleness) per update
        self.used: list[tuple] = []  # (update, worker, row, compute start, ready) per used result

    def run(self) -> None:
        for w in range(self.rec.n):
            self.submit(w, True)
        cluster, next_event = self.cluster, self.cluster.next_event
        while self.version < self.iterations:
            event = next_event(INF)
            if event is None:
                raise stuck_update(self.variant.display_label(), self.version, self.variant.policy)
            kind = type(event)
            if kind is Result:
                self._arrive(event)
            elif kind is Restart:
                self.submit(event.worker, False)
        cluster.abandon(cluster.running(self.version_of))

    def submit(self, w: int, may_crash: bool) -> None:
        row = self.jobs[w] % self.iterations
        self.jobs[w] += 1
        crash = may_crash and self.crash[row][w]
        job_id, self.serial = self.serial, self.serial + 1
        self.cluster.submit(w, job_id, row, crash)
        if crash:  # a Restart follows after the downtime (none when it crashed for good)
            self.rec.failed[min(self.version, self.iterations - 1), w] = True
        else:
            self.version_of[job_id] = self.version

    def _arrive(self, result: Result) -> None:
        batch = self.batch
        batch.append(result)
        if not self.distinct:
            self.submit(result.job.worker, True)
        if len(batch) == self.k:
            self._update(result.at)

    def _update(self, now: float) -> None:
        t, batch, version_of = self.version, self.batch, self.version_of
        started = [version_of.pop(r.job.job) for r in batch]
        self.updates.append((self.previous, now, t - sum(started) / len(batch)))
        self.used.extend((t, r.job.worker, r.job.row, r.compute_start, r.compute_end) for r in batch)
        self.previous, self.version, self.batch = now, t + 1, []
        if self.distinct and self.version < self.iterations:
            for r in batch:
                self.submit(r.job.worker, True)

    def record(self, mask: np.ndarray, injected: np.ndarray) -> RunRecorder:
        """Scatter the logged updates and results into the tables (once, vectorised)."""
        rec = self.rec
        for column in (rec.compute_start, rec.compute_end, rec.arrival):
            column[:] = np.nan
        starts, ends, staleness = np.array(self.updates).T
        rec.start[:], rec.end[:], rec.duration[:], rec.staleness[:] = starts, ends, ends - starts, staleness
        rec.reason[:] = "k_results"
        t, w, row, begun, ready = np.array(self.used).T
        t, w, row = t.astype(np.int64), w.astype(np.int64), row.astype(np.int64)
        rec.used[t, w] = True
        rec.compute_start[t, w], rec.compute_end[t, w], rec.arrival[t, w] = begun, ready, ends[t]
        rec.straggling[t, w], rec.injected[t, w] = mask[row, w], injected[row, w]
        return rec
