"""The torch.distributed cluster: n worker processes behind the cluster protocol, in wall time, on one machine.

The driver is the master (rank 0 of every channel). ``start`` opens a TCPStore
on a free loopback port and spawns the workers (gcbench/real/torch/worker.py);
each worker session talks to the master over its own channel, two two-rank gloo
groups on CPU (gcbench/real/processes/channel.py says why), whose receiver thread
feeds the cluster's one queue (gcbench/real/processes/worker_session.py). What a worker
computes is what a Ray worker computes: without data each job sleeps its
modelled compute time (the run's ``busy`` draw) and its result is held back for
the network's latency and transfer; with a Dataset it trains on its
partitions' shards and encodes (GradientWorker), sleeping the injected delay.

Every message carries (worker, job id, message index) in its header and every
queue item its session's number: a reply of a job nobody waits for any more,
or of a session that has been replaced, is dropped, never taken for a current one.

A failure is a worker process's exit, which the master notices as the parent
of that process: a crash the failure model drew (the worker exits as the crashed
job starts) or any other (a process killed from outside, even while idle: a
Failure without a job). One exit is one Failure; the jobs sent behind the lost
one run again once it is back. The master spawns the replacement at once, gives
it its data, and reports the Restart when it is ready and the downtime has
passed (a downtime shorter than a process's start, about 2 s, ends when the start
does). A worker crashed for good (``downtime: null``) is dead from that job's
submission and is not replaced.

The clock, the draws, the events known ahead of their time and the bookkeeping
of exits and restarts are every wall-clock cluster's (gcbench/real/wallclock/wall_cluster.py).
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from gcbench.cluster import Job, Restart
from gcbench.real.wallclock.clock import WallClock
from gcbench.real.wallclock.placement import emulated_placement, use_node_interface
from gcbench.real.wallclock.wall_cluster import ClusterStuck, WallClockCluster
from gcbench.scenario.draws import RunDraws

_scopes = itertools.count()  # under torchrun, the clusters of one run share a store: each its own keys


class TorchCluster(WallClockCluster):
    """One process per worker; a job on a busy worker queues behind in its process, one on a down worker here."""

    places_on_nodes: ClassVar[bool] = True  # each worker process forked in its emulated node (NodesLauncher)

    @classmethod
    def serve_helper(cls) -> bool:
        """Under torchrun, a rank other than 0 is worker (rank - 1)'s agent (gcbench/real/torch/torchrun.py): it
        serves until the master's run is over. It needs nothing of the scenario: the master checks it."""
        from gcbench.real.torch import torchrun

        if not torchrun.launched() or torchrun.rank() == 0:
            return False
        torchrun.serve_agent(torchrun.rank() - 1, torchrun.AGENT_TIMEOUT)
        return True

    @classmethod
    @contextmanager
    def driving(cls, scenario) -> Iterator[None]:
        """Under torchrun, the world must be the scenario's workers plus the master, and every agent ends with
        the run."""
        from gcbench.real.torch import torchrun

        if not torchrun.launched():
            yield
            return
        torchrun.check_world(scenario.workers)
        try:
            yield
        finally:
            torchrun.stop_agents()

    def __init__(self, scenario, scheme, draws: RunDraws, seed: int = 0, device: str | None = None,
                 clock: WallClock | None = None, compressor=None):  # fmt: skip
        """As every wall-clock cluster's (``WallClockCluster``); nothing needs setting up."""
        super().__init__(scenario, scheme, draws, seed, device, clock, compressor)
        self.spec, self.weights, self.version, self.has_version = None, None, 0, [-1] * self.n
        self.attached = None  # the published weights, pickled once (channel.Attachment)
        self.rendezvous, self.inbox, self.numbers = None, queue.Queue(), itertools.count()
        self.launcher, self.scope = None, ""
        self.sessions: list = [None] * self.n  # each worker's current WorkerSession
        self.retired: list = []  # sessions whose process exited or was replaced (checked by leftovers)
        # (self.data: per worker, partition -> shard, for replacements)
        self.sent: list[list[Job]] = [[] for _ in range(self.n)]  # jobs sent to each worker, unanswered, in order
        self.reloading: set[int] = set()  # workers whose replacement is starting

    # -- starting ---------------------------------------------------------------------------------
    def start(self, data=None) -> None:
        """Spawn the workers, join their channels, give them their data, wait until each is ready."""
        if data is None:
            self.delay = self._modelled_delay()
        else:
            self.trains, self.spec = True, self._training_spec(data)
        self.rendezvous, self.launcher, self.scope = self._meeting_place()
        self.sessions = [self._spawn(w) for w in range(self.n)]
        if (self.downtime is not None or self.downtimes is not None) and self.scenario.failures.model != "none":
            self.launcher.keep_spare()  # starting beside the workers: a drawn crash's replacement is ready in time
        for session in self.sessions:  # each in a thread: the main thread waits on the queue, where Ctrl-C works
            threading.Thread(target=self._bring_up, args=(session,), daemon=True).start()
        self._wait_ready()
        if self.own_clock:
            self.clock = WallClock()

    def _training_spec(self, data) -> dict[str, Any]:
        shards, setup, spec = self._training_setup(data)
        self.data = [{j: shards[j] for j in self.scheme.partitions(w)} for w in range(self.n)]
        return {"scheme": spec, "setup": setup}

    def _meeting_place(self) -> tuple[Any, Any, str]:
        """The store the channels rendezvous on (scoped to this cluster), who starts the worker processes,
        and the scope: a loopback store and the driver's children; under torchrun, torchrun's store and the
        worker ranks' agents (gcbench/real/torch/torchrun.py); on an emulated cluster, a store at node 0's
        address and the nodes' own zygotes."""
        from gcbench.real.processes import channel
        from gcbench.real.torch import torchrun
        from gcbench.real.torch.launcher import LocalLauncher, NodesLauncher

        if torchrun.launched():
            scope = f"cluster{next(_scopes)}"
            store = torchrun.shared_store(self.timeout)
            return channel.scoped(store, scope), torchrun.RemoteLauncher(self.timeout), scope
        store = channel.store(0, self.timeout)
        placement = emulated_placement(self.scenario)
        if placement is not None:
            use_node_interface()  # (the master's end of each channel: node 0's address)
            return store, NodesLauncher(store, self.timeout, *placement), ""
        return store, LocalLauncher(store, self.timeout), ""

    def _spawn(self, w: int):
        from gcbench.real.processes.worker_session import WorkerSession

        return WorkerSession(w, next(self.numbers), self.launcher, self.timeout, self.scope)

    def _data_message(self, w: int) -> dict[str, Any]:
        """What a new worker process needs before its first job: what it computes (None: it sleeps) and its shards."""
        return {"kind": "data", "spec": self.spec, "shards": self.data[w]}

    def _wait_ready(self) -> None:
        waiting = set(range(self.n))
        while waiting:
            try:
                kind, w, _, message = self.inbox.get(timeout=self.timeout)
            except queue.Empty:
                raise ClusterStuck(
                    f"{len(waiting)} of {self.n} workers did not start within {self.timeout:g} s."
                ) from None
            if kind == "broken":
                raise ClusterStuck(f"worker {w} did not join its channel within {self.timeout:g} s.")
            if kind != "ready":
                raise ClusterStuck(f"worker {w} exited (status {message.get('code')}) while starting.")
            waiting.discard(w)

    def publish(self, weights) -> None:
        """Sent to each worker once, with its first job after this publication."""
        self.weights, self.version, self.attached = weights, self.version + 1, None

    # -- jobs -------------------------------------------------------------------------------------
    def _dispatch(self, job: Job) -> None:
        w, row = job.worker, job.row
        session = self.sessions[w]
        message, attachment = {"kind": "job", "job": job.id, "crash": self._exits_itself(job)}, None
        if self.trains:
            if self.has_version[w] != self.version:
                attachment = self._weights()  # (with the job: one message per worker and iteration)
                self.has_version[w] = self.version
            message.update(straggling=self.straggling[row][w], overhead=self.overhead[row][w], batch=self.batches[job])
        else:
            message["seconds"] = self.busy[row][w]
        if w in self.fractions:  # it sends each of its messages as soon as it is ready
            message["fractions"] = self.fractions[w]
        self.sent[w].append(job)
        # posted, not waited for: the next worker's job goes out meanwhile. A broken channel: the worker's exit
        # is on its way, and the job is lost with it
        session.send(message, wait=False, attachment=attachment)
        node = self._node_crashed(job)
        if node is not None:  # a node's crash is done once its first crashed job is sent
            self._crash_node(node, job.row)

    def _weights(self):
        """The published weights, pickled once for every worker that gets them."""
        from gcbench.real.processes.channel import Attachment

        if self.attached is None:
            self.attached = Attachment("weights", self.weights)
        return self.attached

    def abandon(self, jobs: Iterable[Job]) -> None:
        """A queued job never runs; a sent one stops at its next check (or never starts) and reports its timings."""
        for job in jobs:
            queue_ = self.queued[job.worker]
            if job in queue_:
                queue_.remove(job)
                self._forget(job)
            elif not job.crash and job in self.sent[job.worker]:
                self.sessions[job.worker].send({"kind": "abandon", "job": job.id})

    # -- state ------------------------------------------------------------------------------------
    def _crash_sent(self, worker: int) -> bool:
        return any(job.crash for job in self.sent[worker])

    def running(self, job_ids: Iterable[int]) -> list[Job]:
        ids = set(job_ids)
        jobs = [job for w in range(self.n) for job in (*self.sent[w], *self.queued[w])]
        return [job for job in jobs if job.id in ids and not job.crash]

    def pending(self) -> bool:
        return bool(any(self.sent) or self.reloading or self.events)

    def restarting(self, workers: Iterable[int]) -> set[int]:
        """Those of these workers whose replacement process is starting."""
        return self.reloading.intersection(workers)

    # -- events -----------------------------------------------------------------------------------
    def _take(self, seconds: float) -> None:
        """Wait up to ``seconds`` for one message from the workers and turn it into the events it brings."""
        try:
            item = self.inbox.get(timeout=seconds)
        except queue.Empty:
            return
        self._handle(*item)

    def _handle(self, kind: str, w: int, number: int, message: dict) -> None:
        if kind == "spawned":  # a crashed node's worker, started again (its session is new)
            self._spawned(w, message["session"])
            return
        session = self.sessions[w]
        if session is None or number != session.session:
            return  # from a session that exited or was replaced: stale
        if kind == "reply":
            self._replied(w, message)
        elif kind == "ready" and w in self.reloading:
            self.reloading.discard(w)
            at = max(self.now, self.down_until[w])
            self._schedule(at, Restart(w, at))
        elif kind == "exit":
            self._exited(w)
        elif kind == "broken":  # its replacement could not join: lost for good
            self.reloading.discard(w)
            self._dead.add(w)
            self._lose(w)

    def _resume(self, w: int) -> None:
        for job in self.queued[w]:
            self._dispatch(job)
        self.queued[w] = []

    def _replied(self, w: int, message: dict) -> None:
        job = next((job for job in self.sent[w] if job.id == message["job"]), None)
        if job is None:
            return  # a reply nobody waits for
        reply = message["reply"]
        final = reply.get("final", True)  # (a job's earlier messages leave it in flight)
        if final:
            self.sent[w].remove(job)
            self._forget(job)
        if not reply["started"]:
            return  # abandoned before it began: it never ran
        at, result = self._result(job, reply)
        if final:
            self.idle_since[w] = result.compute_end
        self._schedule(at, result)

    def _exited(self, w: int) -> None:
        """Worker w's process exited: one Failure, with the job it was running (None: it was idle)."""
        lost, self.sent[w] = self.sent[w], []
        self.retired.append(self.sessions[w])
        running = None
        if lost:
            running = min([job for job in lost if job.crash] or lost, key=lambda job: job.sent)
            self._requeue(w, running, [job for job in lost if job is not running] + self.queued[w])
        self._exit(w, running)

    def _restart(self, w: int) -> None:
        """Spawn worker w's next session now; a thread joins its channel and sends its data (its "ready"
        comes through the queue), so the master goes on taking events meanwhile."""
        self.reloading.add(w)
        self._spawned(w, self._spawn(w))

    def _spawned(self, w: int, session) -> None:
        if session is None:  # its node's zygote could not start it: lost for good
            self.reloading.discard(w)
            self._dead.add(w)
            self._lose(w)
            return
        self.sessions[w] = session
        self.has_version[w] = -1
        threading.Thread(target=self._bring_up, args=(session,), daemon=True).start()

    def _bring_up(self, session) -> None:
        try:
            session.connect(self.rendezvous, self.inbox)
            ok = session.send(self._data_message(session.worker))
        except RuntimeError:
            ok = False
        if not ok:
            self.inbox.put(("broken", session.worker, session.session, {}))

    # -- a node's crash (an emulated cluster's) ---------------------------------------------------------
    def _kill_node(self, node: int) -> list[int]:
        """Every process on the node (its zygote and the workers forked there; its zygote reports them gone);
        on node 0, the master's, its workers' processes only."""
        if node > 0:
            return self.nodes.crash(node)
        killed = []
        for w in range(self.n):
            session = self.sessions[w]
            if self.node_of[w] == 0 and session is not None and session.pid is not None:
                session.process.kill()
                killed.append(session.pid)
        return killed

    def _revive_node(self, node: int) -> None:
        """Start the node's workers again, in a thread: the first starts the node's zygote, which imports torch
        (a second and more), while the master goes on with the others."""
        workers = self.waiting_for_node.pop(node, [])
        self.reloading.update(workers)
        threading.Thread(target=self._spawn_each, args=(workers,), daemon=True).start()

    def _spawn_each(self, workers: list[int]) -> None:
        for w in workers:
            try:
                session = self._spawn(w)
            except RuntimeError:
                session = None
            self.inbox.put(("spawned", w, -1, {"session": session}))

    # -- stopping ---------------------------------------------------------------------------------
    def shutdown(self, interrupted: bool = False) -> None:
        """End every worker process (current and replaced ones) and forget all work in flight (interrupted or not:
        the processes are this driver's own)."""
        sessions = [session for session in self.sessions if session is not None] + self.retired
        for session in sessions:
            session.process.terminate()
        for session in sessions:
            session.stop()
        if self.launcher is not None:
            self.launcher.close()
        self.retired = sessions
        self.sessions = [None] * self.n
        self.sent = [[] for _ in range(self.n)]
        self.queued = [[] for _ in range(self.n)]
        self.events.clear()
        self.reloading.clear()
        self.batches.clear()

    def worker_pids(self) -> list[int]:
        """The worker processes still alive here (current and replaced sessions, and a spare)."""
        spares = self.launcher.spare_pids() if self.launcher is not None else []
        return [session.pid for session in self._alive() if session.pid is not None] + spares

    def _alive(self) -> list:
        sessions = [session for session in self.sessions if session is not None] + self.retired
        return [session for session in sessions if session.alive()]

    def leftovers(self) -> list[str]:
        """Worker processes still alive (here, or on an agent's machine), and jobs, replacements or events
        still pending."""
        lines = [f"worker {session.worker}'s process {session.pid or '(remote)'} is alive" for session in self._alive()]
        helpers = self.launcher.spare_pids() if self.launcher else []
        lines += [f"spare or zygote process {pid} is alive" for pid in helpers]
        counts = {"jobs in flight": sum(map(len, self.sent)), "replacements starting": len(self.reloading)}
        counts.update({"events not taken": len(self.events), "jobs queued": sum(map(len, self.queued))})
        return lines + [f"{count} {what}" for what, count in counts.items() if count]
