"""Checks every registered cluster must pass, written only against the protocol (gcbench/cluster/_base.py).

Each check builds its cluster with ``build_cluster`` (the backend's
``from_scenario`` on a small scenario whose every job computes for exactly
``unit`` seconds) and raises AssertionError with the evidence. Times are
compared within the backend's ``tolerance`` (gcbench/testing/cluster_parameters.py).
Like scikit-learn's estimator checks, ``cluster_checks`` lists them all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from gcbench.cluster import Cluster, Failure, Restart, Result, available_clusters, cluster_class
from gcbench.coding import Scheme
from gcbench.master import SynchronousMaster
from gcbench.master.outcome import SimulationStuck, name_workers
from gcbench.results.recorder import RunRecorder
from gcbench.scenario.build import scheme_for
from gcbench.scenario.schema import Scenario
from gcbench.testing.cluster_parameters import parameters_for
from gcbench.testing.multi_message import PerPartitionMessages

WORKERS = 4
LATENCY = 0.25  # in units: every result reaches the master this long after its compute ends
HORIZON = 10.0  # in units: far past every modelled event of a check


def registered_clusters() -> list[str]:
    """Every cluster the registry lists (none imported until a check builds it)."""
    return available_clusters()


def conformance_scenario(unit: float, **fields: Any) -> Scenario:
    """WORKERS workers whose every job computes for ``unit`` seconds, then travels ``LATENCY`` units."""
    data = {
        "name": "cluster-conformance",
        "workers": WORKERS,
        "iterations": 4,
        "compute": {"per_partition": {"distribution": "deterministic", "value": unit}},
        "network": {"latency": LATENCY * unit},
        "variants": [{"scheme": "uncoded", "policy": "wait_all"}],
    }
    return Scenario.model_validate({**data, **fields})


def build_cluster(name: str, scheme: Scheme | None = None, **fields: Any) -> Cluster:
    """The backend's workers for the conformance scenario (``scheme``: instead of the scenario's), started
    (without data: no job trains)."""
    scenario = conformance_scenario(parameters_for(name).unit, **fields)
    scheme = scheme_for(scenario, scenario.variants[0]) if scheme is None else scheme
    cluster = cluster_class(name).from_scenario(scenario, scheme, seed=0)
    cluster.start()
    return cluster


@contextmanager
def started(name: str, scheme: Scheme | None = None, **fields: Any) -> Iterator[Cluster]:
    """A started cluster that is shut down however the check ends (a real backend's processes must not outlive
    a failed check)."""
    cluster = build_cluster(name, scheme=scheme, **fields)
    try:
        yield cluster
    finally:
        cluster.shutdown()


def crashes(downtime: float | None) -> dict[str, Any]:
    return {"failures": {"model": "crash", "probability": 0.5, "downtime": downtime}}


def close(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance + 1e-12 * max(abs(a), abs(b))


def results_until(cluster: Cluster, until: float) -> list[Result]:
    events = []
    while (event := cluster.next_event(until)) is not None:
        events.append(event)
    assert all(type(event) is Result for event in events), f"only results were expected, got {events}"
    return events


def check_results_delivered_with_timings(name: str) -> None:
    """Each job's result comes once, computing for its modelled time; a job on a busy worker queues behind."""
    unit, tol = parameters_for(name).unit, parameters_for(name).tolerance
    with started(name) as cluster:
        start = cluster.now
        jobs = [cluster.submit(w, w, 0, False) for w in range(WORKERS)] + [cluster.submit(0, WORKERS, 1, False)]
        results = results_until(cluster, start + HORIZON * unit)
        by_job = {result.job.id: result for result in results}
        assert sorted(by_job) == [job.id for job in jobs] and len(results) == len(jobs), f"results {results}"
        for result in results:
            assert result.job.sent <= result.compute_start <= result.compute_end <= result.at, f"order: {result}"
            assert close(result.compute_end - result.compute_start, unit, tol), f"compute time: {result}"
            assert close(result.at - result.compute_end, LATENCY * unit, tol), f"latency: {result}"
            assert not result.abandoned, f"a job nobody abandoned reported as abandoned: {result}"
        queued, first = by_job[WORKERS], by_job[0]
        assert close(queued.compute_start, first.compute_end, tol), f"queued job {queued} did not follow {first}"


def check_each_message_sent_when_ready(name: str) -> None:
    """A worker with several messages sends each once the partitions it uses are computed (its job's time split
    evenly among its partitions), each its own result with its own latency; the last one ends the job."""
    unit, tol = parameters_for(name).unit, parameters_for(name).tolerance
    scheme = PerPartitionMessages(n=WORKERS, s=2)  # three partitions a worker, a message after each
    with started(name, scheme) as cluster:
        start = cluster.now
        job = cluster.submit(1, 0, 0, False)
        results = results_until(cluster, start + HORIZON * unit)
        assert [r.message for r in results] == [0, 1, 2], f"one result per message, in order: {results}"
        assert [r.final for r in results] == [False, False, True], f"only the last message ends the job: {results}"
        for i, result in enumerate(results):
            assert result.job is job and not result.abandoned, f"message {i}: {result}"
            assert close(result.compute_end - result.compute_start, (i + 1) * unit, tol), f"ready at: {result}"
            assert close(result.at - result.compute_end, LATENCY * unit, tol), f"latency: {result}"
        assert not cluster.in_flight((0,)), "the job is still in flight after its last message"


def check_master_decodes_from_first_messages(name: str) -> None:
    """The master on this cluster uses messages as they arrive: each worker's first message carries a partition
    no other first message does, so every iteration decodes after one unit, half way through every job."""
    unit, tol = parameters_for(name).unit, parameters_for(name).tolerance
    scheme = PerPartitionMessages(n=WORKERS, s=1)
    with started(name, scheme) as cluster:
        scenario = conformance_scenario(unit, variants=[{"scheme": "uncoded", "policy": "decodable"}])
        rec = RunRecorder(scenario.iterations, WORKERS)
        crash = np.zeros((scenario.iterations, WORKERS), dtype=bool)
        SynchronousMaster(cluster, scheme, scenario.variants[0], crash, "abandon", rec).run()
        # (a wall clock on a loaded machine runs late, never early: from the first messages' time up to, not
        # including, the whole jobs', which a master waiting for whole jobs could not come in under)
        first, whole = (1 + LATENCY) * unit, (2 + LATENCY) * unit
        assert all(first - tol <= d < whole for d in rec.duration), f"durations {rec.duration}, not {first}"
        assert rec.iteration_columns()["messages_used"].tolist() == [WORKERS] * scenario.iterations


def check_abandon_honoured(name: str) -> None:
    """Abandoned jobs deliver no result the master would use, and their worker takes its next job at once."""
    unit, tol = parameters_for(name).unit, parameters_for(name).tolerance
    with started(name) as cluster:
        start = cluster.now
        running, queued = cluster.submit(0, 0, 0, False), cluster.submit(0, 1, 1, False)
        assert cluster.next_event(start + 0.5 * unit) is None, "nothing should arrive before the first job ends"
        abandoned_at = cluster.now
        cluster.abandon([running, queued])
        cluster.submit(0, 2, 2, False)
        results = results_until(cluster, abandoned_at + HORIZON * unit)
        used = [result.job.id for result in results if not result.abandoned]
        assert used == [2], f"only the job after the abandon may report unabandoned; got {results}"
        after = next(result for result in results if result.job.id == 2)
        assert close(after.compute_start, abandoned_at, tol), f"the worker was not free at once: {after}"
        assert not cluster.in_flight((0, 1, 2)), "abandoned jobs still in flight after their results"


def check_crash_fails_then_restarts_after_downtime(name: str) -> None:
    """A crash is a Failure at once and a Restart after the downtime; work sent meanwhile starts at the restart."""
    unit, tol = parameters_for(name).unit, parameters_for(name).tolerance
    downtime = parameters_for(name).downtime * unit
    with started(name, **crashes(downtime)) as cluster:
        start = cluster.now
        horizon = start + downtime + HORIZON * unit
        crashed = cluster.submit(1, 0, 0, True)
        assert cluster.down(1) and 1 not in cluster.dead, "a worker with downtime is down, not dead"
        assert not cluster.in_flight((0,)), "a crashed job can deliver no result"
        waiting = cluster.submit(1, 1, 1, False)
        failure, restart = cluster.next_event(horizon), cluster.next_event(horizon)
        assert type(failure) is Failure and failure.worker == 1 and failure.job is crashed, f"not a failure: {failure}"
        assert close(failure.at, start, tol), f"the failure came at {failure.at}, not at once ({start})"
        assert type(restart) is Restart and restart.worker == 1, f"no restart after the failure: {restart}"
        assert close(restart.at, start + downtime, tol), f"restart at {restart.at}, not after the downtime"
        assert not cluster.down(1), "a restarted worker is still down"
        (result,) = results_until(cluster, horizon)
        assert result.job is waiting and close(result.compute_start, restart.at, tol), f"queued job: {result}"


def check_dead_worker_stays_dead(name: str) -> None:
    """A crash without downtime is a Failure and no Restart, ever; a job sent to the dead worker never runs."""
    unit = parameters_for(name).unit
    with started(name, **crashes(None)) as cluster:
        start = cluster.now
        cluster.submit(2, 0, 0, True)
        failure = cluster.next_event(start + HORIZON * unit)
        assert type(failure) is Failure and failure.worker == 2, f"no failure: {failure}"
        cluster.submit(2, 1, 1, False)
        assert not cluster.in_flight((1,)), "a job sent to a dead worker claims it can still deliver"
        later = cluster.next_event(start + HORIZON * unit)
        assert later is None, f"a worker dead for good sent {later}"
        assert 2 in cluster.dead and cluster.down(2), "the dead worker came back"


def check_drain_returns_late_work(name: str) -> None:
    """``drain`` gives the results still in flight, within its time, and leaves nothing in flight after."""
    unit = parameters_for(name).unit
    with started(name) as cluster:
        start = cluster.now
        for worker, job in ((0, 0), (0, 1), (1, 2)):
            cluster.submit(worker, job, job, False)
        first = cluster.next_event(start + HORIZON * unit)
        assert type(first) is Result, f"no first result: {first}"
        # job 0 and job 2 arrive at once, job 1 one unit later: three quarters of a unit leaves a wall clock
        # room for a stall (a loaded machine once delivered job 2 0.07 s after job 0, the first 0.13 s late)
        soon = cluster.drain(0.75 * unit)
        late = cluster.drain(HORIZON * unit)
        taken = [first.job.id] + [event.job.id for event in soon]
        assert sorted(taken) == [0, 2] and [event.job.id for event in late] == [1], f"drained {soon}, then {late}"
        assert not cluster.in_flight((0, 1, 2)), "work still in flight after draining it"


def check_shutdown_leaves_nothing_running(name: str) -> None:
    """Shut down with jobs, a message and a restart in flight: no process, event or job is left behind."""
    unit = parameters_for(name).unit
    with started(name, **crashes(parameters_for(name).downtime * unit)) as cluster:
        for worker, job, crash in ((0, 0, False), (0, 1, False), (1, 2, True)):
            cluster.submit(worker, job, job, crash)
        assert cluster.leftovers(), "leftovers() sees nothing while jobs are in flight"
        cluster.shutdown()
        left = cluster.leftovers()  # (read once: a process that ends meanwhile would make a second read empty)
        assert left == [], f"left behind after shutdown: {left}"
        assert cluster.next_event(cluster.now + HORIZON * unit) is None, "an event came after shutdown"


def check_unsatisfiable_wait_ends_at_its_timeout(name: str) -> None:
    """A wait for what cannot come ends at ``until`` (None, clock there); a master that would wait forever
    raises its one-sentence "can never finish" error instead of hanging."""
    unit, tol = parameters_for(name).unit, parameters_for(name).tolerance
    with started(name, **crashes(None)) as cluster:
        cluster.submit(3, 0, 0, True)
        assert type(cluster.next_event(cluster.now + unit)) is Failure, "no failure for a crash"
        cluster.submit(3, 1, 1, False)
        until = cluster.now + 3.0 * unit
        assert cluster.next_event(until) is None, "an event came for a job on a dead worker"
        assert close(cluster.now, until, tol) or cluster.now > until, f"the wait ended at {cluster.now}, before {until}"
        assert cluster.now - until <= unit, f"the wait overran its timeout: {cluster.now} for {until}"
        assert cluster.next_event(float("inf")) is None, "an endless wait with nothing in flight did not return"
        cluster.shutdown()
        _check_master_refuses_a_run_that_can_never_finish(name)


def _check_master_refuses_a_run_that_can_never_finish(name: str) -> None:
    with started(name, **crashes(None)) as cluster:
        scenario = conformance_scenario(parameters_for(name).unit, **crashes(None))
        variant = scenario.variants[0]
        rec = RunRecorder(scenario.iterations, WORKERS)
        crash = np.ones((scenario.iterations, WORKERS), dtype=bool)  # every worker dies in the first iteration
        master = SynchronousMaster(cluster, scheme_for(scenario, variant), variant, crash, "abandon", rec)
        try:
            master.run()
        except SimulationStuck as error:
            everyone = name_workers(list(range(WORKERS)))
            who = f"({WORKERS} of {WORKERS} workers crashed for good ({everyone}), 0 answered;"
            assert "iteration 0 can never finish " + who in str(error), f"unclear error: {error}"
        else:
            raise AssertionError("the master finished a run in which every worker died")
        finally:
            cluster.shutdown()


CHECKS: tuple[Callable[[str], None], ...] = (
    check_results_delivered_with_timings,
    check_each_message_sent_when_ready,
    check_master_decodes_from_first_messages,
    check_abandon_honoured,
    check_crash_fails_then_restarts_after_downtime,
    check_dead_worker_stays_dead,
    check_drain_returns_late_work,
    check_shutdown_leaves_nothing_running,
    check_unsatisfiable_wait_ends_at_its_timeout,
)


def cluster_checks(name: str) -> list[tuple[Callable[[str], None], str | None]]:
    """Every check for cluster ``name``, each with the reason it is excused from it (None: it must pass)."""
    excused = parameters_for(name).known_exceptions
    unknown = set(excused) - {check.__name__ for check in CHECKS}
    assert not unknown, f"cluster '{name}' is excused from checks that do not exist: {sorted(unknown)}"
    return [(check, excused.get(check.__name__)) for check in CHECKS]
