"""A worker process's side of its session (a torch-cluster worker, a DDP rank): it outlives neither its
driver nor its channel."""

from __future__ import annotations

import os
import queue
import time

from gcbench.real.processes import channel

PARENT_CHECK = 0.5  # seconds between checks that the driver (or the zygote that forked it) is still alive


def orphan_watch(parent: int) -> None:
    """No worker outlives its master, even one killed with SIGKILL (run in a daemon thread)."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK)
    os._exit(1)


def receive(down, take, inbox: queue.Queue) -> None:
    """Hand every message of the driver's channel ``down`` to ``take``; once it breaks, a stop to ``inbox``."""
    channel.receive_forever(down, 0, take)
    inbox.put({"kind": "stop"})  # the master is gone: nothing more will come
