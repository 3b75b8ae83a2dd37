"""The wall-clock half every real cluster shares: the clock, the run's draws, the events known ahead of their
time, and the bookkeeping of jobs, exits and restarts; a backend adds only how jobs reach its workers and how
their replies and exits come back (gcbench/real/ray/cluster.py, gcbench/real/torch/cluster.py).

A backend implements ``_dispatch`` (send a job to a worker that is up), ``_take`` (wait up to some seconds
for one of its workers' replies and turn it into events), ``_restart`` (bring an exited worker back: its
``Restart`` is scheduled once it has its data again and its downtime has passed), ``_resume`` (a worker is
back: send what waited for it), ``_crash_sent`` (a drawn crash already sent to a worker), and the rest of the
protocol that depends on its transport (``abandon``, ``running``, ``pending``, ``restarting``, ``shutdown``,
``leftovers``).

Times are seconds on the cluster's clock (``clock``: a real run's, shared with its
driver; by default one of its own that starts once the workers are ready): wall
time since its origin, less the time between ``pause()`` and ``resume()``
(variants take turns on one machine; the clock reads on after ``pause`` so that
late work drained then keeps true times, and ``resume`` removes the time since).

A worker the failure model crashes for good (``downtime: null``) is dead from that job's submission; its
exit is then not followed by a restart. A drawn crash exits as its job starts: once sent, and once the
worker's previous job was done, so that is when its ``Failure`` is.

On an emulated cluster, a node's crash (``failures.level: node``, or a scheduled node) is the node's: as the first
of its crashed jobs is sent, every process on it is killed (``_kill_node``; on node 0, the master's, its workers'
only), each worker's exit is noticed as any other's, and none is started again before the node's downtime ends,
when the node is (``_revive_node``). ``node_crashes`` records when each was killed, noticed and back.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from gcbench.cluster import Cluster, Failure, Job, Restart, Result, message_fractions
from gcbench.master import RunStuck
from gcbench.real.backend import RealBackend
from gcbench.real.wallclock.clock import WallClock
from gcbench.real.wallclock.due_events import DueEvents
from gcbench.scenario.draws import RunDraws, draw_run, message_bytes, message_delay

log = logging.getLogger("gcbench")
INF = float("inf")


def emulated_latencies(scenario) -> list[float]:
    """Each worker's latency where this run is on an emulated cluster (``gcbench run --emulate``): its node's,
    or ``network.latency``. The kernel here has no netem to delay a link, so the master adds it to each message
    as it arrives (docs/emulation.md measures it). None elsewhere: a real cluster's network has its own."""
    from gcbench.models.wire import Wire
    from gcbench.real.wallclock.placement import emulated_placement

    if emulated_placement(scenario) is None:
        return [0.0] * scenario.workers
    wire = Wire.of(scenario.network, scenario.topology, scenario.workers)
    return wire.delays(scenario.network.latency).tolist()


class ClusterStuck(RunStuck):
    """No usable set of results can arrive, or none did within the timeout."""


class WallClockCluster(RealBackend, Cluster):
    """n workers on a wall clock, fed by the run's draws (injected straggling, overhead, crashes); as a backend
    of ``gcbench run``, ``RealBackend``'s defaults unless it declares otherwise."""

    def __init__(self, scenario, scheme, draws: RunDraws, seed: int = 0, device: str | None = None,
                 clock: WallClock | None = None, compressor=None):  # fmt: skip
        """``seed``: the run's (the workers sample their mini-batches with it); ``device``: where workers
        train (default: the scenario's, resolved); ``clock``: the run's clock (default: one of its own);
        ``compressor``: the variant's (``Variant.sent_compressed``), with which training workers compress their
        messages (None: they send them as they are)."""
        self.scenario, self.scheme, self.seed, self.device = scenario, scheme, seed, device
        self.compressor = compressor
        self.n, self.timeout = scenario.workers, scenario.training.timeout
        self.straggling, self.overhead = draws.straggling.tolist(), draws.overhead.tolist()
        self.busy = draws.busy.tolist()
        self.downtime = getattr(scenario.failures, "downtime", None)
        # each job's own downtime where crashes are scheduled (failures.schedule; inf: for good), else None
        self.downtimes = None if draws.downtime is None else draws.downtime.tolist()
        self.fractions = message_fractions(scheme)  # per worker that sends several messages: when each is ready
        self.trains, self.delay = False, 0.0
        self.data: list[dict] = [{} for _ in range(self.n)]  # per worker: partition -> its data, for restarts
        self.queued: list[list[Job]] = [[] for _ in range(self.n)]  # jobs of a down worker, sent when it is back
        self.batches: dict[Job, int] = {}
        self.versions: dict[Job, int] = {}  # the weights a job computes on where not the latest (by version)
        self.tasks: dict[Job, tuple] = {}  # a multiplexed job's mini-tasks, (job, message index) each (M-SGC)
        self.events = DueEvents()  # known events, delivered once their time has come
        self.down_until = [-INF] * self.n  # when a crashed worker's downtime ends
        self.back = [True] * self.n  # False from an exit until its Restart is delivered
        self._dead: set[int] = set()
        self.idle_since = [-INF] * self.n  # when each worker's last reply was ready
        self.own_clock = clock is None
        self.clock = WallClock() if clock is None else clock
        self.latency = emulated_latencies(scenario)  # per worker: how long the master holds its messages back
        from gcbench.real.wallclock.placement import emulated_placement

        placement = emulated_placement(scenario)
        self.nodes, self.node_of = (None, None) if placement is None else placement
        # per job: its crash is its node's, which an emulated cluster kills whole (None: no node crashes here)
        self.node_crash = None if placement is None or draws.node_crash is None else draws.node_crash.tolist()
        self.crashed_rows: set[tuple[int, int]] = set()  # (node, row) of each node crash done
        self.nodes_down: dict[int, float] = {}  # a crashed node -> when its downtime ends (inf: never)
        self.waiting_for_node: dict[int, list[int]] = {}  # a crashed node -> its exited workers, restarted with it
        self.node_crashes: list[dict[str, Any]] = []  # each node crash: when killed, noticed and back (cluster time)

    @classmethod
    def from_scenario(cls, scenario, scheme, seed: int, synchronous: bool = True) -> WallClockCluster:
        return cls(scenario, scheme, draw_run(scenario, scheme, seed), seed=seed)

    # -- the clock ------------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.clock.now()

    def pause(self) -> None:
        """Another variant's turn begins: the time until ``resume`` is no one's."""
        self.clock.pause()

    def resume(self) -> None:
        self.clock.resume()

    # -- starting ---------------------------------------------------------------------------------
    def _modelled_delay(self) -> float:
        """One message's modelled time on the way, as the simulator's (latency, compressing and decompressing it,
        its transfer): a timing-only run holds each result back by it."""
        bandwidth, compressor = self.scenario.network.bandwidth, self.compressor
        transfer = 0.0 if bandwidth is None else message_bytes(self.scenario, self.scheme, compressor) / bandwidth
        return message_delay(self.scenario, self.scheme, compressor) + transfer

    def _training_setup(self, data) -> tuple[list, dict[str, Any], dict[str, Any]]:
        """What the workers of a run that trains need: every partition's shard, the setup of their model and
        sampler, and the scheme's spec (each worker builds its scheme from it)."""
        from gcbench.training.batches import PartitionSampler
        from gcbench.training.device import resolve_device

        scheme, training = self.scheme, self.scenario.training
        sampler = PartitionSampler(len(data.train_labels), scheme.k, training.batch_size, self.seed)
        shards = sampler.shard_data(data.train_images, data.train_labels)
        setup = {
            "device": self.device or str(resolve_device(training.device)), "model": training.model,
            "classes": data.classes, "seed": self.seed, "samples": len(data.train_labels),
            "batch_size": training.batch_size, "straggling": self.scenario.straggling,
            "compression": None if self.compressor is None else self.compressor.model_dump(mode="json"),
        }  # fmt: skip
        spec = {"name": scheme.name, "n": scheme.n, "s": scheme.s, "params": dict(scheme.params)}
        return shards, setup, spec

    # -- jobs -------------------------------------------------------------------------------------
    def submit(
        self, worker: int, job: int, row: int, crash: bool, batch: int | None = None, version: int | None = None,
        tasks: tuple[tuple[int, int], ...] | None = None,
    ) -> Job:  # fmt: skip
        if version is not None and not self.computes_earlier_weights:  # (gcbench/real/run/scenario.py refuses it)
            raise NotImplementedError(f"the {self.name} backend's workers compute on the weights published last only")
        if tasks is not None and not self.computes_earlier_weights:  # (gcbench/real/run/scenario.py refuses it)
            raise NotImplementedError(f"the {self.name} backend's workers run one task a job, not mini-tasks")
        handle = Job(worker, job, row, self.now, crash)
        if worker in self._dead:
            return handle  # crashed for good: the job never runs, and nothing waits for it
        self.batches[handle] = row if batch is None else batch
        if version is not None:
            self.versions[handle] = version
        if tasks is not None:
            self.tasks[handle] = tasks
        if crash and self._downtime(row, worker) is None:
            self._dead.add(worker)  # dead from now (as in the simulator); not brought back when its exit comes
        if self.back[worker]:
            self._dispatch(handle)
        else:
            self.queued[worker].append(handle)
        return handle

    def _dispatch(self, job: Job) -> None:
        """Send a job to its worker, which is up."""
        raise NotImplementedError

    # -- state ------------------------------------------------------------------------------------
    @property
    def dead(self) -> set[int]:
        return self._dead

    def down(self, worker: int) -> bool:
        """Dead, or exited and not back (restart unconfirmed, downtime running), or a drawn crash sent to it."""
        if worker in self._dead or not self.back[worker] or self.now < self.down_until[worker]:
            return True
        return self._crash_sent(worker)

    def _crash_sent(self, worker: int) -> bool:
        """Whether a drawn crash is on its way to this worker (sent, or held to be sent)."""
        raise NotImplementedError

    # -- events -----------------------------------------------------------------------------------
    def next_event(self, until: float) -> Result | Failure | Restart | None:
        """The earliest known event once its time has come, waiting for the workers no later than ``until``.

        An event whose time is past ``until`` stays for a later call; so does one noticed after ``until``."""
        if until == INF:
            if not self.pending() and not self._node_returning():
                return None
            until = self.now + self.timeout  # a wall clock never waits forever
        event = self.events.next_due(self.clock.now, until, self._wait)
        return None if event is None else self._deliver(event)

    def _wait(self, seconds: float) -> None:
        """Bring back the crashed nodes whose downtime has ended; then wait for the workers, no longer than until
        the next one's. Not while the clock is paused (the late work drained between turns): that time is no
        one's, and a node brought back in it would be back early on the clock."""
        now, paused = self.now, self.clock.paused_at is not None
        for node, until in list(self.nodes_down.items()):
            if until <= now and not paused:
                self._node_back(node)
        returning = [] if paused else [until - now for until in self.nodes_down.values() if until < INF]
        self._take(max(0.0, min([seconds, *returning])))

    def _take(self, seconds: float) -> None:
        """Wait up to ``seconds`` for one of the workers' replies and turn it into the events it brings."""
        raise NotImplementedError

    # -- a node's crash (an emulated cluster's) -------------------------------------------------------
    def _node_crashed(self, job: Job) -> int | None:
        """The node this job's crash takes whole (its worker's), or None: a crash of the worker's own, no crash, or
        not on an emulated cluster (there each of the node's workers exits as its crashed job starts)."""
        if self.node_crash is None or not job.crash or not self.node_crash[job.row][job.worker]:
            return None
        return self.node_of[job.worker]

    def _exits_itself(self, job: Job) -> bool:
        """Whether the worker is to exit as this job starts: its own crash (a node's is the cluster's to do)."""
        return job.crash and self._node_crashed(job) is None

    def _died_with_node(self, job: Job) -> bool:
        """A crashed job whose node's crash has been done: it went with the node, sent or not."""
        node = self._node_crashed(job)
        return node is not None and (node, job.row) in self.crashed_rows

    def _requeue(self, w: int, running: Job | None, rest: list[Job]) -> None:
        """After worker w's exit: the job it was running is done with, and so is a crashed job its node's crash
        took (the master redoes its iteration); the rest run again once it is back."""
        gone = [job for job in rest if self._died_with_node(job)]
        self.queued[w] = [job for job in rest if job not in gone]
        for job in [running, *gone]:
            if job is not None:
                self._forget(job)

    def _crash_node(self, node: int, row: int) -> None:
        """Kill every process on ``node`` (once: its other workers' crashed jobs of the row find it gone) and note
        when its downtime ends; its workers' exits come as any other's."""
        if node in self.nodes_down or (node, row) in self.crashed_rows:
            return
        self.crashed_rows.add((node, row))
        downtime = self._downtime(row, self.node_of.index(node))
        killed_at = self.now
        self.nodes_down[node] = INF if downtime is None else killed_at + downtime
        killed = self._kill_node(node)
        workers = [w for w in range(self.n) if self.node_of[w] == node]
        self.node_crashes.append({"node": node, "iteration": row, "workers": workers, "killed": killed_at,
                                  "processes": len(killed), "noticed": {}, "revived": None, "back": {}})  # fmt: skip
        from gcbench.real.wallclock.placement import say_node_crashed

        say_node_crashed(node, row, len(killed), f"workers {', '.join(map(str, workers))}", "the scenario's failures",
                         "for good" if downtime is None else f"back in {downtime:g} s")  # fmt: skip

    def _kill_node(self, node: int) -> list[int]:
        """Kill the node's processes (on node 0, the master's, its workers' only); the process ids killed."""
        raise NotImplementedError

    def _node_returning(self) -> bool:
        return any(until < INF for until in self.nodes_down.values())

    def _node_back(self, node: int) -> None:
        """The node's downtime has ended: start it again (``_revive_node``) and its exited workers on it."""
        del self.nodes_down[node]
        self._revive_node(node)
        record = next(crash for crash in reversed(self.node_crashes) if crash["node"] == node)
        record["revived"] = self.now

    def _revive_node(self, node: int) -> None:
        """Start what the node runs besides the workers again (Ray: its raylet), then its workers
        (``_workers_back``)."""
        raise NotImplementedError

    def _workers_back(self, node: int) -> None:
        """The node is up again: start its exited workers again."""
        for w in self.waiting_for_node.pop(node, []):
            self._restart(w)

    def in_flight(self, job_ids: Iterable[int]) -> bool:
        """Whether a job with one of these ids can still deliver a result: it runs, or its result is in and held
        back (the modelled network's delay, an emulated latency) until its time."""
        ids = set(job_ids)
        return bool(self.running(ids)) or self.events.holds(lambda event: type(event) is Result and event.job.id in ids)

    def _schedule(self, at: float, event) -> None:
        self.events.schedule(at, event)

    def _deliver(self, event):
        if type(event) is Restart:  # back: the jobs sent to it meanwhile start now
            self.back[event.worker] = True
            if self.node_of is not None:
                self._noted(self.node_of[event.worker], "back", event.worker, event.at)
            self._resume(event.worker)
        return event

    def _resume(self, w: int) -> None:
        """Worker w is back: send the jobs that waited for it."""
        raise NotImplementedError

    def _result(self, job: Job, reply: dict) -> tuple[float, Result]:
        """A worker's reply as the Result the master takes, and when: a timing-only result held back by the
        modelled network. ``versions`` (a pipelined worker's cache) only from a backend whose workers keep
        caches between jobs."""
        start, end = self.clock.at(reply["compute_start"]), self.clock.at(reply["compute_end"])
        # the modelled network holds a timing-only result back; on an emulated cluster, a training result crossed
        # the shaped links, and is held for its node's latency, which the links cannot add
        at = max(self.now + (self.latency[job.worker] if self.trains else 0.0), end + self.delay)
        injected = reply.get("injected", float("nan"))
        messages, losses = reply.get("messages"), reply.get("losses")
        versions = reply.get("versions") if self.keeps_caches else None
        result = Result(job, at, start, end, messages, reply["abandoned"], losses, injected, versions)
        result.task_losses = reply.get("task_losses")
        result.message, result.final = reply.get("message"), reply.get("final", True)
        if reply.get("memory_lost"):  # a compressing worker's error-feedback memory died with its process
            log.warning(f"gcbench: worker {job.worker} lost its compression error-feedback memory with its process; "
                        f"from step {job.row} it starts a new one")  # fmt: skip
        if self.keeps_caches and reply.get("refilled"):  # a pipelined worker's cache died with its process
            log.warning(f"gcbench: worker {job.worker} lost its cached partition gradients with its process; "
                        f"from step {job.row} it computes partitions {reply['refilled']} again")  # fmt: skip
        return at, result

    def _exit(self, w: int, running: Job | None) -> None:
        """Worker w's process exited, running ``running`` (None: it was idle): one Failure, then its restart
        (unless it is dead for good, when what waited for it is dropped)."""
        noticed = self.now
        crash = running is not None and running.crash
        # a drawn crash exits as its job starts: once sent, and once the worker's previous job was done
        exited = min(noticed, max(running.sent, self.idle_since[w])) if crash else noticed
        self._schedule(exited, Failure(w, exited, running))
        self.back[w] = False
        node = None if self.node_of is None else self.node_of[w]
        if node in self.nodes_down:
            self._noted(node, "noticed", w, noticed)
        if w in self._dead:
            self._lose(w)
            return
        self.down_until[w] = exited + (self._downtime(running.row, w) if crash else 0.0)
        if node in self.nodes_down:  # its node crashed: it starts again with the node
            self.waiting_for_node.setdefault(node, []).append(w)
            return
        self._restart(w)

    def _noted(self, node: int, what: str, w: int, at: float) -> None:
        """Note in the node's latest crash record when worker w was noticed gone, or was back."""
        record = next((crash for crash in reversed(self.node_crashes) if crash["node"] == node), None)
        if record is not None and w in record["workers"] and w not in record[what]:
            record[what][w] = at

    def _downtime(self, row: int, worker: int) -> float | None:
        """How long a crash in this job keeps its worker down (None: for good): the failure model's, or the
        schedule's for a scheduled crash."""
        if self.downtimes is None:
            return self.downtime
        downtime = self.downtimes[row][worker]
        return None if downtime == INF else downtime

    def _restart(self, w: int) -> None:
        """Bring worker w back after its exit; its Restart is scheduled once it is ready."""
        raise NotImplementedError

    def _lose(self, w: int) -> None:
        """Worker w is gone for good: nothing that waited for it will run."""
        self.down_until[w] = INF
        for job in self.queued[w]:
            self._forget(job)
        self.queued[w] = []

    def _forget(self, job: Job) -> None:
        """The job is done with (replied, abandoned unsent, or lost for good): drop what it was to compute on. Kept
        until then: a job sent again after its worker's exit computes what it was first sent to."""
        self.batches.pop(job, None)
        self.versions.pop(job, None)
        self.tasks.pop(job, None)

    def drain(self, seconds: float = INF) -> list[Result | Failure | Restart]:
        """The events of work still in flight, for at most ``seconds``."""
        until, events = self.now + seconds, []
        while self.pending() and (event := self.next_event(until)) is not None:
            events.append(event)
        return events
