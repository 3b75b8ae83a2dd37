"""Crash failures: a crashed worker sends nothing until it recovers (or never).

A worker alive at the start of an iteration crashes during it with
``probability`` (per iteration) or, with ``rate``, at an exponential time (per
second of computing); it is down for ``downtime`` seconds from the iteration's
start, or for good when ``downtime`` is null. At ``level: node`` a node crashes,
and every worker on it with it. ``schedule`` adds crashes at known moments (a worker
or a node, an iteration, a downtime each), for experiments and tests that need one.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from gcbench.models._config import Config, Seconds
from gcbench.models._registry import Registry

FAILURES = Registry("failure model", "model")


@FAILURES.register
class NoFailures(Config):
    """No worker crashes."""

    model: Literal["none"] = "none"

    def crashes(self, rng: np.random.Generator, busy: np.ndarray) -> np.ndarray:
        return np.zeros(busy.shape, dtype=bool)


class ScheduledFailure(Config):
    """A crash at a known moment: worker ``worker``, or every worker of node ``node``, crashes in iteration
    ``iteration`` (as its job of that iteration starts) and is down for ``downtime`` seconds (null: for good)."""

    worker: Annotated[int, Field(ge=0)] | None = None
    node: Annotated[int, Field(ge=0)] | None = None
    iteration: Annotated[int, Field(ge=0)]
    downtime: Seconds | None

    @model_validator(mode="after")
    def _one_of_worker_and_node(self) -> ScheduledFailure:
        if (self.worker is None) == (self.node is None):
            raise ValueError("give exactly one of worker and node")
        return self


@FAILURES.register
class CrashFailures(Config):
    """A worker crashes in an iteration with ``probability``, or at ``rate`` per second; down for ``downtime``.
    ``schedule``: crashes at known moments besides the drawn ones (each with its own downtime)."""

    model: Literal["crash"]
    probability: Annotated[float, Field(ge=0, le=1)] | None = None
    rate: Annotated[float, Field(ge=0)] | None = None
    downtime: Seconds | None = None
    schedule: list[ScheduledFailure] = []
    # what crashes: each worker on its own, or each node of the topology, taking every worker on it down together
    # (a node's draw; with ``rate``, the node computes for as long as its busiest worker)
    level: Literal["worker", "node"] = "worker"

    @model_validator(mode="before")
    @classmethod
    def _scheduled_alone(cls, data):
        """A schedule without a drawn model: no drawn crash (probability 0)."""
        if isinstance(data, dict) and data.get("schedule") and "probability" not in data and "rate" not in data:
            return {**data, "probability": 0.0}
        return data

    @model_validator(mode="after")
    def _one_of_probability_and_rate(self) -> CrashFailures:
        if (self.probability is None) == (self.rate is None):
            raise ValueError("give exactly one of probability (per iteration) and rate (per second)")
        return self

    def crashes(self, rng: np.random.Generator, busy: np.ndarray) -> np.ndarray:
        """Which workers crash this iteration, given how long each would be busy."""
        u = rng.random(busy.shape)
        if self.probability is not None:
            return u < self.probability
        return u < -np.expm1(-self.rate * busy)


Failures = FAILURES.union()
