"""Aggregation policies: when the master stops waiting, shared by the simulator and real mode.

Each policy registers itself (``register_policy``); registration order is the
order `gcbench policies` lists them and the YAML union tries them.
"""

from gcbench.policies._base import AggregationPolicy, PolicyOutcome, SynchronousPolicy
from gcbench.policies._registry import POLICIES, available_policies, register_policy
from gcbench.policies.synchronous import Deadline, Decodable, FastestK, RelativeDeadline, WaitAll

# isort: split
# synchronous policies register first; the union is built once all are registered
from gcbench.policies.asynchronous import Async, KAsync, KBatchAsync

# isort: split
# the DDP baseline last: no master runs it (real mode trains it with DistributedDataParallel)
from gcbench.policies.allreduce import AllReduce

# isort: split
from gcbench.policies.union import Policy

__all__ = [
    "POLICIES",
    "AggregationPolicy",
    "AllReduce",
    "Async",
    "Deadline",
    "Decodable",
    "FastestK",
    "KAsync",
    "KBatchAsync",
    "Policy",
    "PolicyOutcome",
    "RelativeDeadline",
    "SynchronousPolicy",
    "WaitAll",
    "available_policies",
    "register_policy",
]
