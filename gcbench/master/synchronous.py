"""The master for synchronous policies, on any cluster: dispatch, wait as the policy's online rule says, step.

Per iteration t every live worker gets one job (draw row t); the failure
model's crash applies to a worker's first job of the iteration, and a crashed
worker redoes the iteration once it is back. The policy's ``stop_now`` is the
only stopping rule: called after the results of each instant with its time,
and once at ``wake_at(first)`` before any later result (``first``: when the
iteration's first result came, inf before it), so it decides on every result
of an instant together, as the fast path's stop times do. Results arriving at
the very instant the master stops are used too (as by the fast path, whose used set is "arrived by
the stop"). With ``stale_work: abandon`` the unfinished jobs are abandoned at
the stop, and jobs not yet started never run; with ``finish`` every worker
works through every iteration's job in order, after the master moved on.

A worker that sends several messages may send each as soon as it is ready
(``Result.message``): the policy sees the message ids in the order they
arrived, so a worker's early messages count before its job ends, and where the
scheme's workers send several messages each message is logged (the messages
table, ``rec.messages``).

When the run trains, the master publishes the learner's weights as each
iteration starts and hands the learner the iteration's used results at its
stop (a job's messages gathered into one result). On a wall clock every wait is bounded by ``cluster.timeout``; a worker
lost in a way the failure model did not draw redoes the iteration once back.
"""

from __future__ import annotations

import math

import numpy as np

from gcbench.cluster import Cluster, Failure, Result
from gcbench.coding.pipelined import CachedVersions, used_staleness
from gcbench.master.learner import Learner
from gcbench.master.messages import message_ids, whole_jobs
from gcbench.master.outcome import stuck_iteration, timed_out_iteration
from gcbench.master.sequential import RoundCode
from gcbench.results.messages import MessageLog, sends_several
from gcbench.results.recorder import RunRecorder

INF = float("inf")


class SynchronousMaster:
    """Runs the iterations of one synchronous variant on ``cluster``, recording into ``rec``."""

    def __init__(
        self,
        cluster: Cluster,
        scheme,
        variant,
        crash: np.ndarray,
        stale_work: str,
        rec: RunRecorder,
        learner: Learner | None = None,
    ):
        self.cluster, self.scheme, self.variant, self.policy = cluster, scheme, variant, variant.policy
        self.crash, self.finish_stale, self.rec, self.learner = crash, stale_work == "finish", rec, learner
        self.node_of = None  # each worker's node, where the cluster has a topology (errors name a lost node)
        self.scheduled_dead: set[int] = set()  # the workers failures.schedule crashes for good (errors say so)
        self.received: list[Result] = []  # the current iteration's used results, in arrival order
        self.pending: list[list[tuple[int, bool]]] = [[] for _ in range(scheme.n)]  # per worker: (iteration, crash)
        self.held: set[int] = set()  # workers with pending jobs
        if sends_several(scheme) and rec.messages is None:  # (a resumed real run's holds its checkpoint's rows)
            rec.messages = MessageLog()
        self.log = rec.messages
        # a pipelined run that computes no gradients: the caches' versions, from the timing alone (a result that
        # computed gradients reports its worker's); a job computes on the weights of the iteration it was sent in
        self.ages = CachedVersions(scheme) if scheme.pipelined and learner is None else None
        self.sent_in: dict = {}  # job -> the iteration in progress when it was submitted
        # a sequential scheme: what "decodable" means in each round (the straggler pattern, the job due)
        self.rounds = RoundCode(scheme, rec.iterations) if scheme.sequential else None
        self.current = 0
        for column in (rec.compute_start, rec.compute_end, rec.arrival):
            column[:] = np.nan  # a job that never started has no times

    def run(self) -> None:
        for _ in self.steps(0, self.rec.iterations):
            pass
        self.finish()

    def steps(self, first: int, last: int):
        """Iterations first..last-1, yielding each one's index once its row of the tables is complete."""
        for t in range(first, last):
            self.iteration(t)
            yield t

    def finish(self, seconds: float = INF) -> None:
        """Late work reports its timings, for at most ``seconds`` (with ``finish``, workers work through what
        they hold)."""
        until = self.cluster.now + seconds
        while True:
            self._dispatch(None)
            if not self.cluster.pending():
                break  # (a wall clock would wait out the seconds for nothing)
            event = self.cluster.next_event(until)
            if event is None:
                break
            self._note(event, None)

    def iteration(self, t: int) -> None:
        cluster, rec = self.cluster, self.rec
        cluster.between_iterations(t)
        start, self.current = cluster.now, t
        if self.learner is not None:
            cluster.publish(self.learner.weights())
        for w in range(self.scheme.n):
            rec.failed[t, w] = cluster.down(w)
            if w in cluster.dead:
                self._never(t, w)
                continue
            self._hold(w, t, bool(self.crash[t, w]))
        self.order: list[int] = []
        self.received = []
        code = self.scheme if self.rounds is None else self.rounds.begin(t)
        reason, stop, wake = None, 0.0, self.policy.wake_at()
        first, woken = INF, False  # when the first result came; whether the policy's wake time has passed
        limit = start + cluster.timeout  # infinite in virtual time
        while reason is None:
            self._dispatch(t)
            if self._nothing_more(t) and wake == INF:
                answered = int(self.rec.used[t].sum())
                label = self.variant.display_label()
                scheduled = bool(self.scheduled_dead.intersection(cluster.dead))
                raise stuck_iteration(label, t, self.scheme, self.policy, cluster.dead, answered, self.node_of,
                                      scheduled)  # fmt: skip
            until = start + wake
            if limit < until:
                until = limit
            event = cluster.next_event(until)
            if event is None and until < start + wake:
                raise timed_out_iteration(t, cluster.timeout, len(self.received), self.scheme.n)
            if event is None:  # the wake time: the policy decides before any later result
                stop = wake
                reason = self.policy.stop_now(code, self.order, wake, self._nothing_more(t), first)
                wake, woken = INF, True
                continue
            used = self._note(event, t)
            while (tied := cluster.next_event(event.at)) is not None:  # the policy decides on all of one instant
                used = self._note(tied, t) or used
            if used:
                stop = event.at - start
                if first == INF:  # a policy may time its wake from the first result
                    first = stop
                    if not woken:
                        wake = self.policy.wake_at(first)
                reason = self.policy.stop_now(code, self.order, stop, self._nothing_more(t), first)
        while (event := cluster.next_event(start + stop)) is not None:  # results at the same instant count too
            self._note(event, t)
        self._finish(t, start, stop, reason)

    def _hold(self, w: int, t: int, crash: bool) -> None:
        self.pending[w].append((t, crash))
        self.held.add(w)

    def _dispatch(self, t: int | None) -> None:
        """Submit every pending job of workers that are up, in iteration order (a redo before the next job)."""
        cluster = self.cluster
        for w in sorted(w for w in self.held if not cluster.down(w)):
            self.held.discard(w)
            jobs, self.pending[w] = sorted(self.pending[w]), []
            for i, (row, crash) in enumerate(jobs):
                served = -1 if self.rounds is None else self.rounds.serves(w, row)
                if served < 0:  # (a sequential round that ended without it: late work, never used)
                    job = cluster.submit(w, job=row, row=row, crash=crash, batch=row)
                else:  # the job its round's task serves, on that job's weights and mini-batch (M-SGC: each task's)
                    tasks = self.rounds.tasks(w, row)
                    job = cluster.submit(w, job=row, row=row, crash=crash, batch=served, version=served, tasks=tasks)
                if self.ages is not None:
                    self.sent_in[job] = self.current
                if not crash:
                    continue
                self.rec.failed[row, w] = True
                if w in cluster.dead:  # crashed for good: this job and those after it never happen
                    for never, _ in jobs[i:]:
                        self._never(never, w)
                    break
                for later, later_crash in [(row, False), *jobs[i + 1 :]]:
                    self._hold(w, later, later_crash)  # it redoes the iteration once back, then the rest
                break

    def _never(self, t: int, w: int) -> None:
        """Worker w, dead, sends nothing in iteration t (the fast path's inf times)."""
        rec = self.rec
        rec.compute_start[t, w] = rec.compute_end[t, w] = rec.arrival[t, w] = INF

    def _nothing_more(self, t: int) -> bool:
        held = any(row == t for w in self.held for row, _ in self.pending[w])
        return not held and not self.cluster.in_flight((t,))

    def _note(self, event, t: int | None) -> bool:
        """Record an event; True when it is a result of iteration t that the master now holds."""
        kind = type(event)
        if kind is Result:
            job, rec = event.job, self.rec
            w, row = job.worker, job.id
            rec.compute_start[row, w], rec.compute_end[row, w], rec.arrival[row, w] = (
                event.compute_start, event.compute_end, event.at,
            )  # fmt: skip
            if not math.isnan(event.injected):  # measured by a real worker (NaN: the modelled draw stands)
                rec.injected[row, w] = event.injected
            if self.ages is not None:
                self._age(event)
            used = row == t and not event.abandoned
            if self.log is not None:
                self._log(event, used)
            if used:
                rec.used[row, w] = True
                self.order += message_ids(self.scheme, event)
                self.received.append(event)
                return True
            return False
        if kind is Failure:
            if self.ages is not None:
                self.ages.lost(event.worker)
                self.sent_in.pop(event.job, None)
            self._lost(event, t)
        # a drawn crash was noted at submission, and after a Restart the next dispatch submits the worker's
        # pending jobs
        return False

    def _age(self, result: Result) -> None:
        """What a training worker's cache would report with this result (none for abandoned work, which
        computes nothing)."""
        version = self.sent_in.pop(result.job, self.current)
        if not result.abandoned:
            result.versions = self.ages.computed(result.job.worker, result.job.row, version)

    def _log(self, result: Result, used: bool) -> None:
        w, own = result.job.worker, self.scheme.messages(result.job.worker)
        for mid in message_ids(self.scheme, result):
            self.log.add(result.job.id, w, own.index(mid), mid, result.compute_end, result.at, used)

    def _update(self, t: int) -> None:
        """Step the learner with the iteration's results; for a sequential scheme, with the results of the job due
        (none in its first rounds)."""
        rec, results = self.rec, whole_jobs(self.received)
        if self.rounds is not None:
            results = self.rounds.collect(results)
            if results is None:
                return
        rec.loss[t] = self.learner.update(results, rescale=False)
        rec.compression_error[t] = self.learner.compression_error

    def _lost(self, failure: Failure, t: int | None) -> None:
        """A worker lost in a way the failure model did not draw: it redoes its job once back (if it comes back)."""
        job, w = failure.job, failure.worker
        if job is not None and job.crash:
            return  # the failure model's crash, noted when it was submitted
        if t is not None:
            self.rec.failed[t, w] = True
        if job is None:
            return
        self.rec.failed[job.id, w] = True
        if w in self.cluster.dead:
            if job.id == t:
                self._never(t, w)
        elif job.id == t or self.finish_stale:
            self._hold(w, job.id, False)

    def _finish(self, t: int, start: float, stop: float, reason: str) -> None:
        rec, cluster = self.rec, self.cluster
        rec.start[t], rec.duration[t], rec.end[t], rec.reason[t] = start, stop, start + stop, reason
        if not self.finish_stale:
            self.cluster.abandon(self.cluster.running((t,)))
            if self.sent_in:  # abandoned work computes nothing
                self.sent_in = {job: sent for job, sent in self.sent_in.items() if job.id != t}
            for w in list(self.held):
                self.pending[w] = [(row, crash) for row, crash in self.pending[w] if row != t]
                if not self.pending[w]:
                    self.held.discard(w)
        if self.learner is not None:
            self._update(t)
        if self.scheme.pipelined:  # the oldest cached partition gradient the decode used
            rec.staleness[t] = used_staleness(self.scheme, self.received, t)
        if self.rounds is not None:  # the rest of the round's results are lost; the decoded job's delay
            rec.staleness[t] = self.rounds.end(self.order)
        unanswered = np.flatnonzero(~(rec.used[t] | rec.failed[t]))
        for w in cluster.restarting(unanswered.tolist()) if unanswered.size else ():
            rec.failed[t, w] = True  # killed while idle: a real cluster is restarting it
