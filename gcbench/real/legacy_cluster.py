"""The Ray workers of one run as today's masters (real/master.py, real/asynchronous.py) drive them.

Kept only until those masters run on ``RayCluster`` (gcbench/real/cluster.py, the cluster protocol); then
this module goes. ``gcbench.real.cluster`` still exports ``WorkerCluster`` and ``Event`` from here.

Both masters (synchronous and asynchronous) dispatch jobs here and take events
as they come: a result, a worker failure, or a restarted worker. A failure is a
job whose actor died: one the failure model crashed on purpose (the worker
exits as the job starts), or any other. Ray restarts the actor
(``max_restarts=-1``); the worker is down until its downtime has passed and it
has its data back (``load``, which waits for the restart). A worker the failure model crashes for good
(``downtime: null``) is killed without restart.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from gcbench.errors import GcbenchError
from gcbench.real.cluster import ClusterStuck
from gcbench.real.sleeper import WorkerRestarted

log = logging.getLogger("gcbench")


@dataclass(frozen=True)
class Job:
    """One compute call: worker, job id (what ``abandon`` refers to), when it was sent, whether it crashes."""

    worker: int
    job: int
    sent: float
    crash: bool


@dataclass(frozen=True)
class Event:
    """What ``WorkerCluster.next_event`` returns: ``kind`` is "result", "failed" or "restarted"."""

    kind: str
    worker: int
    job: Job | None = None
    result: dict[str, Any] | None = None
    at: float = 0.0


class WorkerCluster:
    """n GradientWorker actors, each holding its partitions' data (references the cluster keeps alive)."""

    def __init__(self, scheme, shards: list, setup: dict[str, Any], timeout: float, downtime: float | None) -> None:
        import ray

        from gcbench.real.worker import GradientWorker

        self.ray, self.n, self.timeout, self.downtime = ray, scheme.n, timeout, downtime
        self.shards = shards  # object refs of every partition's data, held for restarts
        spec = {"name": scheme.name, "n": scheme.n, "s": scheme.s, "params": dict(scheme.params)}
        # abandon runs in its own thread ("control"), so it never waits behind queued computes
        actor = ray.remote(concurrency_groups={"control": 1}, num_cpus=0, max_restarts=-1)(GradientWorker)
        self.held = [{j: [shards[j]] for j in scheme.partitions(w)} for w in range(self.n)]
        self.actors = [actor.remote(w, spec, setup) for w in range(self.n)]
        self.jobs: dict[Any, Job] = {}  # compute refs in flight
        self.straggling_of: dict[Any, bool] = {}  # compute ref -> its straggling draw (replies no longer carry it)
        self.pings: dict[Any, int] = {}  # data reloads after a restart, awaited: ref -> worker
        self.down_until = [0.0] * self.n  # wall time before which a worker is down
        self.dead: set[int] = set()
        self.died_at = [float("-inf")] * self.n  # wall time each worker's last exit was noticed
        self.failures = 0  # worker process exits noticed
        self._wait_ready()

    def _wait_ready(self) -> None:
        pings = [a.load.remote(held) for a, held in zip(self.actors, self.held, strict=True)]
        ready, _ = self.ray.wait(pings, num_returns=len(pings), timeout=self.timeout)
        if len(ready) < len(pings):
            raise ClusterStuck(f"only {len(ready)} of {len(pings)} workers started within {self.timeout:g} s.")

    # -- state ----------------------------------------------------------------------
    def available(self, w: int, now: float) -> bool:
        """Whether worker w can take a job at wall time ``now``."""
        return not self.down(w, now)

    def down(self, w: int, now: float) -> bool:
        """Crashed and not yet back (downtime running, restart unconfirmed, or crash pending), or dead."""
        if w in self.dead or now < self.down_until[w] or w in self.pings.values():
            return True
        return any(job.worker == w and job.crash for job in self.jobs.values())

    def next_recovery(self, workers) -> float:
        """The earliest wall time at which one of these down workers' downtime ends (inf if none)."""
        now = time.time()
        times = [self.down_until[w] for w in workers if w not in self.dead and self.down_until[w] > now]
        return min(times, default=float("inf"))

    def in_flight(self, job_ids) -> bool:
        """Whether any job with one of these ids is still running."""
        return any(job.job in job_ids for job in self.jobs.values())

    # -- jobs -------------------------------------------------------------------------
    def submit(
        self, w: int, job_id: int, weights, straggling: bool, crash: bool, batch: int, overhead: float = 0.0
    ) -> Job:
        """Start a job on worker w; ``overhead`` is the seconds of compute.overhead it sleeps on top."""
        now = time.time()
        ref = self.actors[w].compute.remote(job_id, weights, straggling, crash, batch, overhead)
        job = self.jobs[ref] = Job(w, job_id, now, crash)
        self.straggling_of[ref] = straggling
        if crash:  # down from now, for its downtime (for good without one)
            self.down_until[w] = now + (float("inf") if self.downtime is None else self.downtime)
        return job

    def abandon(self, jobs: list[Job]) -> None:
        """Tell these jobs' workers to stop (they still report their timings)."""
        for job in jobs:
            if not job.crash:
                self.actors[job.worker].abandon.options(concurrency_group="control").remote(job.job)

    def next_event(self, until: float) -> Event | None:
        """Block until a result, a failure or a restart, or until wall time ``until`` (then None)."""
        refs = list(self.jobs) + list(self.pings)
        if not refs:
            time.sleep(max(0.0, min(until - time.time(), self.timeout)))
            return None
        done, _ = self.ray.wait(refs, num_returns=1, timeout=max(0.0, until - time.time()))
        if not done:
            return None
        ref, at = done[0], time.time()
        if ref in self.pings:
            w = self.pings.pop(ref)
            try:
                self.ray.get(ref)
            except self.ray.exceptions.RayError:
                self._lose(w)
                return Event("failed", w, at=at)
            return Event("restarted", w, at=at)
        job = self.jobs.pop(ref)
        try:
            result = self.ray.get(ref)
        except self.ray.exceptions.RayActorError:
            self._failed(job, at)
            return Event("failed", job.worker, job, at=at)
        except self.ray.exceptions.RayTaskError as error:
            if isinstance(error.cause, WorkerRestarted):  # restarted unnoticed: give it its data back
                self._failed(job, at)
                return Event("failed", job.worker, job, at=at)
            raise GcbenchError(f"worker {job.worker} raised an error: {error.cause!r}") from None
        if not result["started"]:  # abandoned before it began: it reports no time of its own
            result.update(compute_start=at, compute_end=at, injected=0.0, abandoned=True)
        result.update(ready=result["compute_end"], straggling=self.straggling_of.pop(ref))
        return Event("result", job.worker, job, result, at)

    def _failed(self, job: Job, at: float) -> None:
        """A job's actor died: keep the worker down for its downtime, and confirm its restart (or kill it).

        One exit fails every job in flight on the worker (a job that had
        finished can fail too, when the process exits before its reply is
        sent), and they are reported in any order. So a failure is counted once
        per exit, and it is the failure model's crash when that model's job was
        among them; a job sent before the exit was noticed died with it.
        """
        w = job.worker
        if job.sent <= self.died_at[w]:  # the same exit, already counted
            return
        self.died_at[w] = at
        self.failures += 1
        crash = job.crash or any(other.worker == w and other.crash for other in self.jobs.values())
        if self.failures == 1:  # Ray prints its own alarming "(raylet) A worker died ..." lines; say what they are
            cause = "a crash the failure model drew" if crash else "not a crash the scenario drew"
            log.warning(
                f"gcbench: worker {w}'s process exited ({cause}); Ray's '(raylet) A worker died' messages about "
                "such exits are expected."
            )
        if crash and self.downtime is None:
            self._lose(w)
            return
        if not crash:  # a failure the scenario did not draw: back as soon as Ray restarts it
            self.down_until[w] = max(self.down_until[w], at)
        self.pings[self.actors[w].load.options(max_task_retries=-1).remote(self.held[w])] = w

    def restarting(self, workers) -> set[int]:
        """Those of these workers whose process Ray is restarting, noticed by the master or not.

        A worker that dies while idle fails no job until Ray has restarted it
        (its next job waits for the restart), so only Ray's actor table knows it
        is down. ``ray.util.state`` would need the dashboard; this asks the GCS.
        """
        from ray._private.state import actors

        ids = {self.actors[w]._actor_id.hex(): w for w in workers}
        return {ids[actor] for actor in actors(actor_state_name="RESTARTING") if actor in ids} if ids else set()

    def _lose(self, w: int) -> None:
        self.dead.add(w)
        self.down_until[w] = float("inf")
        self.ray.kill(self.actors[w], no_restart=True)
        for ref in [ref for ref, job in self.jobs.items() if job.worker == w]:
            del self.jobs[ref]

    def drain(self, seconds: float) -> list[Event]:
        """Results of jobs still in flight (abandoned work reporting its timings), for at most ``seconds``."""
        events, until = [], time.time() + seconds
        while self.jobs and time.time() < until:
            event = self.next_event(until)
            if event is None:
                break
            events.append(event)
        return events

    def shutdown(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
