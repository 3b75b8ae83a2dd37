"""The Ray cluster: n worker actors behind the cluster protocol, in wall time.

With a Dataset, ``start`` puts the partitions' shards in the object store and
starts GradientWorker actors that train (gcbench/real/wallclock/gradient_worker.py); without one
(a timing-only run, the cluster conformance suite) each job sleeps its modelled
compute time, the run's ``busy`` draw, and its result is held back for the
network's latency and transfer, as the simulator's would be.

A failure is a worker process's exit: one the failure model drew (the worker
exits as the crashed job starts), or any other. One exit is one Failure, with
the job that was running; the jobs queued behind it on the worker run again
once it is back. Ray restarts the actor (``max_restarts=-1``); the worker is
back (a Restart) once its downtime has passed and it has its data again
(``load``, which waits for the restart). A worker the failure model crashes for
good (``downtime: null``) is dead from that job's submission, and killed
without restart when its exit comes.

A worker that sends several messages streams a reply per message
(gcbench/real/ray/streams.py).

A crashed job is sent only once the worker's earlier jobs have replied, and the
jobs after it wait with it: the process exits the moment the crashed job starts,
and a reply still being sent then would be lost with it (seen on a loaded
machine), so a drawn crash would take finished work with it.

The clock, the draws, the events known ahead of their time and the bookkeeping
of exits and restarts are every wall-clock cluster's (gcbench/real/wallclock/wall_cluster.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterable
from typing import Any, ClassVar

from gcbench.cluster import Job, Restart
from gcbench.errors import GcbenchError
from gcbench.real.processes import alive
from gcbench.real.ray.streams import StreamedJobs
from gcbench.real.wallclock.clock import WallClock
from gcbench.real.wallclock.placement import emulated_placement
from gcbench.real.wallclock.wall_cluster import ClusterStuck, WallClockCluster, log
from gcbench.scenario.draws import RunDraws

# ray.wait runs no Python signal handler until it returns: waiting in slices this long, a SIGTERM or Ctrl-C is
# handled at once (waiting whole, a SIGTERM to the process group stopped the raylet, and Ray's core worker ended
# the driver with status 1 before it could say how to resume)
SIGNAL_SLICE = 0.05
START_TIMEOUT = 120.0  # seconds Ray may take to start again on a crashed node


class RayCluster(StreamedJobs, WallClockCluster):
    """One actor per worker; a job on a busy worker queues behind on its actor, one on a down worker here."""

    keeps_caches: ClassVar[bool] = True  # an actor keeps a pipelined scheme's cached gradients between jobs
    computes_earlier_weights: ClassVar[bool] = True  # each job is sent the reference of the weights it computes on
    places_on_nodes: ClassVar[bool] = True  # a Ray node on each emulated node, each actor on its worker's

    @classmethod
    def prepare(cls, runs: list, address: str | None) -> None:
        """Start a local Ray instance, or join the cluster at ``address``, unless no run needs one (an allreduce
        variant's ranks are torch.distributed processes on any backend)."""
        if any(run.needs_cluster for run in runs):
            from gcbench.real.emulation import Nodes
            from gcbench.real.ray.start import start_ray

            nodes = Nodes.from_environment()
            if nodes is not None:  # inside an emulated cluster (gcbench run --emulate): a Ray node on each node
                from gcbench.real.emulation.ray_nodes import start_ray_nodes

                address = start_ray_nodes(nodes)
            start_ray(address)

    @classmethod
    def single_node(cls) -> bool:
        """Ray may span machines: then the master's decode and step take every core here. An emulated cluster's
        nodes are this machine's: they share its cores, however many Ray counts."""
        import ray

        from gcbench.real.emulation import Nodes

        if Nodes.from_environment() is not None:
            return True
        return len([node for node in ray.nodes() if node.get("Alive")]) <= 1

    def __init__(self, scenario, scheme, draws: RunDraws, seed: int = 0, device: str | None = None,
                 clock: WallClock | None = None, compressor=None):  # fmt: skip
        """As every wall-clock cluster's (``WallClockCluster``); Ray must be initialised."""
        import ray

        super().__init__(scenario, scheme, draws, seed, device, clock, compressor)
        self.ray, self.weights, self.version = ray, None, -1
        # the weights a job submitted later may still compute on, by version: a sequential scheme repeats the task
        # of the job B rounds back on that job's weights (its delay B); else the latest only
        self.published: dict[int, Any] = {}
        self.kept = scheme.delay
        self.actors: list = []  # (self.data: per worker, partition -> [shard ref], for restarts)
        self.jobs: dict[Any, Job] = {}  # compute refs (streams for several messages) in flight, in submission order
        self.held: list[list[Job]] = [[] for _ in range(self.n)]  # a crashed job and those after it, see _release
        self.pings: dict[Any, int] = {}  # data reloads after an exit, awaited: ref -> worker
        self.pids: dict[int, int] = {}
        self.exits = 0
        self.raylets: list[tuple[int, subprocess.Popen]] = []  # raylets starting again on crashed nodes

    # -- starting ---------------------------------------------------------------------------------
    def start(self, data=None) -> None:
        """Start the actors: GradientWorkers holding their partitions of ``data``, or sleepers without data.
        A clock of the cluster's own starts once every worker is ready."""
        from gcbench.real.wallclock.job_worker import SleepingWorker

        options = {"concurrency_groups": {"control": 1}, "num_cpus": 0, "max_restarts": -1}
        if data is None:
            self.delay = self._modelled_delay()
            actor = self.ray.remote(**options)(SleepingWorker)
            self.actors = [actor.options(**placed).remote(w) for w, placed in enumerate(self._placed())]
        else:
            self.trains, self.delay = True, 0.0  # a real network's time is its own
            self.actors = self._gradient_workers(data, options)
        self._wait_ready()
        if self.own_clock:
            self.clock = WallClock()

    def _gradient_workers(self, data, options: dict) -> list:
        from gcbench.real.ray.actors import GradientWorker

        shards, setup, spec = self._training_setup(data)
        if setup["device"].startswith("cuda"):  # Ray gives each actor its GPU (CUDA_VISIBLE_DEVICES): cuda there
            options = {**options, "num_gpus": gpu_share(self.n, self.ray.cluster_resources().get("GPU", 0))}
            setup = {**setup, "device": "cuda"}
        shards = [self.ray.put(shard) for shard in shards]
        self.data = [{j: [shards[j]] for j in self.scheme.partitions(w)} for w in range(self.n)]
        actor = self.ray.remote(**options)(GradientWorker)
        return [actor.options(**placed).remote(w, spec, setup) for w, placed in enumerate(self._placed())]

    def _placed(self) -> list[dict]:
        """Each worker's actor options that keep it on its node of an emulated cluster (none elsewhere: Ray
        places it)."""
        placement = emulated_placement(self.scenario)
        if placement is None:
            return [{} for _ in range(self.n)]
        from gcbench.real.emulation.ray_nodes import node_resource

        return [{"resources": {node_resource(node): 0.001}} for node in placement[1]]

    def _wait_ready(self) -> None:
        pings = [actor.load.remote(held) for actor, held in zip(self.actors, self.data, strict=True)]
        deadline, ready = time.monotonic() + self.timeout, []
        while len(ready) < len(pings) and (left := deadline - time.monotonic()) > 0:
            ready, _ = self.ray.wait(pings, num_returns=len(pings), timeout=min(left, SIGNAL_SLICE))
        if len(ready) < len(pings):
            raise ClusterStuck(f"only {len(ready)} of {len(pings)} workers started within {self.timeout:g} s.")
        self.pids = dict(enumerate(self.ray.get(pings)))

    def publish(self, weights) -> None:
        """One copy in the object store, read by every job submitted after it."""
        self.weights = self.ray.put(weights)
        self.version += 1  # the step these weights are (a pipelined worker records it per partition)
        self.published[self.version] = self.weights
        self.published.pop(self.version - self.kept - 1, None)

    # -- jobs -------------------------------------------------------------------------------------
    def _dispatch(self, job: Job) -> None:
        self.held[job.worker].append(job)
        self._release(job.worker)

    def _release(self, w: int) -> None:
        """Send worker w's held jobs in order; a crashed one (and so those after it) waits until none of w's
        earlier jobs is in flight."""
        held = self.held[w]
        while held and self.back[w] and not (held[0].crash and self._in_flight(w)):
            self._send(held.pop(0))

    def _in_flight(self, w: int) -> bool:
        return any(job.worker == w for job in self.jobs.values())

    def _send(self, job: Job) -> None:
        """Send a job to its actor; a node's crash is done once its first crashed job is sent (the job fails with
        the node's processes, and so do the node's other workers' jobs)."""
        self.jobs[self._call(job)] = job
        node = self._node_crashed(job)
        if node is not None:
            self._crash_node(node, job.row)

    def _call(self, job: Job):
        w, row, crash = job.worker, job.row, self._exits_itself(job)
        actor = self.actors[w]
        if w in self.fractions:
            return self._stream(job)
        if not self.trains:
            return actor.compute.remote(job.id, self.busy[row][w], crash)
        straggling, overhead = self.straggling[row][w], self.overhead[row][w]
        batch, version = self.batches[job], self.versions.get(job, self.version)
        tasks = self.tasks.get(job)
        if tasks is None:
            return actor.compute.remote(job.id, self.published[version], straggling, crash, batch, overhead, version)
        # M-SGC: each mini-task on its job's weights (top-level references: Ray resolves them)
        weights = [self.published[task_job] for task_job, _ in tasks]
        return actor.compute_tasks.remote(job.id, straggling, crash, overhead, tasks, *weights)

    def abandon(self, jobs: Iterable[Job]) -> None:
        """A queued job never runs; a running one stops at its next check and reports its timings."""
        for job in jobs:
            queue = next((queue for queue in (self.queued[job.worker], self.held[job.worker]) if job in queue), None)
            if queue is not None:
                queue.remove(job)
                self._forget(job)
            elif not job.crash:
                self.actors[job.worker].abandon.options(concurrency_group="control").remote(job.id)

    # -- state ------------------------------------------------------------------------------------
    def _crash_sent(self, worker: int) -> bool:
        return any(job.worker == worker and job.crash for job in [*self.jobs.values(), *self.held[worker]])

    def running(self, job_ids: Iterable[int]) -> list[Job]:
        ids = set(job_ids)
        jobs = [*self.jobs.values(), *(job for queue in [*self.queued, *self.held] for job in queue)]
        return [job for job in jobs if job.id in ids and not job.crash]

    def pending(self) -> bool:
        return bool(self.jobs or self.pings or self.events or self.raylets)

    def restarting(self, workers: Iterable[int]) -> set[int]:
        """Those of these workers whose process Ray is restarting, noticed here or not.

        A worker that dies while idle fails no job until Ray has restarted it
        (its next job waits for the restart), so only Ray's actor table knows it
        is down. ``ray.util.state`` would need the dashboard; this asks the GCS.
        """
        from ray._private.state import actors

        ids = {self.actors[w]._actor_id.hex(): w for w in workers}
        return {ids[actor] for actor in actors(actor_state_name="RESTARTING") if actor in ids} if ids else set()

    # -- events -----------------------------------------------------------------------------------
    def _take(self, seconds: float) -> None:
        """Wait up to ``seconds`` for one of Ray's replies and turn it into the events it brings."""
        if self.raylets:
            self._raylets_started()
        refs = [*self.jobs, *self.pings]
        if not refs:  # (while a crashed node's raylet starts, polled a slice at a time)
            time.sleep(min(seconds, SIGNAL_SLICE) if self.raylets else seconds)
            return
        done, _ = self.ray.wait(refs, num_returns=1, timeout=min(seconds, SIGNAL_SLICE))
        if not done:
            return
        ref = done[0]
        if ref in self.pings:
            self._reloaded(self.pings.pop(ref), ref)
        elif isinstance(ref, self.ray.ObjectRefGenerator):
            self._streamed(ref)
        else:
            job = self.jobs.pop(ref)
            self._replied(job, ref)
            self._release(job.worker)

    def _resume(self, w: int) -> None:
        self.held[w], self.queued[w] = self.queued[w] + self.held[w], []
        self._release(w)

    def _replied(self, job: Job, ref) -> None:
        reply = self._got(job, ref)
        if reply is None:
            self._exited(job)
        else:
            self._reply(job, reply)

    def _got(self, job: Job, ref) -> dict | None:
        """A job's reply; None when its worker's process exited (or was restarted unnoticed)."""
        ray = self.ray
        try:
            return ray.get(ref)
        except (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError):
            return None  # (a reply left in the object store of a node that crashed is lost with it)
        except ray.exceptions.RayTaskError as error:
            from gcbench.real.wallclock.job_worker import WorkerRestarted

            if isinstance(error.cause, WorkerRestarted):  # restarted unnoticed (it died idle): give it its data
                return None
            raise GcbenchError(f"worker {job.worker} raised an error: {error.cause!r}") from None

    def _reply(self, job: Job, reply: dict) -> None:
        self._forget(job)
        if not reply["started"]:
            return  # abandoned before it began: it never ran
        self.idle_since[job.worker] = self.clock.at(reply["compute_end"])
        self._schedule(*self._result(job, reply))

    def _exited(self, job: Job) -> None:
        """A worker's process exited: one Failure, with the job it was running; what was queued behind on
        its actor runs again once it is back (it cannot have started)."""
        w = job.worker
        lost = [job, *self._replies_before_exit(w)]
        # a crashed job its node's crash took, sent or held, is the one that failed (as the simulator's)
        taken = [*lost, *(other for other in self.held[w] if self._died_with_node(other))]
        crashed = [other for other in taken if other.crash]
        running = min(crashed or lost, key=lambda other: other.sent)
        self._requeue(w, running, [other for other in [*lost, *self.held[w], *self.queued[w]] if other is not running])
        self.held[w] = []
        self._exit(w, running)
        if not self._died_with_node(running):  # (a node's crash is said as it is done)
            self._warn_once(w, running.crash)

    def _restart(self, w: int) -> None:
        """Ray restarts the actor; ``load`` waits for that and gives it its data back."""
        self.pings[self.actors[w].load.options(max_task_retries=-1).remote(self.data[w])] = w

    def _replies_before_exit(self, w: int) -> list[Job]:
        """Take the replies worker w sent before it exited; the jobs that died with it."""
        refs = [ref for ref, other in self.jobs.items() if other.worker == w]
        streams = [ref for ref in refs if isinstance(ref, self.ray.ObjectRefGenerator)]
        for stream in streams:
            self._take_sent(stream)
        lost = [self.jobs.pop(stream) for stream in streams if stream in self.jobs]  # unfinished: died with it
        refs = [ref for ref, other in self.jobs.items() if other.worker == w]
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0) if refs else ([], [])
        for ref in refs:
            job = self.jobs.pop(ref)
            try:
                reply = self.ray.get(ref) if ref in ready else None
            except self.ray.exceptions.RayError:
                reply = None
            if reply is None:
                lost.append(job)
            else:
                self._reply(job, reply)
        return lost

    def _warn_once(self, w: int, drawn: bool) -> None:
        self.exits += 1
        if self.exits == 1:  # Ray prints its own alarming "(raylet) A worker died ..." lines; say what they are
            cause = "a crash the failure model drew" if drawn else "not a crash the scenario drew"
            log.warning(
                f"gcbench: worker {w}'s process exited ({cause}); Ray's '(raylet) A worker died' messages about "
                "such exits are expected."
            )

    def _reloaded(self, w: int, ref) -> None:
        """Its data is back after a restart: the Restart comes now, or when its downtime ends."""
        try:
            self.pids[w] = self.ray.get(ref)
        except self.ray.exceptions.RayError:
            self._dead.add(w)  # Ray could not restart it: lost for good
            self._lose(w)
            return
        at = max(self.now, self.down_until[w])
        self._schedule(at, Restart(w, at))

    def _lose(self, w: int) -> None:
        self.ray.kill(self.actors[w], no_restart=True)
        for job in self.held[w]:
            self._forget(job)
        self.held[w] = []
        super()._lose(w)

    # -- a node's crash (an emulated cluster's) ---------------------------------------------------------
    def _kill_node(self, node: int) -> list[int]:
        """Every process on the node, its raylet and object store included (its actors wait for it: each asks
        for its node's resource); on node 0, whose head is the master's cluster, its workers' processes only
        (Ray restarts them there at once; their downtime keeps them out)."""
        if node > 0:
            return self.nodes.crash(node)
        killed = []
        for w in range(self.n):
            if self.node_of[w] == 0 and w in self.pids:
                try:
                    os.kill(self.pids[w], signal.SIGKILL)
                    killed.append(self.pids[w])
                except ProcessLookupError:
                    pass
        return killed

    def _revive_node(self, node: int) -> None:
        """A new raylet on the node, joining the head (started here, polled until it has); the node's actors
        are restarted on it."""
        if node == 0:  # (the head's raylet lives on)
            self._workers_back(node)
            return
        from gcbench.real.emulation.ray_nodes import restart_ray_node

        self.raylets.append((node, restart_ray_node(self.nodes, node)))

    def _raylets_started(self) -> None:
        """Collect the new raylets' starts that have ended: their node's workers are started again (their
        actors' restarts wait for it); one that failed is said, and its workers stay down."""
        for node, start in list(self.raylets):
            if start.poll() is None:
                continue
            self.raylets.remove((node, start))
            if start.returncode == 0:
                self._workers_back(node)
            else:
                why = (start.stderr.read().strip().splitlines() or ["it said nothing"])[-1]
                log.warning(f"gcbench: Ray did not start again on emulated node {node}: {why}")

    def _whole_again(self) -> None:
        """Start Ray again on every node a crash left without it, and wait for the starts: the next run (another
        variant's) gets the whole cluster."""
        from gcbench.real.emulation.ray_nodes import restart_ray_node

        for node in [node for node in self.nodes_down if node > 0]:
            self.raylets.append((node, restart_ray_node(self.nodes, node)))
        self.nodes_down.clear()
        self.waiting_for_node.clear()
        for _, start in self.raylets:
            try:
                start.wait(START_TIMEOUT)
            except subprocess.TimeoutExpired:
                start.kill()
        self._raylets_started()

    # -- stopping ---------------------------------------------------------------------------------
    def shutdown(self, interrupted: bool = False, wait: float = 10.0) -> None:
        """Kill every actor and wait (up to ``wait`` seconds) for their processes to be gone; not when
        ``interrupted``: a SIGTERM to the process group also stops the local raylet, and a driver still waiting
        then is ended by Ray's core worker with status 1, before it can say how to resume."""
        wait = 0.0 if interrupted else wait
        for actor in self.actors:
            self.ray.kill(actor, no_restart=True)
        if not interrupted:
            self._whole_again()
        self.jobs.clear()
        self.pings.clear()
        self.events.clear()
        self.queued, self.held = [[] for _ in range(self.n)], [[] for _ in range(self.n)]
        deadline = time.time() + wait
        while self._live_processes() and time.time() < deadline:
            time.sleep(0.02)

    def _live_processes(self) -> list[int]:
        return [pid for pid in self.pids.values() if alive(pid)]

    def leftovers(self) -> list[str]:
        """Worker processes still alive (on this machine), and jobs, reloads or events still pending."""
        lines = [f"worker process {pid} is alive" for pid in self._live_processes()]
        counts = {"jobs in flight": len(self.jobs), "reloads awaited": len(self.pings)}
        counts.update({"events not taken": len(self.events), "jobs queued": sum(map(len, [*self.queued, *self.held]))})
        return lines + [f"{count} {what}" for what, count in counts.items() if count]


def gpu_share(workers: int, gpus: float) -> float:
    """Each worker actor's ``num_gpus``: a whole GPU where there are enough, else the fraction that packs
    ceil(workers / GPUs) of them onto each GPU (a fraction of at most one GPU never spans two)."""
    if gpus < 1:
        raise GcbenchError(
            "training.device: CUDA was asked for, but the Ray cluster offers no GPU (ray.cluster_resources() has "
            "no 'GPU'); start its nodes with --num-gpus, or use cpu."
        )
    whole = int(gpus)
    return 1.0 if whole >= workers else 1.0 / -(-workers // whole)
