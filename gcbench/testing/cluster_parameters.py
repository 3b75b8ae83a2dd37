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

    ``module``: the module whose import registers the backend (imported lazily, so this table pulls in no
    engine). ``unit``: seconds of one modelled compute step (a wall clock needs short, but not too short, jobs).
    ``tolerance``: how far, in seconds, a time it reports may be from the modelled one (virtual time: rounding
    only). ``known_exceptions``: check name -> why this backend is excused from it.
    """

    module: str
    unit: float = 1.0
    tolerance: float = 1e-9
    known_exceptions: dict[str, str] = field(default_factory=dict)


CLUSTER_TEST_PARAMETERS: dict[str, ClusterTestParameters] = {
    # virtual time: every time is the model's, to rounding; the SimPy cluster passes every check
    "simpy": ClusterTestParameters(module="gcbench.sim.cluster"),
}


def parameters_for(name: str) -> ClusterTestParameters:
    if name not in CLUSTER_TEST_PARAMETERS:
        raise KeyError(
            f"cluster '{name}' has no entry in gcbench/testing/cluster_parameters.py; add its test parameters there"
        )
    return CLUSTER_TEST_PARAMETERS[name]
