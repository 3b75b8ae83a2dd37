"""An emulated cluster: K nodes, each a network namespace with its own address on a shared bridge and its links
shaped, all inside one user namespace that needs no root (``unshare -rn``), on this machine.

The namespaces' first process (gcbench/real/emulation/holder.py) builds them and holds them while this process keeps
a pipe to it open. Closing the pipe, or this process dying in any way (SIGKILL included: the kernel closes the
pipe), ends the holder; as the namespaces' init its end takes every process started inside with it, and the
namespaces go with their last process. So a finished run, a Ctrl-C, a killed driver and a failed start all leave
nothing behind.

``start_in(node, argv)`` runs a command inside a node (its network, and the namespaces' user, process and mount
namespaces), as ``nsenter`` does. A process started inside with ``inside()``'s environment finds the other nodes
there (``Nodes.from_environment()``), and a scratch folder of its own (``scratch``: a memory file system mounted
in the cluster's mount namespace only, so what is written there goes with the namespaces, whatever ends them).
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from gcbench.errors import GcbenchError
from gcbench.real.emulation.links import LinkRates
from gcbench.real.emulation.support import require_namespaces

SUBNET = "10.9.0"  # node k is SUBNET.(k + 1)
ENVIRONMENT = "GCBENCH_EMULATED"  # how a process started inside finds the cluster: its nodes and scratch folder
SCRATCH_PREFIX = "gcbench-emulated-"  # the scratch folder's mount point: gcbench-emulated-<pid>-<random> in /tmp
START_TIMEOUT = 60.0  # seconds the namespaces may take to come up
STOP_TIMEOUT = 10.0
PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class NodeSpec:
    """One node: its link rates (bytes a second of message payload; None: unshaped)."""

    links: LinkRates = field(default_factory=LinkRates)


def _die_with_parent() -> None:  # (in the child, before it runs unshare)
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class EmulatedCluster:
    """The nodes, built on ``start()`` (or entering a ``with`` block) and torn down on ``close()``."""

    def __init__(self, nodes: list[NodeSpec]) -> None:
        if not nodes or len(nodes) > 250:
            raise GcbenchError(f"an emulated cluster has 1 to 250 nodes, got {len(nodes)}.")
        self.nodes = list(nodes)
        self.addresses = [f"{SUBNET}.{k + 1}" for k in range(len(nodes))]
        self._unshare: subprocess.Popen | None = None
        self._pids: list[int] = []  # each node's holding process, as this process sees it
        self._inner: list[int] = []  # and as the processes inside see it
        self.scratch: Path | None = None

    def __enter__(self) -> EmulatedCluster:
        self.start()
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def start(self) -> None:
        require_namespaces()
        sweep_scratch()
        self.scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
        command = ["unshare", "-rn", "--pid", "--fork", "--mount-proc", "--kill-child", sys.executable, "-m",
                   "gcbench.real.emulation.holder"]  # fmt: skip
        # (a session of its own: a Ctrl-C in the terminal is this process's to handle, not the namespaces' end;
        # they end when this process closes the pipe or dies)
        self._unshare = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, preexec_fn=_die_with_parent,
                                         start_new_session=True)  # fmt: skip
        spec = {"nodes": [{"address": address, "up": node.links.up, "down": node.links.down}
                          for address, node in zip(self.addresses, self.nodes, strict=True)],
                "scratch": str(self.scratch)}  # fmt: skip
        try:
            self._unshare.stdin.write(json.dumps(spec) + "\n")
            self._unshare.stdin.flush()
            reply = self._first_line()
            if "error" in reply:
                raise GcbenchError(f"the emulated cluster could not be built: {reply['error']}")
            self._inner = reply["pids"]
            self._pids = [self._outer_pid(inner) for inner in self._inner]
        except BaseException:
            self.close()
            raise

    def _first_line(self) -> dict:
        ready, _, _ = select.select([self._unshare.stdout], [], [], START_TIMEOUT)
        line = self._unshare.stdout.readline() if ready else ""
        if not line:
            self._unshare.kill()
            why = (self._unshare.stderr.read().strip().splitlines() or ["it said nothing"])[-1]
            raise GcbenchError(f"the emulated cluster's namespaces did not start ({why}).")
        return json.loads(line)

    def _outer_pid(self, inner: int) -> int:
        """A node's holding process as this process sees it (inside, the namespaces number their own)."""
        for pid in descendants(self._unshare.pid):
            if namespace_pids(pid)[-1:] == [inner]:
                return pid
        raise GcbenchError(f"the emulated cluster's node process {inner} is not among its processes.")

    @property
    def running(self) -> bool:
        return self._unshare is not None and self._unshare.poll() is None

    def processes(self) -> list[int]:
        """Every process inside the namespaces (the holder, the nodes and what was started in them)."""
        return [] if self._unshare is None else descendants(self._unshare.pid)

    def command(self, node: int, argv: list[str]) -> list[str]:
        """``argv`` as a command that runs inside ``node``, in this process's working directory (entering the mount
        namespace would otherwise leave it in the node's, the root: a relative path would name another file)."""
        if not self.running:
            raise GcbenchError("the emulated cluster is not running.")
        pid = str(self._pids[node])
        return ["nsenter", "-t", pid, "--user", "--mount", "--pid", "--net", f"--wd={os.getcwd()}", "--", *argv]

    def inside(self) -> dict[str, str]:
        """The environment a process started inside needs to find the other nodes (``Nodes.from_environment``)."""
        described = {"addresses": self.addresses, "pids": self._inner, "scratch": str(self.scratch)}
        return {ENVIRONMENT: json.dumps(described)}

    def start_in(self, node: int, argv: list[str], **popen) -> subprocess.Popen:
        """Start ``argv`` inside ``node`` (keyword arguments as subprocess.Popen's)."""
        return subprocess.Popen(self.command(node, argv), **popen)

    def run_in(self, node: int, argv: list[str], **run) -> subprocess.CompletedProcess:
        """Run ``argv`` inside ``node`` to its end (keyword arguments as subprocess.run's)."""
        return subprocess.run(self.command(node, argv), **run)

    def close(self) -> None:
        """End every process inside and the namespaces with them; returns once the holder has gone."""
        unshare, self._unshare = self._unshare, None
        if unshare is None:
            return
        for pipe in (unshare.stdin, unshare.stdout, unshare.stderr):
            try:
                pipe.close()
            except OSError:
                pass
        try:
            unshare.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            unshare.kill()  # (--kill-child then ends the holder, and the namespaces with it)
            unshare.wait()
        scratch, self.scratch = self.scratch, None
        if scratch is not None:
            try:
                scratch.rmdir()  # (empty here: what was written went with the namespaces' memory file system)
            except OSError:
                pass


@dataclass(frozen=True)
class Nodes:
    """The emulated cluster as a process inside it sees it: the nodes' addresses, the scratch folder, and commands
    that run in another node (this process being in the cluster's user namespace already, entering a node's network
    namespace is enough)."""

    addresses: list[str]
    pids: list[int]  # each node's holding process, as the processes inside see it
    scratch: Path

    @classmethod
    def from_environment(cls) -> Nodes | None:
        """The cluster this process was started in (``EmulatedCluster.inside()``), or None outside one."""
        described = os.environ.get(ENVIRONMENT)
        if not described:
            return None
        values = json.loads(described)
        return cls(values["addresses"], values["pids"], Path(values["scratch"]))

    def command(self, node: int, argv: list[str]) -> list[str]:
        return ["nsenter", "-t", str(self.pids[node]), "--net", "--", *argv]

    def start_in(self, node: int, argv: list[str], **popen) -> subprocess.Popen:
        return subprocess.Popen(self.command(node, argv), **popen)

    def run_in(self, node: int, argv: list[str], **run) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(node, argv), **run)

    def processes_on(self, node: int) -> list[int]:
        """Every process running on ``node`` (in its network namespace), by process id, but the one that holds
        the namespace: what a machine's crash takes. Its network (address, links, shaping) stays, as a machine's
        network card does, for what is started on it again."""
        holder = self.pids[node]
        network = _network_namespace(holder)
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != holder and _network_namespace(int(entry.name)) == network:
                found.append(int(entry.name))
        return sorted(found)

    def crash(self, node: int) -> list[int]:
        """Kill (SIGKILL) every process on ``node``, as its machine's crash would; the ones killed."""
        killed = []
        for pid in self.processes_on(node):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        return killed


def _network_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def sweep_scratch() -> None:
    """Remove the empty mount points a cluster whose driver was killed left in the temporary folder (their
    contents went with the namespaces; only the empty folder stays)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*"):
        owner = folder.name.removeprefix(SCRATCH_PREFIX).split("-")[0]
        if owner.isdigit() and not alive(int(owner)):
            try:
                folder.rmdir()
            except OSError:
                pass


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, parents before children (from /proc's children lists)."""
    found, queue = [], [pid]
    while queue:
        parent = queue.pop(0)
        try:
            children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        found += [int(child) for child in children]
        queue += [int(child) for child in children]
    return found


def namespace_pids(pid: int) -> list[int]:
    """``pid``'s number in each process namespace it is in, outermost first (/proc's NSpid)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return [int(value) for value in line.split()[1:]]
    except OSError:
        pass
    return []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
