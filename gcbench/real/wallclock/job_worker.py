"""The worker logic every wall-clock backend runs, whatever carries its jobs (a Ray actor, a torch.distributed
worker process): abandonment, the drawn crash, the restart check, the injected sleep; and the worker of a run
that does not train, whose job sleeps the modelled compute time. The worker that trains is
gcbench/real/wallclock/gradient_worker.py.

A running job is never interrupted, so abandonment is cooperative: the
backend hands ``abandon`` to the worker at once (Ray: in the actor's "control"
concurrency group, its own thread, so it never queues behind computes; torch:
from the process's receiving thread), and a running job checks it between
partitions and while it sleeps. A job abandoned before it began does not run at
all (``started`` false in its reply); one abandoned while running still returns
its timings.

No torch here: a timing-only run (the cluster conformance suite, a run without
data) starts workers that import nothing heavy, so they start and restart fast.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

SLEEP_SLICE = 0.005  # seconds between abandonment checks while sleeping
CRASH_EXIT_CODE = 70  # the exit status of a worker the failure model crashes


class WorkerRestarted(RuntimeError):
    """A job reached a restarted worker before the cluster gave it its data back."""


class JobWorker:
    """The part of a worker the cluster talks to besides ``compute``: ``load``, ``abandon``."""

    def __init__(self, worker: int) -> None:
        self.worker = worker
        self.loaded = False
        self.abandoned: set[int] = set()  # job ids the cluster stopped waiting for
        self.lock = threading.Lock()

    def load(self, shards: dict[int, Any]) -> int:
        """Take the partitions' data (``receive``); the pid."""
        self.receive(shards)
        self.loaded = True
        return os.getpid()

    def receive(self, shards: dict[int, Any]) -> None:
        """Keep the data of the partitions (a worker that does not train has none)."""

    def has_data(self) -> bool:
        """Whether ``load`` gave it its data since it (re)started."""
        return self.loaded

    def abandon(self, job: int) -> None:
        self.abandoned.add(job)

    def begin(self, job: int, crash: bool) -> dict[str, Any] | None:
        """The start of every job: the drawn crash exits the process; a job abandoned before it began does
        not run (its reply, returned at once); otherwise None and the job runs."""
        if crash:
            os._exit(CRASH_EXIT_CODE)
        if not self.has_data():
            raise WorkerRestarted(f"worker {self.worker} was restarted and has no data yet")
        if job in self.abandoned:
            return {"started": False}
        return None

    def sleep(self, job: int, until: float) -> bool:
        """Sleep until wall time ``until`` unless the job is abandoned first; whether it was."""
        while (left := until - time.time()) > 0:
            if job in self.abandoned:
                return True
            time.sleep(min(SLEEP_SLICE, left))
        return job in self.abandoned

    def ping(self) -> int:
        return os.getpid()

    @staticmethod
    def reply(start: float, end: float, abandoned: bool, **fields: Any) -> dict[str, Any]:
        return {"started": True, "compute_start": start, "compute_end": end, "abandoned": abandoned, **fields}


class SleepingWorker(JobWorker):
    """A worker of a run without data: each job sleeps its modelled compute time (the run's ``busy`` draw)."""

    def compute(self, job: int, seconds: float, crash: bool = False) -> dict[str, Any]:
        if (reply := self.begin(job, crash)) is not None:
            return reply
        with self.lock:
            start = time.time()
            abandoned = self.sleep(job, start + seconds)
            return self.reply(start, time.time(), abandoned)

    def compute_messages(self, job: int, seconds: float, crash: bool, fractions: tuple[float, ...]):
        """A job of a worker with several messages, one reply per message as each is ready: message i once
        ``fractions[i]`` of the modelled time has passed (the simulator's split). An abandoned job's last reply
        says so; every reply says whether it is the job's ``final`` one."""
        if (reply := self.begin(job, crash)) is not None:
            yield {**reply, "final": True}
            return
        with self.lock:
            start = time.time()
            for i, fraction in enumerate(fractions):
                abandoned = self.sleep(job, start + seconds * fraction)
                yield self.reply(start, time.time(), abandoned, message=i, final=abandoned or i == len(fractions) - 1)
                if abandoned:
                    return
