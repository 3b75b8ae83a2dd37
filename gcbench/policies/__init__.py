"""Aggregation policies: when the master stops waiting, shared by the simulator and real mode."""

from gcbench.policies._base import PolicyOutcome, SynchronousPolicy
from gcbench.policies.asynchronous import Async, KAsync, KBatchAsync
from gcbench.policies.synchronous import Deadline, Decodable, FastestK, WaitAll
from gcbench.policies.union import Policy

__all__ = [
    "Async",
    "Deadline",
    "Decodable",
    "FastestK",
    "KAsync",
    "KBatchAsync",
    "Policy",
    "PolicyOutcome",
    "SynchronousPolicy",
    "WaitAll",
]
