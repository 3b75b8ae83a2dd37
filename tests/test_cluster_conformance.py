"""The cluster conformance suite (gcbench/testing/cluster_checks.py) on every registered cluster."""

from __future__ import annotations

import pytest

from gcbench.cluster import Failure, Job
from gcbench.testing.cluster_checks import cluster_checks, registered_clusters
from gcbench.testing.cluster_parameters import CLUSTER_TEST_PARAMETERS


def cases(fixture: str | None) -> list:
    """The suite's checks on every registered cluster that needs ``fixture`` running (None: nothing)."""
    return [
        pytest.param(name, check, reason, id=f"{name}-{check.__name__}")
        for name in registered_clusters()
        if CLUSTER_TEST_PARAMETERS[name].fixture == fixture
        for check, reason in cluster_checks(name)
    ]


def run_check(name, check, reason):
    if reason is not None:
        pytest.skip(f"{name} is excused from {check.__name__}: {reason}")
    check(name)


@pytest.mark.parametrize(("name", "check", "reason"), cases(None))
def test_every_registered_cluster_passes_the_conformance_suite(name, check, reason):
    run_check(name, check, reason)


@pytest.mark.parametrize(("name", "check", "reason"), cases("local_ray"))
def test_every_ray_cluster_passes_the_conformance_suite_on_a_local_ray_instance(local_ray, name, check, reason):
    """Slow (the local_ray fixture marks it): Ray starts in seconds, and these checks wait in wall time."""
    run_check(name, check, reason)


@pytest.fixture
def worker_processes():
    """For a backend that spawns its own worker processes: none of them outlives the check."""
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    from realhelpers import child_processes

    before = child_processes()
    yield
    left = child_processes() - before
    assert not left, f"worker processes outlived the check: {sorted(left)}"


@pytest.mark.slow
@pytest.mark.parametrize(("name", "check", "reason"), cases("worker_processes"))
def test_every_process_cluster_passes_the_conformance_suite_and_leaves_no_process(
    worker_processes, name, check, reason
):
    """Slow: each check starts its worker processes (each imports torch: seconds on a loaded machine)."""
    run_check(name, check, reason)


def test_every_backend_needs_a_fixture_this_module_provides():
    fixtures = {parameters.fixture for parameters in CLUSTER_TEST_PARAMETERS.values()}
    provided = {None, "local_ray", "worker_processes"}
    assert fixtures <= provided, f"add a test for clusters that need {fixtures - provided}"


def test_every_registered_cluster_has_test_parameters():
    assert set(registered_clusters()) <= set(CLUSTER_TEST_PARAMETERS)
    assert {"simpy", "ray", "torch"} <= set(registered_clusters())


def test_every_known_exception_gives_its_reason():
    for name, parameters in CLUSTER_TEST_PARAMETERS.items():
        for check, reason in parameters.known_exceptions.items():
            assert reason.strip(), f"{name} is excused from {check} without a reason"


class Lingering:
    """A cluster that forgets to stop: the shutdown check must see what it leaves."""

    def __init__(self, cluster):
        self.cluster = cluster

    def __getattr__(self, attribute):
        return getattr(self.cluster, attribute)

    def shutdown(self):
        pass


def test_the_shutdown_check_fails_for_a_cluster_that_leaves_work_behind(monkeypatch):
    from gcbench.testing import cluster_checks as checks

    build = checks.build_cluster
    monkeypatch.setattr(checks, "build_cluster", lambda name, **fields: Lingering(build(name, **fields)))
    with pytest.raises(AssertionError, match="left behind after shutdown"):
        checks.check_shutdown_leaves_nothing_running("simpy")


def test_the_dead_worker_check_fails_for_a_job_that_claims_to_run_on_a_dead_worker(monkeypatch):
    from gcbench.testing import cluster_checks as checks

    build = checks.build_cluster

    def claiming(name, **fields):
        cluster = build(name, **fields)
        cluster.in_flight = lambda job_ids: True
        return cluster

    monkeypatch.setattr(checks, "build_cluster", claiming)
    with pytest.raises(AssertionError, match="dead worker claims"):
        checks.check_dead_worker_stays_dead("simpy")


def test_the_simpy_cluster_runs_no_job_sent_to_a_dead_worker_and_shuts_down_clean():
    """What the suite found in the SimPy cluster: such a job sat in flight forever (an event at infinity),
    and shutdown left every scheduled event behind."""
    from gcbench.testing.cluster_checks import build_cluster, crashes

    cluster = build_cluster("simpy", **crashes(None))
    cluster.submit(0, 0, 0, True)
    assert type(cluster.next_event(1.0)) is Failure
    job = cluster.submit(0, 1, 1, False)
    assert isinstance(job, Job) and cluster.running((1,)) == [] and cluster.leftovers() == []
    cluster.submit(1, 2, 2, False)
    assert cluster.leftovers()
    cluster.shutdown()
    assert cluster.leftovers() == [] and cluster.next_event(float("inf")) is None
