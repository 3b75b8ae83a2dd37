"""The cluster protocol: what the one master needs from any set of workers, in virtual or wall time.

Modelled on the Ray ``WorkerCluster`` (gcbench/real/cluster.py): the master
starts the workers with their data, publishes the model, submits jobs, and
takes events (a result, a failure, a restart) one at a time before a given
time. Only the clock differs between backends: the SimPy cluster's ``now`` is
virtual and ``next_event`` advances it; a real cluster's ``now`` is the wall clock.
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
    job: int
    row: int
    sent: float
    crash: bool


@dataclass(slots=True)
class Result:
    """A job's result reached the master at ``at``; ``messages`` hold its vectors where the cluster computes them."""

    job: Job
    at: float
    compute_start: float
    compute_end: float
    messages: Any = None
    abandoned: bool = False

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


class Cluster(ABC):
    """n workers behind one clock. A job submitted to a busy worker queues behind its current one."""

    n: int

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

    @abstractmethod
    def submit(self, worker: int, job: int, row: int, crash: bool) -> Job:
        """Start a job on ``worker``: draw row ``row``; ``crash``: the failure model crashes it as it starts."""

    @abstractmethod
    def next_event(self, until: float) -> Event | None:
        """The next event at or before time ``until``; None (the clock at ``until``) when there is none.

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
    def drain(self, seconds: float) -> list[Event]:
        """The events of work still in flight (late results, reporting timings), for at most ``seconds``."""

    def shutdown(self) -> None:  # noqa: B027  (a simulated cluster holds no process)
        """Stop every worker; no process is left behind (``leftovers()`` is empty afterwards)."""

    @abstractmethod
    def leftovers(self) -> list[str]:
        """What still runs behind this cluster, one line each: worker processes, pending events, jobs in
        flight. Empty after ``shutdown()``; the conformance suite checks it."""


_CLUSTERS: dict[str, type[Cluster]] = {}


def register_cluster(name: str):
    """Class decorator: make a cluster backend available by name (``simpy``, ``ray``...)."""

    def register(cls: type[Cluster]) -> type[Cluster]:
        _CLUSTERS[name] = cls
        cls.name = name
        return cls

    return register


def cluster_class(name: str) -> type[Cluster]:
    if name not in _CLUSTERS:
        raise KeyError(f"unknown cluster '{name}'; registered: {', '.join(sorted(_CLUSTERS))}")
    return _CLUSTERS[name]


def available_clusters() -> list[str]:
    return sorted(_CLUSTERS)
