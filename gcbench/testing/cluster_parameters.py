"""The central table of per-backend test parameters for the cluster conformance suite, with known exceptions.

Like scikit-learn's ``_test_common/instance_generator.py``: every registered
cluster needs an entry here (tests/test_cluster_conformance.py fails for one
that has none), and every check it is excused from carries its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ClusterTestParameters:
    """How the suite runs one backend.

    Where the backend lives is its registry entry's (gcbench/cluster/_registry.py), so this table imports
    none. ``unit``: seconds of one modelled compute step (a wall clock needs short, but not too short, jobs).
    ``tolerance``: how far, in seconds, a time it reports may be from the modelled one (virtual time: rounding
    only). ``known_exceptions``: check name -> why this backend is excused from it. ``fixture``: the pytest
    fixture the backend needs running (``local_ray``: a local Ray instance; ``worker_processes``: a check that
    no spawned process outlives it; such checks are slow), or None.
    ``downtime``: the crash checks' downtime, in units; a backend that restarts a process needs one longer
    than its restart takes (a shorter downtime ends when the restart does).
    """

    unit: float = 1.0
    tolerance: float = 1e-9
    known_exceptions: dict[str, str] = field(default_factory=dict)
    fixture: str | None = None
    downtime: float = 2.0


CLUSTER_TEST_PARAMETERS: dict[str, ClusterTestParameters] = {
    # virtual time: every time is the model's, to rounding; the SimPy cluster passes every check
    "simpy": ClusterTestParameters(),
    # wall time, on a local Ray instance (tests/conftest.py's local_ray). Measured on the shared 2-core dev
    # machine, every check's compared times against the model: worst 6.7 ms in three rounds at these
    # parameters, 7.5 ms in nine at units of 0.25 to 0.5 s (the worst: an abandoned worker taking its next
    # job); a tolerance of 50 ms, a fifth of the unit. Ray restarts an actor in 0.6 to 1.0 s (a new
    # process), but beside the rest of the suite on 2 cores a restart took over 4 s (6.1 s once), so its crash
    # checks use a downtime of 8 s. It passes every check.
    "ray": ClusterTestParameters(
        unit=0.25,
        tolerance=0.05,
        fixture="local_ray",
        downtime=32.0,
    ),
    # wall time, worker processes on torch.distributed (gloo on loopback) that the cluster spawns itself
    # (tests/test_cluster_conformance.py's worker_processes fixture checks none outlives a check). A
    # replacement process starts in about 2.5 s on the shared dev machine (it imports torch), so its crash
    # checks use a downtime of 4 s.
    "torch": ClusterTestParameters(
        unit=0.25,
        tolerance=0.05,
        fixture="worker_processes",
        downtime=16.0,
    ),
}


def parameters_for(name: str) -> ClusterTestParameters:
    if name not in CLUSTER_TEST_PARAMETERS:
        raise KeyError(
            f"cluster '{name}' has no entry in gcbench/testing/cluster_parameters.py; add its test parameters there"
        )
    return CLUSTER_TEST_PARAMETERS[name]
