"""``gcbench run --backend torch`` under torchrun: rank 0 is the master (the driver), rank w + 1 starts worker
w's processes on its own machine.

The same command runs on every rank (torchrun starts it ``--nproc-per-node`` times on each of ``--nnodes``
machines; the world size is the scenario's workers plus one). Every rank meets on torchrun's env://
store (``MASTER_ADDR``:``MASTER_PORT``). Rank 0 trains exactly as a run on one machine does, each variant's
cluster under a scope of its own on that store. A worker rank is an agent: it does not compute itself, it
starts (and stops) worker w's sessions when the master asks, as the driver does with its children on one
machine, so a crash the failure model draws is still a process's exit, and the replacement a fresh process
(torchrun itself would end or restart every rank when one of its own exits). The agent reports each
session's exit status to the master through the store; it ends when the master says the run is over, or
when the store is gone (the master died).

The requests of worker w's agent are numbered keys ``agent{w}/{k}`` (``agent{w}/count`` counts them):
``spawn``/``kill`` with the cluster's scope and the session's number; a session's exit status is
``{scope}/exit/{w}.{session}``; ``agents/stop`` ends every agent.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import time

from gcbench.errors import GcbenchError

POLL = 0.05  # seconds between an agent's looks at its requests and children (and the master's at an exit)
STOP = "agents/stop"
AGENT_TIMEOUT = 300.0  # seconds a worker rank waits for the master's store


def launched() -> bool:
    """Whether this process is a rank torchrun started."""
    return "TORCHELASTIC_RUN_ID" in os.environ or all(key in os.environ for key in ("RANK", "WORLD_SIZE"))


def rank() -> int:
    return int(os.environ["RANK"])


def check_world(workers: int) -> None:
    """One rank per worker plus the master's: anything else is a launch the run cannot use."""
    world = int(os.environ["WORLD_SIZE"])
    if world != workers + 1:
        raise GcbenchError(
            f"under torchrun the world size must be the scenario's workers plus one (the master): {workers + 1}, "
            f"not {world}; set --nnodes and --nproc-per-node so that their product is {workers + 1}."
        )


_store = None


def shared_store(timeout: float):
    """torchrun's env:// store, one per process (every cluster of the run scopes its keys in it)."""
    global _store
    if _store is None:
        import torch.distributed as dist

        wait = datetime.timedelta(seconds=timeout)
        _store, _, _ = next(dist.rendezvous("env://", rank=rank(), world_size=int(os.environ["WORLD_SIZE"]),
                                            timeout=wait))  # fmt: skip
    return _store


def master_address() -> tuple[str, int]:
    return os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])


# -- the master's side --------------------------------------------------------------------------------------
class RemoteLauncher:
    """Starts worker sessions through the agents (the ``launcher`` of gcbench/real/processes/worker_session.py)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.store = shared_store(timeout)

    def keep_spare(self) -> None:
        """(A replacement on another machine starts there, as a fresh process.)"""

    def spare_pids(self) -> list[int]:
        return []

    def close(self) -> None:
        pass

    def spawn(self, worker: int, session: int, scope: str) -> RemoteProcess:
        request(self.store, worker, {"op": "spawn", "scope": scope, "session": session, "timeout": self.timeout})
        return RemoteProcess(self.store, worker, session, scope)


def request(store, worker: int, message: dict) -> None:
    number = store.add(f"agent{worker}/count", 1) - 1
    store.set(f"agent{worker}/{number}", json.dumps(message))


class RemoteProcess:
    """A worker session's process on the agent's machine, as far as the master sees it (``subprocess.Popen``'s
    methods the cluster uses; no pid here)."""

    pid = None

    def __init__(self, store, worker: int, session: int, scope: str) -> None:
        self.store, self.worker, self.session, self.scope = store, worker, session, scope
        self.key = f"{scope}/exit/{worker}.{session}"
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and self.store.check([self.key]):
            self.returncode = int(self.store.get(self.key))
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"worker {self.worker} session {self.session}", timeout)
            time.sleep(POLL)
        return self.returncode

    def terminate(self) -> None:
        if self.poll() is None:
            request(self.store, self.worker, {"op": "kill", "scope": self.scope, "session": self.session})

    kill = terminate


def stop_agents() -> None:
    """The run is over: every agent ends (and with it its rank)."""
    if _store is not None:
        _store.set(STOP, "1")


# -- a worker rank's side -----------------------------------------------------------------------------------
def serve_agent(worker: int, timeout: float) -> None:
    """Worker ``worker``'s agent: start and stop its sessions as the master asks, until the run is over."""
    from gcbench.real.processes.worker_session import start_worker
    from gcbench.real.torch.launcher import worker_command

    store = shared_store(timeout)
    host, port = master_address()
    children: dict[tuple[str, int], subprocess.Popen] = {}
    taken = 0
    try:
        while not store.check([STOP]):
            for message in _new_requests(store, worker, taken):
                taken += 1
                key = (message["scope"], message["session"])
                if message["op"] == "spawn":
                    command = worker_command(worker, message["session"], port, message["timeout"], host, key[0])
                    children[key] = start_worker(command)
                elif key in children:
                    children[key].kill()
            for (scope, session), child in list(children.items()):
                if (code := child.poll()) is not None:
                    store.set(f"{scope}/exit/{worker}.{session}", str(code))
                    del children[scope, session]
            time.sleep(POLL)
    except RuntimeError:
        pass  # the store is gone: the master died, and nothing more will come
    finally:
        for child in children.values():
            child.kill()
            child.wait()


def _new_requests(store, worker: int, taken: int) -> list[dict]:
    count = store.add(f"agent{worker}/count", 0)
    return [json.loads(store.get(f"agent{worker}/{k}")) for k in range(taken, count)]
