"""Who starts the torch cluster's worker processes on this machine, and their command line."""

from __future__ import annotations

import itertools
import subprocess
import sys

from gcbench.real.processes import channel, zygote
from gcbench.real.processes.worker_session import start_worker, stop, worker_environment
from gcbench.real.torch.worker import SPARE

WORKER = "gcbench.real.torch.worker"  # the module a worker session runs (python -m, or a zygote's fork)
# what the zygote imports before it forks: a fork computes its first job without importing anything
PRELOAD = (
    WORKER,
    "gcbench.real.wallclock.job_worker",
    "gcbench.real.wallclock.gradient_worker",
    "gcbench.real.processes.child",
)


class LocalLauncher:
    """Worker processes on this machine, meeting the driver on its loopback store: forks of a zygote that has
    imported torch once (gcbench/real/processes/zygote.py; on Linux), or else fresh interpreters, the driver's
    own children.

    A fresh interpreter takes seconds to import torch (more than a 4 s downtime on a loaded machine), so
    without a zygote, ``keep_spare`` keeps one process more waiting, torch imported, to become the next
    replacement; a fork starts in milliseconds and needs none. Either way the downtime a scenario gives is the
    downtime a run has.
    """

    host = channel.HOST

    def __init__(self, rendezvous, timeout: float) -> None:
        self.rendezvous, self.port, self.timeout = rendezvous, rendezvous.port, timeout
        self.spares = itertools.count()
        self.spare: tuple[subprocess.Popen, int] | None = None
        self.zygote = zygote.Zygote(worker_environment(), PRELOAD) if zygote.usable() else None

    def spawn(self, worker: int, session: int, scope: str = ""):
        if self.zygote is not None:
            if self.zygote.gone.is_set():  # killed from outside, its workers with it: a new one forks the next
                self.zygote = zygote.Zygote(worker_environment(), PRELOAD)
            arguments = worker_arguments(worker, session, self.port, self.timeout, self.host, scope)
            return self.zygote.spawn(WORKER, arguments, self.timeout)
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


def worker_command(worker: int, session: int, port: int, timeout: float, host: str, scope: str) -> list[str]:
    """The command line of one worker session (gcbench/real/torch/worker.py)."""
    arguments = worker_arguments(worker, session, port, timeout, host, scope)
    return [sys.executable, "-m", WORKER, *arguments]


def worker_arguments(worker: int, session: int, port: int, timeout: float, host: str, scope: str) -> list[str]:
    """(An empty scope, the last, is left out: the worker's default.)"""
    arguments = [str(value) for value in (worker, session, port, timeout, host, scope)]
    return arguments if scope else arguments[:-1]


class NodesLauncher:
    """Worker processes on the nodes of an emulated cluster (``gcbench run --emulate``): each worker's a fork of
    its node's zygote (``zygote.NodeZygotes``), so its channel to the master (on node 0) crosses the node's
    shaped links; the workers meet the driver's store at node 0's address. A replacement is a fork, as on one
    machine, so it needs no spare."""

    def __init__(self, rendezvous, timeout: float, nodes, worker_nodes: list[int]) -> None:
        from gcbench.real.emulation import INTERFACE

        self.port, self.timeout, self.worker_nodes = rendezvous.port, timeout, worker_nodes
        self.host = nodes.addresses[0]
        self.zygotes = zygote.NodeZygotes(nodes, worker_environment(), PRELOAD, INTERFACE)

    def spawn(self, worker: int, session: int, scope: str = ""):
        arguments = worker_arguments(worker, session, self.port, self.timeout, self.host, scope)
        return self.zygotes.spawn(self.worker_nodes[worker], WORKER, arguments, self.timeout)

    def keep_spare(self) -> None:
        """(A replacement is a fork of its node's zygote: it needs no spare.)"""

    def spare_pids(self) -> list[int]:
        return self.zygotes.pids()

    def close(self) -> None:
        self.zygotes.close()
