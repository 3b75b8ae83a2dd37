"""A worker process of the torch.distributed cluster (gcbench/real/torch/cluster.py): one worker session.

It computes what a Ray worker computes, with the same classes every backend runs (gcbench/real/wallclock/job_worker.py's
SleepingWorker for a timing-only run, gcbench/real/wallclock/gradient_worker.py's GradientWorker for one that trains):
only the transport differs. Its receiving thread takes the master's messages off the channel
(gcbench/real/processes/channel.py):
an ``abandon`` takes effect at once (the computing job checks it between partitions and while it sleeps),
everything else (data, jobs with the weights they need, stop) queues for the main thread in the order sent, so a job
computes on the weights published before it. A drawn crash exits the process as the job starts
(``os._exit``, as on Ray); the master notices the exit of its child and starts a replacement.
"""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
from typing import Any

SPARE_POLL = 0.01  # seconds between a spare's looks for its assignment
SPARE = -1  # the worker number a spare process starts with; its real one comes through the store


def serve(worker: int, session: int, port: int, timeout: float, host: str = "127.0.0.1", scope: str = "") -> None:
    """The process's whole life: join the channel (on the store at ``host``:``port``, under the cluster's
    ``scope``), then compute jobs until told to stop."""
    from gcbench.real.processes.child import orphan_watch, receive

    # first, before torch's import (seconds on a loaded machine): a master killed meanwhile is noticed
    threading.Thread(target=orphan_watch, args=(os.getppid(),), daemon=True).start()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (in a process group of its own anyway: the master ends it)

    from gcbench.real.processes import channel
    from gcbench.real.wallclock.threads import limit_process_threads

    limit_process_threads(1)
    rendezvous = channel.scoped(channel.store(port, timeout, host), scope)
    if worker == SPARE:
        worker, session = _assignment(rendezvous, session)
    down = channel.group(rendezvous, worker, session, channel.DOWN, 1, timeout)
    up = channel.group(rendezvous, worker, session, channel.UP, 1, timeout)
    inbox: queue.Queue = queue.Queue()
    abandoned: set[int] = set()  # shared with the worker object once the data message has made it

    def take(message: dict[str, Any]) -> None:
        if message["kind"] == "abandon":
            abandoned.add(message["job"])
        else:
            inbox.put(message)

    threading.Thread(target=receive, args=(down, take, inbox), daemon=True).start()
    _work(worker, abandoned, inbox, channel.Sender(up, worker, 0))
    os._exit(0)  # (gloo's threads and the daemon threads would otherwise hold the interpreter's exit)


def _assignment(rendezvous, number: int) -> tuple[int, int]:
    """A spare process: what it needs before a job imported, wait to be told which worker and session it is."""
    import gcbench.real.wallclock.gradient_worker  # noqa: F401

    key = f"spare{number}"
    while not rendezvous.check([key]):
        time.sleep(SPARE_POLL)
    worker, session = rendezvous.get(key).decode().split()
    return int(worker), int(session)


def _worker(worker: int, spec: dict[str, Any] | None):
    if spec is None:
        from gcbench.real.wallclock.job_worker import SleepingWorker

        return SleepingWorker(worker)
    from gcbench.real.wallclock.gradient_worker import GradientWorker

    return GradientWorker(worker, spec["scheme"], spec["setup"])


def _work(worker: int, abandoned: set[int], inbox: queue.Queue, sender) -> None:
    actor = weights = None
    while (message := inbox.get())["kind"] != "stop":
        kind = message["kind"]
        if kind == "data":
            actor = _worker(worker, message["spec"])
            actor.abandoned = abandoned
            sender.send({"kind": "ready", "pid": actor.load(message["shards"])})
        else:
            weights = message.get("weights", weights)  # new weights come with the first job after they change
            for reply in _replies(actor, message, weights):  # one per message as each is ready, or the job's one
                sender.send({"kind": "reply", "job": message["job"], "reply": reply})


def _replies(actor, message: dict[str, Any], weights):
    job, crash = message["job"], message["crash"]
    if "fractions" in message:  # a worker with several messages: each sent as soon as it is ready
        if "seconds" in message:
            yield from actor.compute_messages(job, message["seconds"], crash, message["fractions"])
        else:
            yield from actor.compute_messages(
                job, weights, message["straggling"], crash, message["batch"], message["overhead"]
            )
        return
    if "seconds" in message:
        yield actor.compute(job, message["seconds"], crash)
        return
    yield actor.compute(job, weights, message["straggling"], crash, message["batch"], message["overhead"])


def main(arguments: list[str]) -> None:
    """The command line ``worker session port timeout [host [scope]]``: as ``python -m`` runs it, or a zygote's fork."""
    worker, session, port = (int(argument) for argument in arguments[:3])
    serve(worker, session, port, float(arguments[3]), *arguments[4:6])


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
