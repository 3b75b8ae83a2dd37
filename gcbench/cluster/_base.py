"""The cluster protocol: what the one master needs from any set of workers, in virtual or wall time.

The master starts the workers with their data, publishes the model, submits
jobs, and takes events (a result, a failure, a restart) one at a time before a
given time (backends, by name in gcbench/cluster/_registry.py: ``simpy`` in
gcbench/sim/cluster.py, ``ray`` and ``torch`` in gcbench/real/<name>/cluster.py).
Only the clock differs between backends: the SimPy cluster's ``now`` is virtual
and ``next_event`` advances it; a real cluster's ``now`` is the wall clock.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gcbench.coding import Scheme
    from gcbench.scenario.schema import Scenario


@dataclass(eq=False, slots=True)  # not frozen: a frozen init costs a microsecond per job
class Job:
    """One compute call: worker, job id (what ``abandon`` and ``in_flight`` refer to), draw row, when sent, crash."""

    worker: int
    id: int
    row: int
    sent: float
    crash: bool


@dataclass(slots=True)
class Result:
    """A job's result reached the master at ``at``, on the cluster's clock.

    Where the cluster trains, ``messages`` hold the encoded vectors (a list of numpy arrays) and ``losses``
    each computed partition's loss; ``injected`` is the delay a real worker actually slept (NaN: the
    modelled draw, which the master records itself); ``versions``, for a pipelined scheme, the step whose
    weights computed each cached partition gradient the messages encode.

    ``message``: None when the result carries every message of the job (they arrive together); else the
    index, in the worker's message order (``Scheme.messages``), of the one message it carries, sent as soon
    as the partitions it uses were computed (``Scheme.ready_after``), with ``compute_end`` when it was ready
    and ``messages`` that one vector. ``final``: the job's last result (its worker is done with the job).
    Where the variant compresses, ``messages`` are payloads (gcbench.compression) the master decompresses."""

    job: Job
    at: float
    compute_start: float
    compute_end: float
    messages: Any = None
    abandoned: bool = False
    losses: dict[int, float] | None = None
    injected: float = float("nan")
    versions: dict[int, int] | None = None
    message: int | None = None
    final: bool = True
    # where messages are compressed payloads: the same messages uncompressed, where the cluster keeps them (the
    # simulator does), so the master can measure what compression changed (the compression_error column)
    exact: Any = None
    # a multiplexed job's (Cluster.submit's ``tasks``): each mini-task's partition losses, in the tasks' order
    # (``messages`` then holds one vector per mini-task; partitions of different jobs share ids)
    task_losses: list[dict[int, float]] | None = None

    @property
    def worker(self) -> int:
        return self.job.worker


@dataclass(slots=True)
class Failure:
    """Worker ``worker`` failed at ``at`` (``job``: the job that crashed, if known)."""

    worker: int
    at: float
    job: Job | None = None


@dataclass(slots=True)
class Restart:
    """Worker ``worker`` is back at ``at`` and takes jobs again."""

    worker: int
    at: float


Event = Result | Failure | Restart


def message_fractions(scheme: Scheme) -> dict[int, tuple[float, ...]]:
    """Per worker that sends more than one message, each as it is ready: the fraction of its job after which
    each is ready (``ready_after`` of its load, the job's time split evenly among its partitions)."""
    fractions = {}
    if not scheme.streams_messages:
        return fractions
    for w in range(scheme.n):
        own = scheme.messages(w)
        if len(own) > 1:
            load = len(scheme.partitions(w))
            fractions[w] = tuple(scheme.ready_after(mid) / load for mid in own)
    return fractions


class Cluster(ABC):
    """n workers behind one clock. A job submitted to a busy worker queues behind its current one.

    ``timeout``: the longest a wall-clock cluster lets the master wait for an event (``training.timeout``);
    the master bounds every wait by it and reports a timeout past it. Infinite in virtual time, where a
    wait that nothing can end returns at once instead."""

    n: int
    timeout: float = float("inf")

    @classmethod
    def from_scenario(cls, scenario: Scenario, scheme: Scheme, seed: int, synchronous: bool = True) -> Cluster:
        """The scenario's workers for one seed (the simulator draws their times from it, a real backend its
        injected straggling); ``synchronous``: the master runs a synchronous policy. The conformance suite
        builds every registered cluster this way."""
        raise NotImplementedError(f"{cls.__name__} cannot be built from a scenario yet")

    @property
    @abstractmethod
    def now(self) -> float:
        """The cluster's clock in seconds (virtual for the simulator, wall time for real backends)."""

    def start(self, data: Any = None) -> None:  # noqa: B027  (a simulated worker needs no data)
        """Start the workers with their partitions' data."""

    def publish(self, model: Any) -> None:  # noqa: B027  (nothing to publish when the cluster does not train)
        """Make these model weights the ones the next submitted jobs compute on."""

    def between_iterations(self, t: int) -> None:  # noqa: B027  (a wall clock's time passes by itself)
        """The master is done with iteration t - 1 and starts iteration t: a virtual clock lets the master's
        modelled time between them pass (``master.between_iterations``)."""

    @abstractmethod
    def submit(
        self, worker: int, job: int, row: int, crash: bool, batch: int | None = None, version: int | None = None,
        tasks: tuple[tuple[int, int], ...] | None = None,
    ) -> Job:  # fmt: skip
        """Start a job on ``worker``: draw row ``row``; ``crash``: the failure model crashes it as it starts;
        ``batch``: the mini-batch it computes when the cluster trains (default ``row``; an asynchronous
        worker's j-th job computes mini-batch j on draw row j mod iterations). It computes on the weights
        published last before the submission, or with ``version`` on the ``version``-th published (from 0):
        a sequential scheme's repeated task computes on its job's weights. ``tasks``: a multiplexed scheme's
        mini-tasks, (job, index among the worker's messages) each, each computing that message on job's
        mini-batch and weights (M-SGC; only a cluster that trains reads them)."""

    @abstractmethod
    def next_event(self, until: float) -> Event | None:
        """The next event at or before time ``until``; None (the clock at ``until``) when there is none.

        Never an event later than ``until``: a wall-clock backend keeps an event it took after ``until`` for
        the next call. A Failure whose job the failure model did not crash (``job.crash`` false, or no job)
        is a worker lost otherwise (its process killed); a Restart follows when it is back, unless it is dead.

        A wait that cannot be satisfied ends at ``until``: a virtual clock jumps there, a wall clock waits no
        longer. With ``until`` infinite it returns None at once when nothing is in flight (the master then
        reports that the run can never finish); a wall-clock backend never blocks forever."""

    @abstractmethod
    def abandon(self, jobs: Iterable[Job]) -> None:
        """Tell these jobs' workers to stop; each worker is free for its next job at once."""

    @abstractmethod
    def down(self, worker: int) -> bool:
        """Crashed and not back yet (or a crash is pending on its queue), or dead."""

    @property
    @abstractmethod
    def dead(self) -> set[int]:
        """Workers crashed for good."""

    @abstractmethod
    def running(self, job_ids: Iterable[int]) -> list[Job]:
        """The jobs with one of these ids that can still deliver a result."""

    def in_flight(self, job_ids: Iterable[int]) -> bool:
        """Whether a job with one of these ids can still deliver a result."""
        return bool(self.running(job_ids))

    @abstractmethod
    def pending(self) -> bool:
        """Whether any event can still come: a job in flight, a failure or restart not yet reported."""

    def restarting(self, workers: Iterable[int]) -> set[int]:
        """Those of these workers that are being restarted although no job of theirs failed (a real worker
        killed while idle fails no job until it is back); a simulated cluster has none."""
        return set()

    @abstractmethod
    def drain(self, seconds: float) -> list[Event]:
        """The events of work still in flight (late results, reporting timings), for at most ``seconds``."""

    def shutdown(self, interrupted: bool = False) -> None:  # noqa: B027  (a simulated cluster holds no process)
        """Stop every worker; no process is left behind (``leftovers()`` is empty afterwards).

        ``interrupted``: the run was interrupted (Ctrl-C, SIGTERM to its process group): stop the workers
        without waiting to see them gone, since the signal may have taken the backend's own services down too."""

    @abstractmethod
    def leftovers(self) -> list[str]:
        """What still runs behind this cluster, one line each: worker processes, pending events, jobs in
        flight. Empty after ``shutdown()``; the conformance suite checks it."""
