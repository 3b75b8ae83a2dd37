"""The Ray cluster waits for replies in short slices: ray.wait runs no Python signal handler until it returns.

Measured: a driver blocked in ray.wait(timeout=30) handled a SIGTERM only when the 30 s were up; sent to the
process group, the SIGTERM stopped the raylet meanwhile and Ray's core worker ended the driver with status 1,
before it could say how to resume (tests/test_real_resume.py's sigterm-to-the-group case, flaky under load).
"""

from __future__ import annotations

from gcbench.cluster import Job
from gcbench.real.ray.cluster import SIGNAL_SLICE, RayCluster


class WaitRecorder:
    """Stands in for the ray module: records each wait's timeout; nothing is ever ready."""

    def __init__(self) -> None:
        self.timeouts: list[float] = []

    def wait(self, refs, num_returns, timeout):
        self.timeouts.append(timeout)
        return [], list(refs)


def cluster_waiting_for_one_job() -> tuple[RayCluster, WaitRecorder]:
    cluster = RayCluster.__new__(RayCluster)  # (no Ray here: only the waiting is under test)
    cluster.ray = recorder = WaitRecorder()
    cluster.jobs, cluster.pings = {"ref": Job(0, 0, 0, 0.0, False)}, {}
    cluster.raylets = []  # (no crashed node's raylet starting)
    return cluster, recorder


def test_a_long_wait_for_replies_returns_to_python_within_a_slice():
    cluster, recorder = cluster_waiting_for_one_job()
    cluster._take(30.0)
    assert recorder.timeouts == [SIGNAL_SLICE] and SIGNAL_SLICE <= 0.1


def test_a_wait_shorter_than_a_slice_is_not_lengthened():
    cluster, recorder = cluster_waiting_for_one_job()
    cluster._take(0.01)
    assert recorder.timeouts == [0.01]
