"""The master's end of one worker session of the torch.distributed cluster: the process, its channel, and
the two threads that report what it does to the cluster's one queue.

The receiver thread puts each message the worker sends; the watcher thread
waits for the process to exit, then for the receiver to end (gloo fails its
receive once the peer's socket closes), and only then reports the exit, so
every reply the worker sent before it died is in the queue ahead of its exit.
Each item carries the session's number: the cluster drops what an old session sends.
"""

from __future__ import annotations

import itertools
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from gcbench.real import torch_channel, torch_zygote
from gcbench.real.processes import alive
from gcbench.real.torch_worker import SPARE

EXIT_WAIT = 2.0  # seconds a worker gets to exit, and its receiver to end, before the next step


class LocalLauncher:
    """Worker processes on this machine, meeting the driver on its loopback store: forks of a zygote that has
    imported torch once (gcbench/real/torch_zygote.py; on Linux), or else fresh interpreters, the driver's
    own children.

    A fresh interpreter takes seconds to import torch (more than a 4 s downtime on a loaded machine), so
    without a zygote, ``keep_spare`` keeps one process more waiting, torch imported, to become the next
    replacement; a fork starts in milliseconds and needs none. Either way the downtime a scenario gives is the
    downtime a run has.
    """

    host = torch_channel.HOST

    def __init__(self, rendezvous, timeout: float) -> None:
        self.rendezvous, self.port, self.timeout = rendezvous, rendezvous.port, timeout
        self.spares = itertools.count()
        self.spare: tuple[subprocess.Popen, int] | None = None
        self.zygote = torch_zygote.Zygote(worker_environment()) if torch_zygote.usable() else None

    def spawn(self, worker: int, session: int, scope: str = ""):
        if self.zygote is not None:
            if self.zygote.gone.is_set():  # killed from outside, its workers with it: a new one forks the next
                self.zygote = torch_zygote.Zygote(worker_environment())
            arguments = worker_arguments(worker, session, self.port, self.timeout, self.host, scope)
            return self.zygote.spawn("worker", arguments, self.timeout)
        if self.spare is None or self.spare[0].poll() is not None:
            return self._start(worker, session, scope)
        process, number = self.spare
        self.rendezvous.set(f"spare{number}", f"{worker} {session}")
        self.keep_spare()
        return process

    def keep_spare(self) -> None:
        if self.zygote is not None:
            return  # (a fork is the spare)
        number = next(self.spares)
        self.spare = self._start(SPARE, number, ""), number

    def _start(self, worker: int, session: int, scope: str) -> subprocess.Popen:
        # a fresh interpreter (not multiprocessing's spawn, which re-runs the caller's main module)
        command = worker_command(worker, session, self.port, self.timeout, self.host, scope)
        return start_worker(command)

    def spare_pids(self) -> list[int]:
        """The spare and the zygote, while they run (the processes beside the sessions)."""
        processes = [self.spare[0]] if self.spare is not None else []
        processes += [self.zygote.process] if self.zygote is not None else []
        return [process.pid for process in processes if process.poll() is None]

    def close(self) -> None:
        """End the spare and the zygote (the sessions are the cluster's to end)."""
        if self.spare is not None:
            stop(self.spare[0])
            self.spare = None
        if self.zygote is not None:
            self.zygote.close()


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


def worker_command(worker: int, session: int, port: int, timeout: float, host: str, scope: str) -> list[str]:
    """The command line of one worker session (gcbench/real/torch_worker.py)."""
    arguments = worker_arguments(worker, session, port, timeout, host, scope)
    return [sys.executable, "-m", "gcbench.real.torch_worker", *arguments]


def worker_arguments(worker: int, session: int, port: int, timeout: float, host: str, scope: str) -> list[str]:
    """(An empty scope, the last, is left out: the worker's default.)"""
    arguments = [str(value) for value in (worker, session, port, timeout, host, scope)]
    return arguments if scope else arguments[:-1]


class WorkerSession:
    """Worker ``worker``'s ``session``-th process, started by ``launcher`` (here, or under torchrun by the
    worker's rank, gcbench/real/torchrun.py); ``connect`` waits for it to join its channel."""

    def __init__(self, worker: int, session: int, launcher, timeout: float, scope: str = "") -> None:
        self.worker, self.session, self.timeout = worker, session, timeout
        self.process = launcher.spawn(worker, session, scope)
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

    def send(self, message: dict[str, Any], wait: bool = True, attachment=None) -> bool:
        """Send to the worker (``wait`` False: post it, and go on; ``attachment``: a ``torch_channel.Attachment``
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
    root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root if not path else f"{root}{os.pathsep}{path}"}
