"""The master's stop rule replayed on recorded arrival times: when each iteration would have ended had its results
arrived as recorded (or as a what-if changed them). Calibrate's replay (gcbench/twin/evaluate.py) and attribution's
what-if (gcbench/twin/attribution.py) both step it here, so both follow the rule the simulator's engines and the
real master follow."""

from __future__ import annotations

import numpy as np

from gcbench.coding import Scheme
from gcbench.master.sequential import RoundCode
from gcbench.policies import SynchronousPolicy, WaitAll


def stop_rule(policy) -> SynchronousPolicy | None:
    """The rule that ended each iteration: the policy's, all-reduce's (every rank waits for every other), or None
    for an asynchronous policy, whose updates a replay of recorded times cannot redo."""
    if isinstance(policy, SynchronousPolicy):
        return policy
    if policy.synchronous and not policy.needs_master:
        return WaitAll()
    return None


def message_arrivals(worker_arrivals: np.ndarray, scheme: Scheme) -> np.ndarray:
    """Each message's arrival where only its worker's is known (rows: iterations; columns: the scheme's messages):
    a worker's messages arrive with it."""
    return worker_arrivals[:, scheme.message_owner]


def replayed_stops(rule: SynchronousPolicy, scheme: Scheme, arrivals: np.ndarray) -> np.ndarray:
    """The rule's stop time of each iteration, from the message arrival times of consecutive iterations (rows;
    inf: never arrived). A sequential scheme's rounds are stepped one after another, each round's late results
    lost, since a round's end depends on the rounds before it."""
    if scheme.sequential:
        return RoundCode(scheme, len(arrivals)).stop_times(rule, arrivals)
    return rule.stop_times(arrivals, scheme).stop
