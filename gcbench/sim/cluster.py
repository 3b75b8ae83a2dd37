"""The SimPy cluster: n simulated workers on a ``simpy.Environment``, in virtual time.

Each job's compute time, straggling and crash come from the run's seeded draws
(row ``row`` of ``draw_run``), its upload from the network model: latency, then
bandwidth, through the master's ingress link when it is shared. The shared link
is a FIFO server that sends the messages queued on it one at a time, in the order
they reached it: ``Link``, a chain of calendar events (``network.link_model:
events``, the default), or ``ResourceLink``, a ``simpy.Resource`` (``resource``,
the textbook model to extend). With a topology or ``network.master.ingress``,
the links are shared fairly instead (``FairShareLink``, each node's uplink and
the master's ingress; gcbench/sim/links.py holds the three). A synchronous run under ``stale_work: abandon``
gives each iteration's messages a link of their own, as the fast path does: its
abandoned workers stop, so nothing of a finished iteration's could delay the
next one's. Under ``finish`` late work goes on sending through the same NIC as
the next iterations' messages, so the run has one link, as an asynchronous run
has; so has a run whose abandoned messages finish (``network.abandoned_messages:
finish``): work the master abandons stops, but a message its worker had sent by
then (its compute ended before) crosses the links to its end, beside the next
iterations' weights and messages, as TCP sends what it was given.

A job is one SimPy event whose callback queues its result for ``next_event``
(with a shared link: reaching the link, then its transfer over the link); the
master running on this cluster is the simulator's event engine. Virtual time
only moves inside ``next_event``, which steps the environment to the next event,
and ``between_iterations``, which lets the master's modelled time pass
(``master.between_iterations``); a job starts ``network.dispatch`` after it is
sent, once its worker is free.

A worker that sends more than one message (``Scheme.messages``) sends each as
soon as the partitions it uses are computed: the job's drawn busy time is for
all its partitions, split evenly among them (what the load model implies: a
per-partition time times the load), so message i is ready ``ready_after(i) /
load`` of the way through the job, and each message is its own result with its
own latency and transfer (on the shared link, its own turn). A worker with one
message sends it when its job ends, as it always did.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import simpy

from gcbench.cluster import Cluster, Event, Failure, Job, Restart, Result, message_fractions
from gcbench.models.wire import Wire
from gcbench.scenario.draw_rows import DrawnRows, by_row
from gcbench.scenario.draws import RunDraws, draw_run, message_bytes, message_delay, weights_bytes
from gcbench.sim.links import LINK_MODELS, Due, FairShareLink, Link, ResourceLink, part

INF = float("inf")


class SimPyCluster(Cluster):
    """Workers whose jobs take the drawn times; a job on a busy or down worker starts when it is free.

    ``link_class``: a subclass's own model of the shared ingress link (e.g. a ``ResourceLink`` subclass);
    None takes the scenario's ``network.link_model``. ``link_per_job``: a synchronous run's, which gives each
    iteration a link of its own unless late work finishes (``stale_work: finish``; the module's docstring)."""

    link_class: type | None = None

    def __init__(self, scenario, scheme, draws: RunDraws | DrawnRows, link_per_job: bool = False,
                 compressor=None) -> None:  # fmt: skip
        self.env = simpy.Environment()
        self.n = scenario.workers
        self.busy = by_row(draws.busy)  # plain lists: scalar access per job is several times faster than numpy
        # network.dispatch per job (None: a job starts as it is sent); master.between_iterations per iteration
        self.dispatch = None if draws.dispatch is None else by_row(draws.dispatch)
        self.between = draws.between
        self.downtime = getattr(scenario.failures, "downtime", None)
        # each job's own downtime where crashes are scheduled (failures.schedule; inf: for good), else None
        self.downtimes = None if draws.downtime is None else by_row(draws.downtime)
        network = scenario.network
        # ``compressor``: the variant's (a message's size is its payload's; compressing and decompressing it take
        # their time on the way); None: messages travel uncompressed
        self.latency = message_delay(scenario, scheme, compressor)
        self.size = size = message_bytes(scenario, scheme, compressor)
        self.transfer = 0.0 if network.bandwidth is None else size / network.bandwidth
        self.shared = network.shared_link and self.transfer > 0
        # links shared fairly (a topology's, or the master's ingress): every message crosses them, each worker's
        # after its node's latency
        self.wire = Wire.of(network, scenario.topology, self.n)
        self.latencies = None if self.wire is None else self.wire.delays(self.latency).tolist()
        if self.wire is not None:
            self.shared = True
        if self.link_class is None:
            self.link_class = LINK_MODELS[network.link_model]
        # a message abandoned once sent crosses the links to its end (network.abandoned_messages: finish)
        self.sent_finish = network.abandoned_messages == "finish"
        link_per_job = link_per_job and scenario.stale_work == "abandon" and not self.sent_finish
        self.fractions = message_fractions(scheme)  # per worker sending several messages: when each is ready
        self.remaining: dict[Job, int] = {}  # such a job's messages still to deliver
        self.link_per_job, self.links = link_per_job, {}  # job id -> the link its messages share
        self.link = None if link_per_job else self._shared_link()  # the run's one link (asynchronous, or finish)
        # the weights' way to the workers, where it takes time (else None): per iteration, or the run's, as above
        self.weights_size = weights_bytes(scenario)
        broadcasts = self.wire is not None and self.wire.broadcasts
        self.weights = None if not broadcasts else self._new_weights_link()
        self.weights_links: dict[int, FairShareLink] = {}
        # iterations' idle links whose token buckets (network.burst) are still refilling, by job id
        self.resting: dict[int, FairShareLink] = {}
        self.weights_resting: dict[int, FairShareLink] = {}
        self.receiving: dict[Job, None] = {}  # jobs whose weights are on their way (a dict: in order)
        self.dropped: set[Job] = set()  # of those, jobs the master abandoned meanwhile
        self.free_at = [0.0] * self.n  # when each worker's queued work ends
        self.down_until = [0.0] * self.n
        self._dead: set[int] = set()
        self.jobs: dict[Job, tuple[int, float]] = {}  # jobs that will deliver a result -> (id, begin)
        self.timers = 0  # failures and restarts scheduled, not yet delivered
        self.abandoned: dict[Job, float] = {}  # -> when (a job abandoned before it began never runs)
        self.events: deque[Event] = deque()

    @classmethod
    def from_scenario(cls, scenario, scheme, seed: int, synchronous: bool = True) -> SimPyCluster:
        """Fed by the run's seeded draws; ``synchronous``: a synchronous run's (``link_per_job``)."""
        return cls(scenario, scheme, draw_run(scenario, scheme, seed), link_per_job=synchronous)

    @property
    def now(self) -> float:
        return self.env.now

    @property
    def dead(self) -> set[int]:
        return self._dead

    def start(self, data=None) -> None:
        """Simulated workers need no data (``TrainingCluster``, gcbench/sim/training.py, takes it to train)."""

    def publish(self, model) -> None:
        """Simulated workers compute no gradient values; timing needs no model."""

    def submit(
        self, worker: int, job: int, row: int, crash: bool, batch: int | None = None, version: int | None = None,
        tasks: tuple[tuple[int, int], ...] | None = None,
    ) -> Job:  # fmt: skip
        handle = Job(worker, job, row, self.env.now, crash)
        if worker in self._dead:
            return handle  # crashed for good: the job never runs, and nothing waits for it
        if self.weights is None:
            self._start(handle)
        else:  # the job starts once its copy of the weights is in
            self.receiving[handle] = None
            self._weights_link(job).add(worker, handle)
        return handle

    def _start(self, handle: Job) -> None:
        """The job reaches its worker now (with its weights): it begins a dispatch later, once the worker is free
        and up."""
        env, worker, job, row, crash = self.env, handle.worker, handle.id, handle.row, handle.crash
        now = env.now
        sent = now if self.dispatch is None else now + self.dispatch[row][worker]
        begin = max(sent, self.free_at[worker], self.down_until[worker])
        if worker in self._dead:
            return  # crashed for good while its weights were on their way
        if crash:
            self._crash(handle, begin)
            return
        seconds = self.seconds(worker, row)
        ready = begin + seconds
        self.free_at[worker] = ready
        self.jobs[handle] = (job, begin)
        fractions = self.fractions.get(worker)
        if fractions is not None:
            self._send_messages(handle, begin, seconds, fractions)
            return
        # (begin - now) + seconds + ... keeps a job started now on the same floats as t + (seconds + latency + transfer)
        delay = (begin - now) + seconds + (self.latency if self.latencies is None else self.latencies[worker])
        if self.shared:
            self._reach_in(delay, worker, (handle, begin, ready, None))
        else:
            delay += self.transfer
            env.timeout(delay, Result(handle, now + delay, begin, ready)).callbacks.append(self._queue)

    def _weights_in(self, handle: Job) -> None:
        """A job's copy of the weights is in: it starts, unless the master abandoned it meanwhile (it never runs)."""
        del self.receiving[handle]
        if handle in self.dropped:
            self.dropped.discard(handle)
            return
        self._start(handle)

    def _weights_link(self, job: int) -> FairShareLink:
        """The links the job's weights cross: its iteration's own (as its messages have), or the run's."""
        if not self.link_per_job:
            return self.weights
        link = self.weights_links.get(job) or self._rested(job, self.weights_resting)
        if link is not None:
            self.weights_links[job] = link
        else:
            link = self.weights_links[job] = FairShareLink.weights(
                self.env, self.wire, self.weights_size, self._weights_in, self._weights_link_idle, job
            )
        return link

    def _weights_link_idle(self, link: FairShareLink) -> None:
        del self.weights_links[link.key]
        self._rest(link, self.weights_resting)

    def _rest(self, link, resting: dict) -> None:
        """An iteration's idle link whose token buckets are not yet full again: kept until they are, so that a
        later message of that iteration finds them as they are (a fresh link's are full). Those full by now go."""
        now = self.env._now
        for key in [key for key, rested in resting.items() if rested.refilled_at() <= now]:
            del resting[key]
        if getattr(link, "burst", None) is not None and link.refilled_at() > now:
            resting[link.key] = link

    def _rested(self, key: int, resting: dict):
        """The iteration's link resting with buckets still refilling (None: none, or they are full: a new one
        is the same)."""
        link = resting.pop(key, None)
        return link if link is not None and link.refilled_at() > self.env._now else None

    def _send_messages(self, handle: Job, begin: float, seconds: float, fractions: tuple[float, ...]) -> None:
        """Each of the job's messages once the partitions it uses are computed, each with its own transfer."""
        now = self.env.now
        self.remaining[handle] = len(fractions)
        for index, fraction in enumerate(fractions):
            work = seconds * fraction
            delay = (begin - now) + work + (self.latency if self.latencies is None else self.latencies[handle.worker])
            if self.shared:
                self._reach_in(delay, handle.worker, (handle, begin, begin + work, index))
            else:
                delay += self.transfer
                result = part(handle, now + delay, begin, begin + work, index)
                self.env.timeout(delay, result).callbacks.append(self._queue)

    def between_iterations(self, t: int) -> None:
        """The master's modelled time after iteration t - 1 passes (``master.between_iterations``): work in
        flight meanwhile (late results, failures, restarts) is queued for ``next_event``, with its times."""
        if self.between is None or t == 0:
            return
        gap = float(self.between[t - 1])
        if gap > 0:
            self.env.run(until=self.env.now + gap)

    def seconds(self, worker: int, row: int) -> float:
        """How long a job computes: the run's draw (a subclass may change it, e.g. from a SimPy process)."""
        return self.busy[row][worker]

    def _crash(self, job: Job, begin: float) -> None:
        """Down from ``begin`` for its downtime, or for good; the failure is reported at ``begin``."""
        w = job.worker
        downtime = self.downtime if self.downtimes is None else self.downtimes[job.row][w]
        forever = downtime is None or downtime == INF
        recover = INF if forever else begin + downtime
        self.down_until[w] = self.free_at[w] = recover
        if forever:
            self._dead.add(w)
        self._schedule(begin - self.env.now, Failure(w, begin, job))
        if not forever:
            self._schedule(recover - self.env.now, Restart(w, recover))

    def _reach_in(self, delay: float, worker: int, value) -> None:
        """Reach the link after ``delay``: messages reaching it at one instant queue in worker order, as in
        the fast path's stable sort (a timeout would order them by when their jobs were submitted)."""
        Due(self.env, delay, 2 + worker, value, self._reach_link)

    def _reach_link(self, event: Due) -> None:
        """A message reaches the link: queued for its transfer, unless its job was abandoned before it began
        (still being dispatched): it never ran and sends nothing, so ``_queue_result`` drops it at once. Where
        abandoned messages finish, one whose job was abandoned before it was ready was never sent either: it
        reports its times as it reaches the link, and takes no share of it."""
        job, begin, ready, message = event._value
        abandoned = self.abandoned.get(job)
        if abandoned is not None and (begin > abandoned or (self.sent_finish and ready > abandoned)):
            now = self.env._now
            self._queue_result(
                Result(job, now, begin, ready) if message is None else part(job, now, begin, ready, message)
            )
            return
        (self._reach_job_link if self.link is None else self.link.reach)(event)

    def _schedule(self, delay: float, value: Failure | Restart) -> None:
        """A failure or restart due after ``delay``: own work the cluster counts (``timers``)."""
        self.env.timeout(delay, value).callbacks.append(self._timer)
        self.timers += 1

    def _timer(self, event: simpy.Event) -> None:
        self.timers -= 1
        self._queue_result(event._value)

    def _queue(self, event: simpy.Event) -> None:
        self._queue_result(event._value)

    def _queue_result(self, result: Event) -> None:
        if type(result) is Restart:
            w = result.worker
            if self.down_until[w] == result.at:  # (not a later crash's): the clock may stand an ulp short of it
                self.down_until[w] = min(result.at, self.env.now)
        elif type(result) is Result:
            job = result.job
            final = result.message is None or self._delivered(job)
            result.final = final
            begin = (self.jobs.pop(job) if final else self.jobs[job])[1]
            if job in self.abandoned:
                if begin > (self.abandoned.pop(job) if final else self.abandoned[job]):
                    return  # abandoned before it began: it never ran
                message = result.message
                result = Result(job, result.at, result.compute_start, result.compute_end, None, True)
                result.message, result.final = message, final
        self.events.append(result)

    def _delivered(self, job: Job) -> bool:
        """Count one of a job's messages delivered; True for its last."""
        left = self.remaining[job] - 1
        if left:
            self.remaining[job] = left
            return False
        del self.remaining[job]
        return True

    def _reach_job_link(self, event: Due) -> None:
        """A message reaches its iteration's link, made when the first of them reaches it."""
        key = event._value[0].id
        link = self.links.get(key) or self._rested(key, self.resting)
        if link is not None:
            self.links[key] = link
        else:
            link = self.links[key] = self._new_link(self._job_link_idle, key)
        link.reach(event)

    def _shared_link(self) -> Link | ResourceLink | FairShareLink:
        return self._new_link()

    def _new_link(self, idle=None, key=0) -> Link | ResourceLink | FairShareLink:
        if self.wire is not None:
            return FairShareLink.uploads(self.env, self.wire, self.size, self._queue_result, idle, key)
        return self.link_class(self.env, self.transfer, self._queue_result, idle, key)

    def _new_weights_link(self) -> FairShareLink:
        return FairShareLink.weights(self.env, self.wire, self.weights_size, self._weights_in)

    def _job_link_idle(self, link: Link) -> None:
        del self.links[link.key]  # an iteration's link, idle for good once its messages are through
        self._rest(link, self.resting)

    def next_event(self, until: float) -> Event | None:
        """Steps the environment only while the cluster's own work is outstanding (as ``pending`` counts it): a
        process a subclass added that never ends (a drift, every second) keeps SimPy's calendar full for good,
        and a wait for ``until`` = inf would step it for ever."""
        events, env, calendar, jobs = self.events, self.env, self.env._queue, self.jobs
        while not events:
            when = calendar[0][0] if calendar else INF  # (env.peek(), without its call)
            if when > until or when == INF or not (jobs or self.timers or self.receiving):
                if env.now < until < INF:
                    env.run(until=until)
                return None
            env.step()
        return events.popleft()

    def abandon(self, jobs: Iterable[Job]) -> None:
        """The workers stop at once; jobs that had begun still report the timings they would have had."""
        now = self.env.now
        for job in jobs:
            if job in self.jobs:
                self.abandoned[job] = now
                self.free_at[job.worker] = min(self.free_at[job.worker], now)
            elif job in self.receiving:
                self.dropped.add(job)

    def down(self, worker: int) -> bool:
        return worker in self._dead or self.env.now < self.down_until[worker]

    def running(self, job_ids: Iterable[int]) -> list[Job]:
        ids = set(job_ids)
        started = [job for job, (job_id, _) in self.jobs.items() if job_id in ids]
        return started + [job for job in self.receiving if job.id in ids and job not in self.dropped]

    def in_flight(self, job_ids: Iterable[int]) -> bool:
        ids = set(job_ids)
        receiving = any(job.id in ids and job not in self.dropped for job in self.receiving)
        return any(job_id in ids for job_id, _ in self.jobs.values()) or receiving

    def pending(self) -> bool:
        """Events not yet taken, or the cluster's own work outstanding: a job that will still deliver (its
        messages on a link included), a failure or restart scheduled. Not any SimPy event: a process of a
        subclass's may never end, and the master reads this to tell a run that can never finish."""
        return bool(self.events) or bool(self.jobs) or self.timers > 0 or bool(self.receiving)

    def drain(self, seconds: float = INF) -> list[Event]:
        until, events = self.env.now + seconds, []
        while (event := self.next_event(until)) is not None:
            events.append(event)
        return events

    def shutdown(self, interrupted: bool = False) -> None:
        """Stop every worker: no job, message or restart is pending any more, and the link processes end."""
        self.jobs.clear()
        self.remaining.clear()
        self.abandoned.clear()
        self.events.clear()
        self.timers = 0
        self.links.clear()
        self.resting.clear()
        self.weights_resting.clear()
        self.link = None if self.link is None else self._shared_link()
        self.weights_links.clear()
        self.weights = None if self.weights is None else self._new_weights_link()
        self.receiving.clear()
        self.dropped.clear()
        self.env._queue.clear()  # SimPy cannot cancel a scheduled event; an emptied calendar has none

    def leftovers(self) -> list[str]:
        """Jobs in flight, events not yet taken, and SimPy events still scheduled (a process waits on one)."""
        counts = {"jobs in flight": len(self.jobs), "events not taken": len(self.events)}
        counts["jobs waiting for their weights"] = len(self.receiving)
        counts["scheduled SimPy events"] = len(self.env._queue)
        return [f"{count} {what}" for what, count in counts.items() if count]
