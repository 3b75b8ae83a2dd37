"""The master's end of one worker session of the torch.distributed cluster: the process, its channel, and
the two threads that report what it does to the cluster's one queue.

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

from gcbench.real import torch_channel
from gcbench.real.processes import alive

EXIT_WAIT = 2.0  # seconds a worker gets to exit, and its receiver to end, before the next step


class WorkerSession:
    """Worker ``worker``'s ``session``-th process; ``connect`` waits for it to join its channel."""

    def __init__(self, worker: int, session: int, port: int, timeout: float) -> None:
        self.worker, self.session, self.timeout = worker, session, timeout
        # a fresh interpreter (not multiprocessing's spawn, which re-runs the caller's main module)
        command = [
            sys.executable,
            "-m",
            "gcbench.real.torch_worker",
            str(worker),
            str(session),
            str(port),
            str(timeout),
        ]
        self.process = subprocess.Popen(command, env=_environment(), stdin=subprocess.DEVNULL)
        self.sender: torch_channel.Sender | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def connect(self, rendezvous, inbox: queue.Queue) -> None:
        """Join both groups (each waits for the worker), then start the receiver and the watcher."""
        w, s = self.worker, self.session
        down = torch_channel.group(rendezvous, w, s, torch_channel.DOWN, 0, self.timeout)
        up = torch_channel.group(rendezvous, w, s, torch_channel.UP, 0, self.timeout)
        self.sender = torch_channel.Sender(down, w, 1)
        take = lambda message: inbox.put((message["kind"], w, s, message))  # noqa: E731
        receiver = threading.Thread(target=torch_channel.receive_forever, args=(up, 1, take), daemon=True)
        receiver.start()
        threading.Thread(target=self._watch, args=(receiver, inbox), daemon=True).start()

    def _watch(self, receiver: threading.Thread, inbox: queue.Queue) -> None:
        code = self.process.wait()
        receiver.join(EXIT_WAIT)
        inbox.put(("exit", self.worker, self.session, {"code": code}))

    def send(self, message: dict[str, Any]) -> bool:
        """Send to the worker; False when its channel is broken (its exit is then on its way)."""
        try:
            self.sender.send(message)
        except RuntimeError:
            return False
        return True

    def stop(self) -> None:
        """End the process (SIGTERM: a job it computes is lost anyway); kill it if that has not worked in time."""
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(EXIT_WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(EXIT_WAIT)

    def alive(self) -> bool:
        return self.process.poll() is None and alive(self.pid)


def _environment() -> dict[str, str]:
    """This environment, with the gcbench that runs here first on the worker's path."""
    root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root if not path else f"{root}{os.pathsep}{path}"}
