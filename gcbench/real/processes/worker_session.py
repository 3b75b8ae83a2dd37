"""The driver's end of one worker session (a torch-cluster worker, a DDP rank): the process, its channel, and
the two threads that report what it does to the driver's one queue.

The receiver thread puts each message the worker sends; the watcher thread
waits for the process to exit, then for the receiver to end (gloo fails its
receive once the peer's socket closes), and only then reports the exit, so
every reply the worker sent before it died is in the queue ahead of its exit.
Each item carries the session's number: the cluster drops what an old session sends.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import gcbench
from gcbench.real.processes import alive, channel

EXIT_WAIT = 2.0  # seconds a worker gets to exit, and its receiver to end, before the next step


def start_worker(command: list[str]) -> subprocess.Popen:
    """A worker process in a process group of its own: a Ctrl-C in the terminal reaches the driver, which
    ends its workers, and not a worker still importing torch (its death would leave the driver waiting to
    meet it). (Python 3.10 has no ``process_group``: a session of its own there.)"""
    own_group = {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}
    return subprocess.Popen(command, env=worker_environment(), stdin=subprocess.DEVNULL, **own_group)


def stop(process) -> None:
    """End a worker process (SIGTERM: a job it computes is lost anyway); kill it if that has not worked in time."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(EXIT_WAIT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(EXIT_WAIT)


class WorkerSession:
    """Worker ``worker``'s ``session``-th process, started by ``launcher`` (here, or under torchrun by the
    worker's rank, gcbench/real/torch/torchrun.py); ``connect`` waits for it to join its channel."""

    def __init__(self, worker: int, session: int, launcher, timeout: float, scope: str = "") -> None:
        self.worker, self.session, self.timeout = worker, session, timeout
        self.process = launcher.spawn(worker, session, scope)
        self.sender: channel.Sender | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def connect(self, rendezvous, inbox: queue.Queue) -> None:
        """Join both groups (each waits for the worker), then start the receiver and the watcher."""
        w, s = self.worker, self.session
        down = channel.group(rendezvous, w, s, channel.DOWN, 0, self.timeout)
        up = channel.group(rendezvous, w, s, channel.UP, 0, self.timeout)
        self.sender = channel.Sender(down, w, 1)
        take = lambda message: inbox.put((message["kind"], w, s, message))  # noqa: E731
        receiver = threading.Thread(target=channel.receive_forever, args=(up, 1, take), daemon=True)
        receiver.start()
        threading.Thread(target=self._watch, args=(receiver, inbox), daemon=True).start()

    def _watch(self, receiver: threading.Thread, inbox: queue.Queue) -> None:
        code = self.process.wait()
        receiver.join(EXIT_WAIT)
        inbox.put(("exit", self.worker, self.session, {"code": code}))

    def send(self, message: dict[str, Any], wait: bool = True, attachment=None) -> bool:
        """Send to the worker (``wait`` False: post it, and go on; ``attachment``: a ``channel.Attachment``
        the message carries); False when its channel is broken (its exit is then on its way; a posted message's
        failure shows at the next send)."""
        try:
            self.sender.send(message, attachment) if wait else self.sender.post(message, attachment)
        except RuntimeError:
            return False
        return True

    def stop(self) -> None:
        stop(self.process)

    def alive(self) -> bool:
        """Still running (a process of another machine: its exit not yet reported)."""
        if self.process.poll() is not None:
            return False
        return self.pid is None or alive(self.pid)


def worker_environment() -> dict[str, str]:
    """This environment, with the gcbench that runs here first on the worker's path."""
    root = str(Path(gcbench.__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root if not path else f"{root}{os.pathsep}{path}"}
