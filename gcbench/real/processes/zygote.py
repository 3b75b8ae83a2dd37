"""A zygote: one process that imports torch once and forks worker processes on request (the torch
backend's worker sessions, the DDP baseline's ranks).

A worker process spends most of its start importing torch (about 1.4 s of CPU, several seconds on a loaded
machine); a fork of a process that has imported it starts in milliseconds. The zygote imports torch and the
modules its driver names (what the forks run), runs no torch work (a fork of a process whose torch ran
multi-threaded work can hang in its own first one) and starts no thread, then forks one child per request.
Each child runs a module's ``main(arguments)`` exactly as ``python -m MODULE ARGUMENTS...`` would (a
torch-cluster worker session, gcbench/real/torch/worker.py; a DDP rank, gcbench/real/ddp/rank.py), in a
process group of its own; its parent is the zygote, whose exit it notices as it would the master's.

The protocol is lines of text: the driver writes ``spawn TICKET MODULE ARGUMENTS...`` to the zygote's stdin;
the zygote answers on a pipe of its own with ``ready`` once, ``started TICKET PID`` and ``exited PID CODE``
(the code as ``subprocess.Popen.returncode`` has it: negative for a signal). When its stdin closes, or the
driver is gone, the zygote ends its children and exits.
"""

from __future__ import annotations

import importlib
import itertools
import os
import select
import signal
import subprocess
import sys
import threading
import time

POLL = 0.02  # seconds between the zygote's looks at its requests and its children's exits
END_WAIT = 2.0  # seconds the children get to exit after SIGTERM, when the zygote ends


def usable() -> bool:
    """Whether worker sessions start as forks of a zygote here: on Linux, unless ``GCBENCH_TORCH_ZYGOTE=0``
    asks for a fresh interpreter each (macOS forbids many libraries in a forked child; there they always do)."""
    return sys.platform.startswith("linux") and os.environ.get("GCBENCH_TORCH_ZYGOTE", "1") != "0"


# -- the driver's side --------------------------------------------------------------------------------------
class Zygote:
    """The driver's handle on one zygote process: ``spawn`` forks a worker session there and returns its
    ``ForkedProcess``; a reader thread takes the zygote's replies. ``preload``: the modules the zygote imports
    before it forks (what its children run), so a child imports nothing before its work."""

    def __init__(self, environment: dict[str, str], preload: tuple[str, ...] = (), prefix: list[str] = ()) -> None:
        """``prefix``: what the zygote's command runs under (entering an emulated node's network namespace:
        ``nsenter ... --``, which runs it in its own place, keeping its pipe)."""
        read, write = os.pipe()
        command = [*prefix, sys.executable, "-m", "gcbench.real.processes.zygote", str(write), *preload]
        own_group = {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, pass_fds=(write,), env=environment,
                                        **own_group)  # fmt: skip
        os.close(write)
        self.tickets, self.lock = itertools.count(), threading.Lock()
        self.unstarted: dict[int, ForkedProcess] = {}
        self.children: dict[int, ForkedProcess] = {}
        self.gone = threading.Event()  # the zygote's replies have ended
        threading.Thread(target=self._read, args=(os.fdopen(read),), daemon=True).start()

    GONE = "the torch zygote process has exited, so no worker can start"

    def spawn(self, module: str, arguments: list[str], timeout: float) -> ForkedProcess:
        """Fork a process that runs ``module``'s ``main`` with these arguments (its command line under ``python
        -m``); wait for its pid, at most ``timeout`` seconds (the first waits for the zygote's torch import)."""
        ticket, process = next(self.tickets), ForkedProcess()
        with self.lock:
            if self.gone.is_set():
                raise RuntimeError(self.GONE)
            self.unstarted[ticket] = process
        try:
            self.process.stdin.write(f"spawn {ticket} {module} {' '.join(arguments)}\n".encode())
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError) as error:  # it exited after the check (ValueError: pipe closed)
            raise RuntimeError(self.GONE) from error
        if not process.started.wait(timeout):
            raise RuntimeError(f"the torch zygote process did not start a worker within {timeout:g} s")
        if process.pid is None:
            raise RuntimeError(self.GONE)
        return process

    def _read(self, replies) -> None:
        for line in replies:
            kind, *fields = line.split()
            with self.lock:
                if kind == "started":
                    process = self.unstarted.pop(int(fields[0]))
                    process.pid = int(fields[1])
                    self.children[process.pid] = process
                    process.started.set()
                elif kind == "exited":
                    self.children.pop(int(fields[0])).exited_with(int(fields[1]))
        self._lost()

    def _lost(self) -> None:
        """The zygote has exited: its children exit too (each watches its parent); report each once gone."""
        from gcbench.real.processes import alive

        with self.lock:
            self.gone.set()
            for process in self.unstarted.values():
                process.started.set()  # (with no pid: spawn says the zygote is gone)
            left, self.children = list(self.children.values()), {}
        while left:
            for process in [p for p in left if not alive(p.pid)]:
                process.exited_with(-signal.SIGKILL)  # (its status went with the zygote)
                left.remove(process)
            time.sleep(POLL)

    def close(self) -> None:
        """The zygote ends its children and exits (killed if it has not in time)."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(END_WAIT + 2.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    @property
    def pid(self) -> int:
        return self.process.pid


class ForkedProcess:
    """A worker session forked by the zygote, with the ``subprocess.Popen`` methods the cluster uses."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.returncode: int | None = None
        self.started, self.exited = threading.Event(), threading.Event()

    def exited_with(self, code: int) -> None:
        self.returncode = code
        self.exited.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self.exited.wait(timeout):
            raise subprocess.TimeoutExpired(f"worker process {self.pid}", timeout)
        return self.returncode

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, number: int) -> None:
        if self.returncode is None:
            _signal(self.pid, number)


# -- the zygote's side --------------------------------------------------------------------------------------
def main(reply_fd: int, preload: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (in a process group of its own anyway: the driver ends it)
    driver = os.getppid()
    import torch  # noqa: F401  (the point of the zygote: imported once, before any fork)
    import torch.distributed  # noqa: F401

    for module in preload:  # what the forks run
        importlib.import_module(module)

    replies = os.fdopen(reply_fd, "w", buffering=1)
    _say(replies, "ready")
    children: set[int] = set()
    pending = b""
    try:
        while os.getppid() == driver:
            readable, _, _ = select.select([0], [], [], POLL)
            if readable:
                chunk = os.read(0, 65536)
                if not chunk:
                    break  # the driver closed our stdin: the cluster is shutting down
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    _spawn(line.decode().split(), replies, children)
            _reap(replies, children)
    finally:
        _end(children, replies)
    os._exit(0)


def _spawn(request: list[str], replies, children: set[int]) -> None:
    _, ticket, module, *arguments = request
    pid = os.fork()
    if pid == 0:
        _child(module, arguments, replies.fileno())
    children.add(pid)
    _say(replies, f"started {ticket} {pid}")


def _child(module: str, arguments: list[str], reply_fd: int) -> None:
    """In the fork: ``module``'s process, as ``python -m module arguments`` would run it."""
    code = 1
    try:
        os.setpgid(0, 0)
        os.close(reply_fd)  # (the driver must see the zygote's replies end when the zygote does)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)  # (the zygote's requests are not the worker's)
        os.close(devnull)
        importlib.import_module(module).main(arguments)
        code = 0
    except BaseException:  # noqa: BLE001  (a fork must never return into the zygote's loop)
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


def _reap(replies, children: set[int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        _say(replies, f"exited {pid} {os.waitstatus_to_exitcode(status)}")


def _say(replies, line: str) -> None:
    try:
        replies.write(f"{line}\n")
    except OSError:
        pass  # the driver is gone: nobody reads the replies, and the zygote is ending


def _end(children: set[int], replies) -> None:
    """Every child gets SIGTERM, then SIGKILL if it has not exited in time; each exit is reported."""
    for pid in children:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + END_WAIT
    while children and time.monotonic() < deadline:
        _reap(replies, children)
        time.sleep(POLL)
    for pid in children:
        _signal(pid, signal.SIGKILL)
    while children:
        _reap(replies, children)
        time.sleep(POLL)


def _signal(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])


class NodeZygotes:
    """One zygote for each node of an emulated cluster that holds a process of the run, started in the node's
    network namespace as its first process is asked for (``nodes``: gcbench.real.emulation.Nodes; the environment
    names the nodes' interface for gloo, which would otherwise advertise the loopback, unreachable from another
    node). A fork inherits its zygote's namespace: each process runs on its node, behind its links."""

    def __init__(self, nodes, environment: dict[str, str], preload: tuple[str, ...], interface: str) -> None:
        self.nodes, self.preload = nodes, preload
        self.environment = {**environment, "GLOO_SOCKET_IFNAME": interface}
        self.zygotes: dict[int, Zygote] = {}

    def spawn(self, node: int, module: str, arguments: list[str], timeout: float) -> ForkedProcess:
        forks = self.zygotes.get(node)
        if forks is None or forks.gone.is_set():
            forks = self.zygotes[node] = Zygote(self.environment, self.preload, self.nodes.command(node, []))
        return forks.spawn(module, arguments, timeout)

    def pids(self) -> list[int]:
        return [forks.pid for forks in self.zygotes.values() if forks.process.poll() is None]

    def close(self) -> None:
        for forks in self.zygotes.values():
            forks.close()
        self.zygotes = {}
